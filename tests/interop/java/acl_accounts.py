"""The accounts the ACL tests share (test_acl.py, test_acl_differential.py): one plain_acl.yml for rocketq and
for the Java 4.9.7 reference broker, and the names it grants."""

from __future__ import annotations

ADMIN = ("aclAdmin01", "admin-secret-01")
USER = ("aclUser001", "user-secret-01")
WHITE = ("aclWhite01", "white-secret-1")  # its whiteRemoteAddress is the tests' own address
TOPIC, OTHER_TOPIC = "AclTopic", "AclOtherTopic"
GROUP, OTHER_GROUP = "AclGroup", "AclOtherGroup"
DRIVER_TOPIC, DRIVER_GROUP = "AclDriverTopic", "AclDriverGroup"  # the driver's "send" scenario, signed

# The user may publish and subscribe AclTopic and consume as AclGroup, nothing else; the admin has no perms
# listed, so it may do everything; the white account has no perms, but connects from its whiteRemoteAddress.
# The global white list names an address no test connects from.
PLAIN_ACL = f"""\
globalWhiteRemoteAddresses:
- 10.10.103.*
accounts:
- accessKey: {ADMIN[0]}
  secretKey: {ADMIN[1]}
  admin: true
- accessKey: {USER[0]}
  secretKey: {USER[1]}
  whiteRemoteAddress:
  admin: false
  defaultTopicPerm: DENY
  defaultGroupPerm: DENY
  topicPerms:
  - {TOPIC}=PUB|SUB
  - {DRIVER_TOPIC}=PUB|SUB
  groupPerms:
  - {GROUP}=SUB
  - {DRIVER_GROUP}=SUB
- accessKey: {WHITE[0]}
  secretKey: {WHITE[1]}
  whiteRemoteAddress: 127.0.0.1
"""

ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException: "
