"""Name server protection (beyond Java: a 4.9 name server checks nothing, so anyone who can reach it can
register a fake master for a broker name, delete routes or expire every broker).

With an account file (``aclFile``, the schema of the broker's ``plain_acl.yml``), every request that changes
the name server must come from an ``admin`` account of that file, signed as the broker ACL signs
(``rocketq.acl``): the same validation order — global white list, AccessKey, account, the account's white
address, signature — then the admin flag. Refusals are answered as a Java broker answers an ACL refusal:
SYSTEM_ERROR with the AclException text. A Java 4.9 broker does not sign; list its address in
``globalWhiteRemoteAddresses`` (or give it the account's ``whiteRemoteAddress``).

Reads (routes, cluster info, KV reads, the config) stay open: clients without credentials must still find
their brokers. Every other code, including one added later, is a write and is checked — the list of the open
ones is the short one, so a new request fails closed.

The file is re-read when it (or a file under ``acl/`` beside it) changes, at most every ``reload_interval``
seconds; a file that cannot be used is refused with one log line and the previous rules stay in force.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from rocketq.acl import signature, validator
from rocketq.acl.config import AclRules, acl_files, load_rules
from rocketq.acl.errors import AclConfigError, AclDenied
from rocketq.codes import RequestCode, ResponseCode
from rocketq.common.ratelog import RateLimitedLog
from rocketq.errors import ConfigError
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.connection import Connection

log = logging.getLogger("rocketq.namesrv.protection")

#: the key (name server property) and command-line flag naming the account file
ACL_FILE_KEY = "aclFile"

#: requests that only read: open to everyone
OPEN_CODES = frozenset(
    {
        RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO, RequestCode.GET_KV_CONFIG,
        RequestCode.GET_KVLIST_BY_NAMESPACE, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.GET_TOPICS_BY_CLUSTER, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS,
        RequestCode.GET_UNIT_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, RequestCode.GET_NAMESRV_CONFIG,
    }
)  # fmt: skip

_ADMIN_FRAME = "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:580)"


def check_write(rules: AclRules, ip: str, cmd: RemotingCommand) -> None:
    """Raise ``AclDenied`` unless ``cmd`` (a write) comes from a white-listed address or a signed admin."""
    if any(pattern.matches(ip) for pattern in rules.white):
        return
    validator.check(rules, ip, cmd.code, cmd.ext_fields, cmd.body)  # key, account, white address, signature
    key = cmd.ext_fields[signature.ACCESS_KEY]
    if not rules.accounts[key].admin:
        raise AclDenied(f"Need admin permission for request code={cmd.code}, but accessKey={key} is not", _ADMIN_FRAME)


class NamesrvProtection:
    """The request hook of a protected name server, and the reload of its account file."""

    def __init__(self, path: str | os.PathLike[str], reload_interval: float = 5.0) -> None:
        self.path = Path(path)
        self.reload_interval = reload_interval
        if not self.path.is_file():  # named explicitly: a missing file is a mistake, never "no accounts"
            raise ConfigError(ACL_FILE_KEY, f"{self.path}: no such file")
        try:
            self.rules = load_rules(self.path)
        except AclConfigError as exc:
            raise ConfigError(ACL_FILE_KEY, str(exc)) from None
        self._stamps = self._read_stamps()
        self._next_look = time.monotonic() + reload_interval
        self.refused = 0
        self._log = RateLimitedLog(log)  # one line per address and code a minute: refusals cannot flood the log

    def hook(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        """``RemotingDispatcher`` request hook: None lets the request through, else the refusal."""
        if cmd.code in OPEN_CODES:
            return None
        self.maybe_reload()
        try:
            check_write(self.rules, validator.client_ip(conn.remote), cmd)
        except AclDenied as denied:
            self.refused += 1
            self._log.warning((validator.client_ip(conn.remote), cmd.code),
                              "namesrv.refused remote=%s code=%s reason=%s", conn.remote, cmd.code, denied.message)
            return cmd.response(ResponseCode.SYSTEM_ERROR, validator.remark(denied))  # oneway: not written
        return None

    # -- reload ------------------------------------------------------------------------------------------

    def _read_stamps(self) -> dict[str, float]:
        stamps = {}
        for name in acl_files(self.path):
            try:
                stamps[name] = os.stat(name).st_mtime
            except OSError:
                stamps[name] = -1.0
        return stamps

    def maybe_reload(self) -> bool:
        """Re-read the files if ``reload_interval`` has passed and one changed; True when new rules apply."""
        now = time.monotonic()
        if now < self._next_look:
            return False
        self._next_look = now + self.reload_interval
        stamps = self._read_stamps()
        if stamps == self._stamps:
            return False
        self._stamps = stamps
        try:
            self.rules = load_rules(self.path)
        except AclConfigError as exc:
            log.error("namesrv.acl_reload_refused %s; the previous rules stay in force", exc)
            return False
        log.info("namesrv.acl_reloaded files=%d accounts=%d", len(stamps), len(self.rules.accounts))
        return True
