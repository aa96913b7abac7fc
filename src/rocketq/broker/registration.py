"""Registration with the name servers: at start, every ``registerNameServerPeriod``, after topic changes."""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import RemotingError
from rocketq.protocol.bodies import dumps
from rocketq.protocol.command import RemotingCommand

if TYPE_CHECKING:
    from rocketq.broker.context import BrokerContext
    from rocketq.remoting.client import RemotingClient

log = logging.getLogger("rocketq.broker.registration")


class NamesrvRegistration:
    def __init__(self, ctx: BrokerContext, remoting_client: RemotingClient) -> None:
        self.broker = ctx
        self._client = remoting_client
        #: told what each name server answered (a slave learns its master from it)
        self.on_result: Callable[[str | None, str | None], None] | None = None
        self._kick = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.registered_once = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

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

    def _header(self) -> dict[str, str]:
        cfg = self.broker.config
        return {
            "brokerName": cfg.brokerName,
            "brokerAddr": cfg.broker_addr,
            "clusterName": cfg.brokerClusterName,
            "haServerAddr": f"{cfg.brokerIP2 or cfg.brokerIP1}:{cfg.ha_port}",
            "brokerId": str(cfg.brokerId),
        }

    async def register_all(self) -> None:
        wrapper = self.broker.topics.wrapper_json()
        wrapper_topics = wrapper["topicConfigTable"]
        perm = self.broker.config.brokerPermission
        # Java lowers every topic's perm to the broker's when the broker itself is not writable/readable.
        if perm != 6:
            for tc in wrapper_topics.values():  # type: ignore[attr-defined]
                tc["perm"] &= perm
        body = dumps({"filterServerList": [], "topicConfigSerializeWrapper": wrapper})
        ext = self._header()
        ext["compressed"] = "false"
        ext["bodyCrc32"] = str(zlib.crc32(body) & 0x7FFFFFFF)
        for addr in self.broker.config.namesrv_addrs():
            cmd = RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(ext), body, language="JAVA")
            try:
                resp = await self._client.invoke(addr, cmd, timeout=6.0)
                if resp.code != ResponseCode.SUCCESS:
                    log.warning("register.failed namesrv=%s code=%s remark=%s", addr, resp.code, resp.remark)
                else:
                    self.registered_once.set()
            except RemotingError as exc:
                log.warning("register.failed namesrv=%s error=%s", addr, exc)

    async def unregister_all(self) -> None:
        for addr in self.broker.config.namesrv_addrs():
            ext = self._header()
            ext.pop("haServerAddr")
            cmd = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, ext, language="JAVA")
            try:
                await self._client.invoke(addr, cmd, timeout=3.0)
            except RemotingError as exc:
                log.warning("unregister.failed namesrv=%s error=%s", addr, exc)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
