"""Name server protection (beyond Java: a 4.9 name server checks nothing, so anyone who can reach it can
register a fake master for a broker name, delete routes or expire every broker).

With an account file (``aclFile``, the schema of the broker's ``plain_acl.yml``), every request that changes
the name server must come from an ``admin`` account of that file, signed as the broker ACL signs
(``rocketq.acl``): Java's validation order — global white list, AccessKey, account, the account's white
address, signature — with every write an admin-only code. Refusals are answered as a Java broker answers an ACL refusal:
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

from rocketq.acl import validator
from rocketq.acl.errors import AclConfigError, AclDenied
from rocketq.acl.store import AclStore
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



class NamesrvProtection:
    """The request hook of a protected name server; its rules live in an ``AclStore`` (polled for changed
    files at most every ``reload_interval`` seconds, when a write arrives)."""

    def __init__(self, path: str | os.PathLike[str], reload_interval: float = 5.0) -> None:
        if not Path(path).is_file():  # named explicitly: a missing file is a mistake, never "no accounts"
            raise ConfigError(ACL_FILE_KEY, f"{path}: no such file")
        self.store = AclStore(path, strict_admin=False)
        try:
            self.store.load()
        except AclConfigError as exc:
            raise ConfigError(ACL_FILE_KEY, str(exc)) from None
        self.reload_interval = reload_interval
        self._next_poll = time.monotonic() + reload_interval
        self.refused = 0
        self._log = RateLimitedLog(log)  # one line per address and code a minute: refusals cannot flood the log

    def hook(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        """``RemotingDispatcher`` request hook: None lets the request through, else the refusal."""
        if cmd.code in OPEN_CODES:
            return None
        now = time.monotonic()
        if now >= self._next_poll:
            self._next_poll = now + self.reload_interval
            self.store.poll()
        ip = validator.client_ip(conn.remote)
        try:  # every write is an admin code here
            validator.check(self.store.rules, ip, cmd.code, cmd.ext_fields, cmd.body, admin_codes=frozenset({cmd.code}))
        except AclDenied as denied:
            self.refused += 1
            self._log.warning((ip, cmd.code), "namesrv.refused remote=%s code=%s reason=%s",
                              conn.remote, cmd.code, denied.message)  # fmt: skip
            return cmd.response(ResponseCode.SYSTEM_ERROR, validator.remark(denied))  # oneway: not written
        return None
