"""The live ACL rules of one server: loaded at start-up, polled for file changes, changed by the admin codes.

``AclStore.load`` raises ``AclConfigError`` (start-up stops: security fails closed). ``poll`` compares every
file's mtime and content digest and the set of files with what was read last; on a change it reads them all again and
swaps the rules in whole. A file that no longer reads is refused with one error line and the previous rules
stay in force (never fail open); the same broken state is not reported again until the files change.

The admin updates (codes 50, 51, 53) rewrite one file atomically, bump its ``dataVersion`` and take effect at
once. The caller polls (``poll``) on its own timer: this room does no I/O scheduling.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rocketq.acl import permission, validator
from rocketq.acl.config import AclFile, AclRules, acl_files, load_file, parse_document, write_document
from rocketq.acl.errors import AclConfigError

log = logging.getLogger("rocketq.acl")

#: codes that stay admin-only in rocketq beyond Java's five (``aclStrictAdmin``): they read or change what is
#: not the caller's own (every group's offsets, the broker's config, the accounts and their secrets, offsets
#: reset, files deleted)
STRICT_ADMIN_CODES = frozenset(
    {
        26,  # GET_BROKER_CONFIG
        27,  # TRIGGER_DELETE_FILES
        43,  # GET_ALL_CONSUMER_OFFSET
        45,  # GET_ALL_DELAY_OFFSET
        50, 51, 52, 53, 54,  # the ACL admin codes (54 answers every account's secret key)
        201,  # GET_ALL_SUBSCRIPTIONGROUP_CONFIG
        212,  # RESET_CONSUMER_OFFSET_IN_BROKER
        222,  # INVOKE_BROKER_TO_RESET_OFFSET
        306,  # CLEAN_EXPIRED_CONSUMEQUEUE
        309,  # CONSUME_MESSAGE_DIRECTLY
        314,  # CLONE_GROUP_OFFSET
        316,  # CLEAN_UNUSED_TOPIC
    }
)  # fmt: skip

#: per file: path, mtime (ns), digest of the content (a rewrite within one mtime tick is still seen)
Fingerprint = tuple[tuple[str, int, bytes], ...]


class AclAdminError(Exception):
    """An admin update that cannot be done; the message is the answer's remark."""


@dataclass(frozen=True, slots=True)
class AccountUpdate:
    """UPDATE_AND_CREATE_ACL_CONFIG's header (``CreateAccessConfigRequestHeader``); None = not given."""

    access_key: str
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None


class AclStore:
    def __init__(
        self,
        default_file: str | os.PathLike[str],
        *,
        strict_admin: bool = True,
        strict_resources: bool = True,
        admin_codes: frozenset[int] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``admin_codes`` replaces the admin-only set the ``strict_admin`` choice gives (a server with other
        request codes than a broker's, e.g. a name server protecting its writes)."""
        self.default_file = os.path.abspath(default_file)
        self.strict_resources = strict_resources
        self.admin_codes = (
            admin_codes
            if admin_codes is not None
            else permission.ADMIN_CODES | (STRICT_ADMIN_CODES if strict_admin else frozenset())
        )
        self.rules = AclRules()
        self._clock = clock
        self._seen: Fingerprint = ()
        self._broken: Fingerprint | None = None
        self.reloads = 0
        self.refused_reloads = 0

    # ------------------------------------------------------------------------------------------ loading

    def load(self) -> None:
        """Read every file; raises ``AclConfigError`` naming the file and key (the rules are unchanged)."""
        fingerprint = self._fingerprint()
        self.rules = AclRules.combine([load_file(path) for path, _, _ in fingerprint])
        self._seen, self._broken = fingerprint, None
        log.info("acl.loaded files=%d accounts=%d", len(self.rules.files), len(self.rules.accounts))

    def _fingerprint(self) -> Fingerprint:
        out = []
        for path in acl_files(self.default_file):
            try:
                with open(path, "rb") as fh:
                    mtime = os.fstat(fh.fileno()).st_mtime_ns
                    digest = hashlib.blake2b(fh.read(), digest_size=16).digest()
                out.append((path, mtime, digest))
            except OSError:
                out.append((path, -1, b""))  # gone: read (and refused) as missing
        return tuple(out)

    def poll(self) -> bool:
        """Reload when a file changed; True when new rules are in force. Never raises for a bad file."""
        fingerprint = self._fingerprint()
        if fingerprint == self._seen or fingerprint == self._broken:
            return False
        try:
            rules = AclRules.combine([load_file(path) for path, _, _ in fingerprint])
        except AclConfigError as exc:
            self._broken = fingerprint
            self.refused_reloads += 1
            log.error("acl.reload_refused error=%s (the previous rules stay in force)", exc)
            return False
        self.rules, self._seen, self._broken = rules, fingerprint, None
        self.reloads += 1
        log.info("acl.reloaded files=%d accounts=%d", len(rules.files), len(rules.accounts))
        return True

    # ------------------------------------------------------------------------------------------- check

    def check(self, ip: str, code: int, ext: Mapping[str, str], body: bytes | bytearray | memoryview | None) -> None:
        """Raise ``AclDenied`` unless the current rules allow the request."""
        validator.check(
            self.rules, ip, code, ext, body, admin_codes=self.admin_codes, strict_resources=self.strict_resources
        )

    # --------------------------------------------------------------------------------------- admin reads

    def versions(self) -> dict[str, tuple[int, int]]:
        """File → (counter, timestamp) of its ``dataVersion``."""
        return {f.path: f.data_version for f in self.rules.files}

    def default_version(self) -> tuple[int, int]:
        f = self.rules.file(self.default_file)
        return f.data_version if f is not None else (0, 0)

    def all_config(self) -> tuple[list[str], list[dict[str, Any]]]:
        """(global white addresses of every file, every account as PlainAccessConfig — first definition)."""
        white = [a for f in self.rules.files for a in f.white_addresses]
        accounts = []
        for key, acct in self.rules.accounts.items():
            e = acct.entry
            accounts.append(
                {
                    "accessKey": key,
                    "secretKey": acct.secret_key,
                    "whiteRemoteAddress": acct.white_remote_address,
                    "admin": acct.admin,
                    "defaultTopicPerm": _opt_str(e.get("defaultTopicPerm")),
                    "defaultGroupPerm": _opt_str(e.get("defaultGroupPerm")),
                    "topicPerms": [str(p) for p in e.get("topicPerms") or []] or None,
                    "groupPerms": [str(p) for p in e.get("groupPerms") or []] or None,
                }
            )
        return white, accounts

    # -------------------------------------------------------------------------------------- admin writes

    def update_account(self, upd: AccountUpdate) -> None:
        """Create or update one account (in the file that defines it, a new one in the main file)."""
        if len(upd.access_key) < 7 or upd.secret_key is None or len(upd.secret_key) < 7:
            raise AclAdminError(
                f"The accessKey={upd.access_key} and secretKey={upd.secret_key} cannot be null and length should "
                "longer than 6"
            )
        for perms in (upd.topic_perms, upd.group_perms):
            for item in perms or []:
                parts = [p for p in item.split("=") if p]
                if len(parts) != 2:
                    raise AclAdminError(
                        f"Parse Resource format error for {item}.\n"
                        "The expected resource format is 'Res=Perm'. For example: topicA=SUB"
                    )
                if parts[1].strip() not in permission.PERM_STRINGS:
                    raise AclAdminError(
                        f"Parse resource permission error for {item}.\n"
                        "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
                    )
        path = self.rules.owners.get(upd.access_key, self.default_file)
        doc = self._document(path)
        accounts = [a for a in doc.get("accounts") or [] if isinstance(a, dict)]
        old = next((a for a in accounts if str(a.get("accessKey")) == upd.access_key), None)
        entry = dict(old) if old is not None else {}
        entry["accessKey"] = upd.access_key
        entry["secretKey"] = upd.secret_key
        if upd.white_remote_address is not None:
            entry["whiteRemoteAddress"] = upd.white_remote_address
        entry["admin"] = upd.admin
        for key, value in (("defaultTopicPerm", upd.default_topic_perm), ("defaultGroupPerm", upd.default_group_perm)):
            if value:
                entry[key] = value
        for key, lst in (("topicPerms", upd.topic_perms), ("groupPerms", upd.group_perms)):
            if lst is not None:
                entry[key] = list(lst)
        accounts = [a for a in accounts if a is not old] + [entry]
        doc["accounts"] = accounts
        self._write(path, doc)

    def delete_account(self, access_key: str) -> bool:
        """Remove an account from its file; False when no file defines it."""
        path = self.rules.owners.get(access_key)
        if not access_key or path is None:
            return False
        doc = self._document(path)
        accounts = [a for a in doc.get("accounts") or [] if isinstance(a, dict)]
        kept = [a for a in accounts if str(a.get("accessKey")) != access_key]
        if len(kept) == len(accounts):
            return False
        doc["accounts"] = kept
        self._write(path, doc)
        return True

    def update_global_white(self, addresses: Sequence[str], file: str | None = None) -> None:
        """Replace one file's ``globalWhiteRemoteAddresses`` (the main file when none is named)."""
        path = os.path.abspath(file) if file else self.default_file
        if self.rules.file(path) is None:
            raise AclAdminError(f"{file} is not one of this broker's ACL files")
        doc = self._document(path)
        doc["globalWhiteRemoteAddresses"] = list(addresses)
        self._write(path, doc)

    def _document(self, path: str) -> dict[str, Any]:
        f = self.rules.file(path)
        return copy.deepcopy(dict(f.document)) if f is not None else {}

    def _write(self, path: str, doc: dict[str, Any]) -> None:
        f = self.rules.file(path)
        counter = f.data_version[0] if f is not None else 0
        doc["dataVersion"] = [{"counter": counter + 1, "timestamp": int(self._clock() * 1000)}]
        try:
            new = parse_document(doc, path)  # what would be written must read back: refused otherwise
        except AclConfigError as exc:
            raise AclAdminError(str(exc)) from None
        try:
            write_document(path, doc)
        except OSError as exc:
            raise AclAdminError(f"{path}: cannot write the ACL file: {exc}") from None
        files: list[AclFile] = [new if x.path == path else x for x in self.rules.files]
        if f is None:
            files.append(new)
        self.rules = AclRules.combine(files)
        # this write is seen; a change of another file since the last poll is still picked up next time
        before = {p: (m, s) for p, m, s in self._seen}
        self._seen = tuple(
            (p, m, s) if p == path else (p, *before.get(p, (-2, b""))) for p, m, s in self._fingerprint()
        )
        log.info("acl.updated file=%s version=%d", path, counter + 1)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
