"""SlaveSynchronize: a slave copies its master's topics, consumer offsets, delay offsets and subscription groups.

Java 4.9's ``SlaveSynchronize.syncAll``, run by a slave only (first ~3 s after it becomes one, then every
``slaveSyncIntervalMills``; Java: a fixed 10 s):

* GET_ALL_TOPIC_CONFIG (21), asked on the master's VIP port (listenPort - 2) as Java does — rocketq asks the
  main port instead when the master does not answer there (a master without ``fastListenPortEnable``, or on an
  ephemeral port: see ``_topic_config``); the table and its data version replace the slave's when the data
  version differs;
* GET_ALL_CONSUMER_OFFSET (43): merged (each ``topic@group`` of the master replaces the slave's; the slave's
  own keys stay);
* GET_ALL_DELAY_OFFSET (45): written as it came to ``config/delayOffset.json`` (read by the delay service when
  the slave becomes a master);
* GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): as the topics.

The master is the address the name server's REGISTER_BROKER answer named (``BrokerRoleState.master_addr``).
Each step fails alone (a warning line) and the next round tries again; the transport is given as ``invoke``.
Requests are signed with the broker's ``accessKey``/``secretKey`` when it has them (a master with ACL).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from rocketq.acl.signature import sign_request
from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import ProtocolError, RemotingError
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import DataVersion, TopicConfig
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import split_addr

_Entry = TypeVar("_Entry")
log = logging.getLogger(__name__)

#: (address, request, timeout in seconds) → the answer
Invoke = Callable[[str, RemotingCommand, float], Awaitable[RemotingCommand]]

_TIMEOUT = 3.0


class SyncError(Exception):
    """The master's answer to one step could not be used."""


def vip_addr(addr: str) -> str:
    """Java ``MixAll.brokerVIPChannel``: the same host, port - 2."""
    host, port = split_addr(addr)
    return f"{host}:{port - 2}"


class SlaveSynchronize:
    def __init__(self, ctx: BrokerContext, invoke: Invoke, master_addr: Callable[[], str | None]) -> None:
        self._ctx = ctx
        self._invoke = invoke
        self._master_addr = master_addr
        self.delay_offset_path = Path(ctx.config.storePathRootDir) / "config" / "delayOffset.json"
        #: rounds completed (tests wait on it)
        self.rounds = 0
        #: masters whose VIP port did not answer as the master (``_topic_config``)
        self._main_port_only: set[str] = set()

    async def sync_all(self) -> None:
        master = self._master_addr()
        if not master or master == self._ctx.config.broker_addr:
            return
        steps = (
            ("topics", self._sync_topics),
            ("consumer-offsets", self._sync_offsets),
            ("delay-offsets", self._sync_delay_offsets),
            ("groups", self._sync_groups),
        )
        for name, step in steps:
            try:
                await step(master)
            except (RemotingError, ProtocolError, SyncError, OSError) as exc:
                log.warning("slave_sync.failed step=%s master=%s error=%s", name, master, exc)
        self.rounds += 1

    async def _ask(self, addr: str, code: int) -> Any:
        cmd = RemotingCommand.request(code, {}, language="JAVA")
        cfg = self._ctx.config
        if cfg.accessKey:  # a master with aclEnable: the broker's own account (as its registrations)
            sign_request(cmd.ext_fields, cmd.body, cfg.accessKey, cfg.secretKey)
        answer = await self._invoke(addr, cmd, _TIMEOUT)
        if answer.code != ResponseCode.SUCCESS:
            raise SyncError(f"code {code} answered {answer.code}: {answer.remark}")
        try:
            doc = fastjson.loads(bytes(answer.body))
        except ValueError as exc:
            raise SyncError(f"code {code}: the body is not JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise SyncError(f"code {code}: the body is not a JSON object")
        return doc

    async def _sync_topics(self, master: str) -> None:
        doc = await self._topic_config(master)
        done = _replace_versioned(doc, "topicConfigTable", self._ctx.topics, TopicConfig.from_json, "a topic config")
        if done is not None:
            log.info("slave_sync.topics master=%s topics=%d version=%s", master, *done)

    async def _topic_config(self, master: str) -> Any:
        """GET_ALL_TOPIC_CONFIG, asked on the VIP port first as Java does. A rocketq master on an ephemeral port
        serves none, and then whatever listens at port - 2 may be another server (another broker, a name server,
        an HA port): its answer counts only when it comes from this broker group, whose table holds the topic
        named after the group as every broker's does. Otherwise the main port answers, from then on."""
        if master not in self._main_port_only:
            try:
                doc = await self._ask(vip_addr(master), RequestCode.GET_ALL_TOPIC_CONFIG)
            except (RemotingError, ProtocolError, SyncError) as exc:
                reason = f"{type(exc).__name__}: {exc}"
            else:
                table = doc.get("topicConfigTable")
                if isinstance(table, dict) and self._ctx.config.brokerName in table:
                    return doc
                reason = f"the answer is not broker group {self._ctx.config.brokerName}'s"
            self._main_port_only.add(master)
            log.info("slave_sync.vip_port_unused master=%s: %s; asking the main port", master, reason)
        return await self._ask(master, RequestCode.GET_ALL_TOPIC_CONFIG)

    async def _sync_offsets(self, master: str) -> None:
        doc = await self._ask(master, RequestCode.GET_ALL_CONSUMER_OFFSET)
        raw = doc.get("offsetTable") or {}
        if not isinstance(raw, dict):
            raise SyncError("offsetTable is not an object")
        try:
            table = {str(key): {int(q): int(o) for q, o in queues.items()} for key, queues in raw.items()}
        except (AttributeError, TypeError, ValueError) as exc:
            raise SyncError(f"an offset cannot be read: {exc}") from None
        offsets = self._ctx.offsets
        offsets.merge(table)
        offsets.persist_soon()

    async def _sync_delay_offsets(self, master: str) -> None:
        doc = await self._ask(master, RequestCode.GET_ALL_DELAY_OFFSET)
        await self._ctx.persister.write(self.delay_offset_path, lambda: doc)  # off the loop

    async def _sync_groups(self, master: str) -> None:
        doc = await self._ask(master, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        done = _replace_versioned(doc, "subscriptionGroupTable", self._ctx.groups, SubscriptionGroupConfig.from_json,
                                  "a subscription group")  # fmt: skip
        if done is not None:
            log.info("slave_sync.groups master=%s groups=%d version=%s", master, *done)


class _VersionedTable(Protocol[_Entry]):
    """A config manager SlaveSynchronize replaces wholesale (topics, subscription groups)."""

    data_version: DataVersion

    def replace_all(self, table: dict[str, _Entry], version: DataVersion) -> None: ...


def _replace_versioned(
    doc: dict[str, Any], key: str, manager: _VersionedTable[_Entry], parse: Callable[[Any], _Entry], what: str
) -> tuple[int, DataVersion] | None:
    """Replace ``manager``'s table with the master's when the data versions differ (Java: clear, put all,
    persist); the entries and version replaced, or None when nothing changed."""
    version, raw = _versioned(doc, key)
    if version == manager.data_version:
        return None
    try:
        table = {name: parse(entry) for name, entry in raw.items()}
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        raise SyncError(f"{what} cannot be read: {exc}") from None
    manager.replace_all(table, version)
    return len(table), version


def _versioned(doc: dict[str, Any], key: str) -> tuple[DataVersion, dict[str, Any]]:
    raw = doc.get(key) or {}
    if not isinstance(raw, dict):
        raise SyncError(f"{key} is not an object")
    try:
        version = DataVersion.from_json(doc.get("dataVersion") or {})
    except (TypeError, ValueError) as exc:
        raise SyncError(f"dataVersion cannot be read: {exc}") from None
    return version, raw
