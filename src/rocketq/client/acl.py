"""The ACL admin requests of a 4.9 broker (codes 50–54), as Java's ``MQClientAPIImpl`` sends them.

* UPDATE_AND_CREATE_ACL_CONFIG (50): header ``accessKey``, ``secretKey``, ``whiteRemoteAddress``, ``admin``,
  ``defaultTopicPerm``, ``defaultGroupPerm``, ``topicPerms``/``groupPerms`` (``name=PERM`` joined by ``,``);
  the broker updates the fields given on an existing account, or creates it.
* DELETE_ACL_CONFIG (51): header ``accessKey``.
* GET_BROKER_CLUSTER_ACL_INFO (52): no header; the answer's header holds ``version`` (a DataVersion as JSON),
  ``allAclFileVersion`` (file → DataVersion, JSON), ``brokerName``, ``brokerAddr``, ``clusterName``.
* UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): header ``globalWhiteAddrs`` (joined by ``,``) and, when given,
  ``aclFileFullPath`` (the file to write; the broker's default file otherwise).
* GET_BROKER_CLUSTER_ACL_CONFIG (54): no header; body ``{"globalWhiteAddrs": [...], "plainAccessConfigs":
  [PlainAccessConfig...]}``.

Java's broker lets any account with a valid signature call these (they are not in its admin-code set).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rocketq.errors import ProtocolError
from rocketq.protocol import fastjson

__all__ = ["PERMS", "AclAccount", "AclConfig", "AclVersionInfo", "DataVersion"]

#: the permission words a plain_acl.yml account understands
PERMS = ("DENY", "PUB", "SUB", "PUB|SUB", "SUB|PUB")


@dataclass(slots=True)
class AclAccount:
    """One account (Java ``PlainAccessConfig``). ``None`` leaves a field out of an update request."""

    access_key: str
    secret_key: str | None = field(default=None, repr=False)
    white_remote_address: str | None = None
    admin: bool | None = None
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None

    def update_header(self) -> dict[str, str]:
        """The extFields of UPDATE_AND_CREATE_ACL_CONFIG for this account (absent fields stay absent)."""
        ext = {"accessKey": self.access_key}
        if self.secret_key is not None:
            ext["secretKey"] = self.secret_key
        if self.white_remote_address is not None:
            ext["whiteRemoteAddress"] = self.white_remote_address
        # Java's header field is a primitive boolean: always sent, false unless set
        ext["admin"] = "true" if self.admin else "false"
        if self.default_topic_perm is not None:
            ext["defaultTopicPerm"] = self.default_topic_perm
        if self.default_group_perm is not None:
            ext["defaultGroupPerm"] = self.default_group_perm
        if self.topic_perms is not None:
            ext["topicPerms"] = ",".join(self.topic_perms)
        if self.group_perms is not None:
            ext["groupPerms"] = ",".join(self.group_perms)
        return ext

    @classmethod
    def from_json(cls, obj: Any) -> AclAccount:
        o = obj if isinstance(obj, dict) else {}

        def text(key: str) -> str | None:
            v = o.get(key)
            return None if v is None else str(v)

        def names(key: str) -> list[str]:
            v = o.get(key)
            return [str(x) for x in v] if isinstance(v, list) else []

        return cls(
            access_key=str(o.get("accessKey") or ""),
            secret_key=text("secretKey"),
            white_remote_address=text("whiteRemoteAddress"),
            admin=bool(o.get("admin")),
            default_topic_perm=text("defaultTopicPerm"),
            default_group_perm=text("defaultGroupPerm"),
            topic_perms=names("topicPerms"),
            group_perms=names("groupPerms"),
        )

    def to_json(self, *, show_secret: bool = False) -> dict[str, Any]:
        return {
            "accessKey": self.access_key,
            "secretKey": self.secret_key if show_secret else mask(self.secret_key),
            "whiteRemoteAddress": self.white_remote_address or "",
            "admin": bool(self.admin),
            "defaultTopicPerm": self.default_topic_perm or "",
            "defaultGroupPerm": self.default_group_perm or "",
            "topicPerms": list(self.topic_perms or []),
            "groupPerms": list(self.group_perms or []),
        }


def mask(secret: str | None) -> str:
    """A secret as listings show it: set or not, never its text or its length."""
    return "******" if secret else ""


@dataclass(slots=True)
class AclConfig:
    """GET_BROKER_CLUSTER_ACL_CONFIG: the broker's global white list and accounts."""

    global_white_addrs: list[str]
    accounts: list[AclAccount]

    @classmethod
    def decode(cls, body: bytes) -> AclConfig:
        o = fastjson.loads(body) if body else {}
        o = o if isinstance(o, dict) else {}
        whites = o.get("globalWhiteAddrs")
        accounts = o.get("plainAccessConfigs")
        return cls(
            [str(w) for w in whites] if isinstance(whites, list) else [],
            [AclAccount.from_json(a) for a in accounts] if isinstance(accounts, list) else [],
        )


@dataclass(frozen=True, slots=True)
class DataVersion:
    counter: int
    timestamp: int

    @classmethod
    def from_json(cls, obj: Any) -> DataVersion:
        o = obj if isinstance(obj, dict) else {}
        try:
            return cls(int(o.get("counter") or 0), int(o.get("timestamp") or 0))
        except (TypeError, ValueError):
            return cls(0, 0)


@dataclass(slots=True)
class AclVersionInfo:
    """GET_BROKER_CLUSTER_ACL_INFO of one broker (Java ``ClusterAclVersionInfo``)."""

    cluster_name: str
    broker_name: str
    broker_addr: str
    version: DataVersion
    file_versions: dict[str, DataVersion]

    @classmethod
    def from_ext(cls, ext: dict[str, str]) -> AclVersionInfo:
        def parse(text: str | None) -> Any:
            try:
                return fastjson.loads(text) if text else None
            except ProtocolError:
                return None

        files = parse(ext.get("allAclFileVersion"))
        return cls(
            ext.get("clusterName", ""),
            ext.get("brokerName", ""),
            ext.get("brokerAddr", ""),
            DataVersion.from_json(parse(ext.get("version"))),
            {str(k): DataVersion.from_json(v) for k, v in files.items()} if isinstance(files, dict) else {},
        )
