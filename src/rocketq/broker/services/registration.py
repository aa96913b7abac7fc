"""Registration with the name servers: at start, every ``registerNameServerPeriod``, after topic changes.

Java ``BrokerOuterAPI.registerBrokerAll`` / ``unregisterBrokerAll``. The request is written with the typed
``RegisterBrokerRequestHeader`` and ``RegisterBrokerBody`` the name server reads them with
(``rocketq.protocol``), uncompressed and with its CRC32. The answer's ``masterAddr``/``haServerAddr`` (set for a
slave whose master is alive) are kept as ``last_result`` and handed to ``on_result``.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from rocketq.acl.signature import sign_request
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import ProtocolError, RemotingError
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE, TopicConfig
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.namesrv_headers import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
)
from rocketq.protocol.route import RegisterBrokerBody, RegisterBrokerResult, TopicConfigSerializeWrapper

if TYPE_CHECKING:
    from rocketq.broker.context import BrokerContext
    from rocketq.remoting.client import RemotingClient

log = logging.getLogger("rocketq.broker.services.registration")


class NamesrvRegistration:
    def __init__(self, ctx: BrokerContext, remoting_client: RemotingClient) -> None:
        self.broker = ctx
        self._client = remoting_client
        self._kick = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.registered_once = asyncio.Event()
        #: The answer of the last successful registration (with several name servers: the last one to answer).
        self.last_result: RegisterBrokerResult | None = None
        #: Called with every successful registration's answer (a slave learns its master here).
        self.on_result: Callable[[RegisterBrokerResult], None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    @property
    def running(self) -> bool:
        return self._task is not None

    def kick(self) -> None:
        """Register again soon (topic configuration changed)."""
        self._kick.set()

    async def _loop(self) -> None:
        period = min(max(self.broker.config.registerNameServerPeriod, 10_000), 60_000) / 1000.0
        if self.broker.config.registerNameServerPeriod < 10_000:
            period = self.broker.config.registerNameServerPeriod / 1000.0  # tests use short periods
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await self.register_all()
            self._kick.clear()
            try:
                async with asyncio.timeout(period):
                    await self._kick.wait()
            except TimeoutError:
                continue
            # A topic created by a send is registered at once (Java registers before it answers that send);
            # bursts of changes are coalesced: at most one kicked registration every 50 ms.
            await asyncio.sleep(max(0.0, started + 0.05 - loop.time()))

    def _register_header(self, body: bytes) -> RegisterBrokerRequestHeader:
        cfg = self.broker.config
        return RegisterBrokerRequestHeader(
            broker_name=cfg.brokerName,
            broker_addr=cfg.broker_addr,
            cluster_name=cfg.brokerClusterName,
            ha_server_addr=f"{cfg.brokerIP2 or cfg.brokerIP1}:{cfg.ha_port}",
            broker_id=self.broker.role.broker_id,  # the role object: failover may change it
            compressed=False,
            body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
        )

    def _register_body(self) -> bytes:
        topics = self.broker.topics
        table: Mapping[str, TopicConfig] = topics.good_table()  # a topic that cannot be encoded is left out
        perm = self.broker.config.brokerPermission
        # Java lowers every topic's perm to the broker's when the broker itself is not writable/readable.
        if perm != PERM_READ | PERM_WRITE:
            table = {name: replace(tc, perm=tc.perm & perm) for name, tc in table.items()}
        version = topics.data_version
        if self.broker.config.enableControllerMode:  # 5.x: the master epoch fences a stale master's registration
            version = replace(version, state_version=self.broker.role.epoch)
        return RegisterBrokerBody(TopicConfigSerializeWrapper(version, table)).encode()

    async def register_all(self) -> None:
        body = self._register_body()
        ext = self._register_header(body).to_ext()
        for addr in self.broker.config.namesrv_addrs():
            cmd = self._signed(RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(ext), body, language="JAVA"))
            try:
                resp = await self._client.invoke(addr, cmd, timeout=6.0)
                if resp.code != ResponseCode.SUCCESS:
                    log.warning("register.failed namesrv=%s code=%s remark=%s", addr, resp.code, resp.remark)
                else:
                    self.registered_once.set()
                    self._answered(addr, resp)
            except RemotingError as exc:
                log.warning("register.failed namesrv=%s error=%s", addr, exc)

    def _answered(self, addr: str, resp: RemotingCommand) -> None:
        try:
            h = RegisterBrokerResponseHeader.from_ext(resp.ext_fields)
        except ProtocolError as exc:
            log.warning("register.bad_answer namesrv=%s error=%s", addr, exc)
            return
        result = RegisterBrokerResult(master_addr=h.master_addr, ha_server_addr=h.ha_server_addr)
        if result != self.last_result:
            log.info("register.answer namesrv=%s master=%s ha=%s", addr, result.master_addr, result.ha_server_addr)
        self.last_result = result
        if self.on_result is not None:
            try:
                self.on_result(result)
            except Exception:  # a listener's bug must not stop the registration loop
                log.exception("register.on_result_failed namesrv=%s", addr)

    def sign(self, cmd: RemotingCommand) -> RemotingCommand:
        """``cmd`` signed with the broker's account, if it has one (its controller requests use it too)."""
        return self._signed(cmd)

    def _signed(self, cmd: RemotingCommand) -> RemotingCommand:
        """Sign ``cmd`` with the broker's account, when it has one (a protected name server needs it)."""
        cfg = self.broker.config
        if cfg.accessKey:
            sign_request(cmd.ext_fields, cmd.body, cfg.accessKey, cfg.secretKey)
        return cmd

    async def unregister_all(self) -> None:
        cfg = self.broker.config
        ext = UnregisterBrokerRequestHeader(
            broker_name=cfg.brokerName,
            broker_addr=cfg.broker_addr,
            cluster_name=cfg.brokerClusterName,
            broker_id=self.broker.role.broker_id,  # the role object: failover may change it
        ).to_ext()
        for addr in cfg.namesrv_addrs():
            cmd = self._signed(RemotingCommand.request(RequestCode.UNREGISTER_BROKER, dict(ext), language="JAVA"))
            try:
                await self._client.invoke(addr, cmd, timeout=3.0)
            except RemotingError as exc:
                log.warning("unregister.failed namesrv=%s error=%s", addr, exc)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
