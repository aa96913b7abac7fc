"""The ACL check of one request, in Java's order (``PlainPermissionManager.validate`` 4.9.7).

1. the client address matches a global white pattern → allowed;
2. no ``AccessKey`` field → ``No accessKey is configured``;
3. unknown key → ``No acl config for <key>``;
4. the account's ``whiteRemoteAddress`` matches → allowed (no signature check);
5. signature mismatch → ``Check signature failed for accessKey=<key>``;
6. a PUB of ``RMQ_SYS_TRACE_TOPIC`` (message trace) → allowed;
7. an admin-only code from a non-admin → ``Need admin permission for request code=<c>, but accessKey=<k> is not``;
8. each needed resource → ``No default permission for topic:<t>`` / ``group:<g>``.

Java answers a refusal with code 1 (SYSTEM_ERROR) and the exception's text plus its first stack frame as the
remark; ``remark`` builds the same text (line numbers of 4.9.7), so tools that match on it behave alike.
The resources are read before the checks, as Java parses before it validates: an unreadable heartbeat body
is refused even from a whitelisted address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from rocketq.acl import permission, signature
from rocketq.acl.config import AclRules
from rocketq.acl.errors import AclDenied
from rocketq.acl.resources import needed
from rocketq.common.hashing import unsigned_hash

TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
_MANAGER = "org.apache.rocketmq.acl.plain.PlainPermissionManager"
_VALIDATE = f"{_MANAGER}.validate(PlainPermissionManager.java:%d)"
_CHECK_PERM = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:%d)"


def remark(denied: AclDenied) -> str:
    """The remark a Java broker answers a refused request with."""
    return f"{_EXCEPTION}: {denied.message}, {denied.frame}"


def client_ip(remote: str) -> str:
    """The address patterns are matched against: the remote address without its port (Java drops everything
    from the last ``:``), brackets of an IPv6 literal removed."""
    host = remote.rpartition(":")[0] if ":" in remote else remote
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def java_hashmap_order(table: dict[str, int]) -> dict[str, int]:
    """``table`` in the order a Java ``HashMap`` filled in the same order iterates it (bucket by bucket,
    insertion order within one): the first resource refused is the one Java names."""
    if len(table) < 2:
        return table
    capacity = 16
    while len(table) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = unsigned_hash(key)[0]
        return (h ^ (h >> 16)) & (capacity - 1)

    return dict(sorted(table.items(), key=lambda kv: bucket(kv[0])))  # sorted() is stable


def peer_ip(host: str) -> str:
    """A socket's peer host as Java sees it: an IPv4-mapped IPv6 address (a dual-stack listener) is IPv4."""
    if host.startswith("::ffff:") or host.startswith("::FFFF:"):
        try:
            mapped = ipaddress.IPv6Address(host).ipv4_mapped
        except ValueError:
            return host
        if mapped is not None:
            return str(mapped)
    return host


def check(
    rules: AclRules,
    ip: str,
    code: int,
    ext: Mapping[str, str],
    body: bytes | bytearray | memoryview | None,
    *,
    admin_codes: frozenset[int] = permission.ADMIN_CODES,
    strict_resources: bool = False,
) -> None:
    """Raise ``AclDenied`` unless ``rules`` allow this request from ``ip`` (``admin_codes``: the codes only an
    admin account may send, Java's five by default; ``strict_resources``: see ``resources.needed``)."""
    resources = needed(code, ext, body, strict=strict_resources)
    if rules.white_listed(ip):
        return
    key = ext.get(signature.ACCESS_KEY)
    if key is None:
        raise AclDenied("No accessKey is configured", _VALIDATE % 663)
    account = rules.accounts.get(key)
    if account is None:
        raise AclDenied(f"No acl config for {key}", _VALIDATE % 667)
    if rules.white_listed(ip, account):
        return
    if not signature.verify(ext, body, account.secret_key):
        raise AclDenied(f"Check signature failed for accessKey={key}", _VALIDATE % 683)
    if resources.get(TRACE_TOPIC) == permission.PUB:
        return
    if code in admin_codes and not account.admin:
        raise AclDenied(f"Need admin permission for request code={code}, but accessKey={key} is not", _CHECK_PERM % 580)
    owned = account.perms
    if not resources or (owned is None and account.admin):
        return
    for resource, need in java_hashmap_order(resources).items():
        is_group = resource.startswith(permission.RETRY_PREFIX)
        if owned is not None and resource in owned:
            have, line = owned[resource], 610
        else:
            have, line = (account.default_group_perm if is_group else account.default_topic_perm), 605
        if not permission.check(need, have):
            what = f"group:{resource[len(permission.RETRY_PREFIX) :]}" if is_group else f"topic:{resource}"
            raise AclDenied(f"No default permission for {what}", _CHECK_PERM % line)
