"""The ACL files: ``plain_acl.yml`` plus every ``*.yml``/``*.yaml`` under the ``acl/`` directory beside it.

Schema (Java 4.9 ``PlainPermissionManager``)::

    globalWhiteRemoteAddresses: [pattern, ...]   # a match skips every check
    accounts:
      - accessKey: RocketMQ          # > 6 characters
        secretKey: 12345678          # > 6 characters
        whiteRemoteAddress: 192.168.0.*   # a match skips signature and permissions
        admin: false
        defaultTopicPerm: DENY       # DENY, PUB, SUB, PUB|SUB or SUB|PUB; missing = DENY
        defaultGroupPerm: SUB
        topicPerms: [topicA=DENY, topicB=PUB|SUB]
        groupPerms: [groupA=DENY]
    dataVersion: [{counter: 1, timestamp: 1700000000000}]

Where Java silently reads a mistake as something else, rocketq refuses the file (security fails closed): an
unknown key, an unknown permission string, a value of the wrong type, an address pattern Java could not
match. Keys shorter than 7 characters fail as in Java. A key defined twice: the first file (``acl/`` files
before ``plain_acl.yml``, each in name order) wins, later ones are logged and ignored.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rocketq.acl import permission
from rocketq.acl.errors import AclConfigError
from rocketq.acl.patterns import AddressPattern, compile_pattern

log = logging.getLogger("rocketq.acl")

TOP_KEYS = ("globalWhiteRemoteAddresses", "accounts", "dataVersion")
ACCOUNT_KEYS = (
    "accessKey", "secretKey", "whiteRemoteAddress", "admin",
    "defaultTopicPerm", "defaultGroupPerm", "topicPerms", "groupPerms",
)  # fmt: skip
MIN_KEY_LENGTH = 7
_WHITE_CACHE_MAX = 4096


@dataclass(frozen=True)
class Account:
    access_key: str
    secret_key: str
    white_remote_address: str | None
    white: AddressPattern
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    #: resource (topic, or ``%RETRY%group``) → permission; None when the account lists none (Java: an admin
    #: with no perms listed may do everything)
    perms: Mapping[str, int] | None
    #: the entry as written in the file (listed by GET_BROKER_CLUSTER_ACL_CONFIG)
    entry: Mapping[str, Any]


@dataclass(frozen=True)
class AclFile:
    path: str
    white_addresses: tuple[str, ...]
    white: tuple[AddressPattern, ...]
    accounts: tuple[Account, ...]
    data_version: tuple[int, int]  # (counter, timestamp)
    document: Mapping[str, Any]


@dataclass(frozen=True)
class AclRules:
    """Every file's rules combined; immutable, swapped whole on reload."""

    files: tuple[AclFile, ...] = ()
    accounts: Mapping[str, Account] = field(default_factory=dict)
    #: access key → the file that defines it
    owners: Mapping[str, str] = field(default_factory=dict)
    white: tuple[AddressPattern, ...] = ()
    _white_cache: dict[tuple[str, str | None], bool] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def combine(cls, files: Sequence[AclFile]) -> AclRules:
        accounts: dict[str, Account] = {}
        owners: dict[str, str] = {}
        white: list[AddressPattern] = []
        for f in files:
            white.extend(f.white)
            for acct in f.accounts:
                if acct.access_key in accounts:
                    log.warning("acl.duplicate_key key=%s file=%s (first defined in %s; ignored)",
                                acct.access_key, f.path, owners[acct.access_key])  # fmt: skip
                    continue
                accounts[acct.access_key] = acct
                owners[acct.access_key] = f.path
        return cls(tuple(files), accounts, owners, tuple(white))

    def white_listed(self, ip: str, account: Account | None = None) -> bool:
        """Whether ``ip`` matches a global white pattern (``account``: that account's ``whiteRemoteAddress``).
        Remembered per address: the rules never change, and clients come from few addresses."""
        key = (ip, None if account is None else account.access_key)
        hit = self._white_cache.get(key)
        if hit is None:
            hit = any(p.matches(ip) for p in self.white) if account is None else account.white.matches(ip)
            if len(self._white_cache) >= _WHITE_CACHE_MAX:
                self._white_cache.clear()
            self._white_cache[key] = hit
        return hit

    def file(self, path: str) -> AclFile | None:
        for f in self.files:
            if f.path == path:
                return f
        return None


# ----------------------------------------------------------------------------------------------- parsing


def _where(path: str, key: str) -> str:
    return f"{path}: {key}"


def _text(value: Any, path: str, key: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise AclConfigError(f"{_where(path, key)}: expected a string, got {value!r}")
    return str(value)


def _perm(value: Any, path: str, key: str) -> int:
    if value is None:
        return permission.DENY  # Java: missing = DENY
    bits = permission.PERM_STRINGS.get(str(value).strip())
    if bits is None:
        raise AclConfigError(f"{_where(path, key)}: {value!r} is not a permission (DENY, PUB, SUB, PUB|SUB or SUB|PUB)")
    return bits


def _resource_perms(value: Any, path: str, key: str, group: bool, out: dict[str, int]) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        raise AclConfigError(f"{_where(path, key)}: expected a list of name=PERM, got {value!r}")
    for i, item in enumerate(value):
        parts = [p for p in str(item).split("=") if p]  # Java StringUtils.split drops empty pieces
        if len(parts) != 2:
            raise AclConfigError(f"{_where(path, f'{key}[{i}]')}: {item!r} is not name=PERM")
        name = parts[0].strip()
        resource = permission.RETRY_PREFIX + name if group else name
        out[resource] = _perm(parts[1], path, f"{key}[{i}]")


def parse_account(entry: Any, path: str, where: str) -> Account:
    if not isinstance(entry, dict):
        raise AclConfigError(f"{_where(path, where)}: expected a mapping, got {entry!r}")
    for key in entry:
        if key not in ACCOUNT_KEYS:
            raise AclConfigError(f"{_where(path, f'{where}.{key}')}: unknown key (known: {', '.join(ACCOUNT_KEYS)})")
    access = _text(entry.get("accessKey"), path, f"{where}.accessKey", optional=True) or ""
    secret = _text(entry.get("secretKey"), path, f"{where}.secretKey", optional=True) or ""
    if len(access) < MIN_KEY_LENGTH or len(secret) < MIN_KEY_LENGTH:
        raise AclConfigError(
            f"{_where(path, where)}: accessKey and secretKey are required and must be at least "
            f"{MIN_KEY_LENGTH} characters (accessKey={access!r})"
        )
    admin = entry.get("admin", False)
    if admin is None:
        admin = False
    if not isinstance(admin, bool):
        raise AclConfigError(f"{_where(path, f'{where}.admin')}: expected true or false, got {admin!r}")
    white_text = _text(entry.get("whiteRemoteAddress"), path, f"{where}.whiteRemoteAddress", optional=True)
    try:
        white = compile_pattern(white_text)
    except AclConfigError as exc:
        raise AclConfigError(f"{_where(path, f'{where}.whiteRemoteAddress')}: {exc}") from None
    perms: dict[str, int] = {}
    _resource_perms(entry.get("groupPerms"), path, f"{where}.groupPerms", True, perms)
    _resource_perms(entry.get("topicPerms"), path, f"{where}.topicPerms", False, perms)
    return Account(
        access_key=access,
        secret_key=secret,
        white_remote_address=white_text,
        white=white,
        admin=admin,
        default_topic_perm=_perm(entry.get("defaultTopicPerm"), path, f"{where}.defaultTopicPerm"),
        default_group_perm=_perm(entry.get("defaultGroupPerm"), path, f"{where}.defaultGroupPerm"),
        perms=perms or None,
        entry=dict(entry),
    )


def parse_document(doc: Any, path: str) -> AclFile:
    """One file's YAML document (None: an empty file) → its rules; ``AclConfigError`` names the key."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise AclConfigError(f"{path}: expected a mapping at the top, got {type(doc).__name__}")
    for key in doc:
        if key not in TOP_KEYS:
            raise AclConfigError(f"{_where(path, str(key))}: unknown key (known: {', '.join(TOP_KEYS)})")
    addrs = doc.get("globalWhiteRemoteAddresses") or []
    if not isinstance(addrs, list):
        raise AclConfigError(f"{_where(path, 'globalWhiteRemoteAddresses')}: expected a list")
    white = []
    for i, a in enumerate(addrs):
        try:
            white.append(compile_pattern(None if a is None else str(a)))
        except AclConfigError as exc:
            raise AclConfigError(f"{_where(path, f'globalWhiteRemoteAddresses[{i}]')}: {exc}") from None
    entries = doc.get("accounts") or []
    if not isinstance(entries, list):
        raise AclConfigError(f"{_where(path, 'accounts')}: expected a list")
    accounts = tuple(parse_account(e, path, f"accounts[{i}]") for i, e in enumerate(entries))
    return AclFile(path, tuple(str(a) for a in addrs), tuple(white), accounts, _data_version(doc, path), doc)


def _data_version(doc: Mapping[str, Any], path: str) -> tuple[int, int]:
    versions = doc.get("dataVersion")
    if not versions:
        return 0, 0
    first = versions[0] if isinstance(versions, list) else None
    try:
        return int(first.get("counter", 0)), int(first.get("timestamp", 0))  # type: ignore[union-attr]
    except (AttributeError, TypeError, ValueError):
        raise AclConfigError(f"{_where(path, 'dataVersion')}: expected [{{counter: N, timestamp: N}}]") from None


# ------------------------------------------------------------------------------------------------- files


def acl_dir_of(default_file: str | os.PathLike[str]) -> Path:
    """The directory of extra ACL files: ``acl/`` beside the main file (Java: ``$ROCKETMQ_HOME/conf/acl``)."""
    return Path(default_file).parent / "acl"


def acl_files(default_file: str | os.PathLike[str]) -> list[str]:
    """The files in the order their accounts are read: ``acl/`` (recursive, by name), then the main file."""
    main = str(Path(default_file))
    out: list[str] = []
    root = acl_dir_of(default_file)
    if root.is_dir():
        out = sorted(str(p) for p in root.rglob("*") if p.suffix in (".yml", ".yaml") and p.is_file())
    if main not in out:
        out.append(main)
    return out


def read_document(path: str) -> Any:
    """A file's YAML document; ``AclConfigError`` for a missing, unreadable or malformed file."""
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError:
        raise AclConfigError(f"{path}: ACL file not found") from None
    except OSError as exc:
        raise AclConfigError(f"{path}: cannot read ACL file: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise AclConfigError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None


def load_file(path: str) -> AclFile:
    return parse_document(read_document(path), path)


def load_rules(default_file: str | os.PathLike[str]) -> AclRules:
    """Read and check every file; the first error aborts (the caller keeps what it had)."""
    return AclRules.combine([load_file(p) for p in acl_files(default_file)])


def write_document(path: str, doc: Mapping[str, Any]) -> None:
    """Replace ``path`` with ``doc`` atomically (a reader never sees half a file)."""
    text = yaml.safe_dump(dict(doc), sort_keys=False, default_flow_style=False, allow_unicode=True)
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".acl-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
