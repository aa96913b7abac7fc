"""An in-process name server and broker(s) on ephemeral 127.0.0.1 ports, with a temporary store."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from rocketq.broker.config import BrokerConfig
from rocketq.broker.controller import BrokerController
from rocketq.grpc.server import grpc_front_end
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.server import NamesrvServer

# Small files and short intervals so tests roll files over and never wait for real minutes.
TEST_BROKER_DEFAULTS: dict[str, str] = {
    "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": str(1000 * 20),
    "maxHashSlotNum": "1000",
    "maxIndexNum": "4000",
    "registerNameServerPeriod": "1000",
    "clientScanIntervalMills": "1000",
    "consumerOffsetPersistIntervalMills": "1000",
    "brokerIP1": "127.0.0.1",
    "listenHost": "127.0.0.1",
}


class EmbeddedCluster:
    """``async with EmbeddedCluster(dir, **broker_overrides)``; ``brokers=2`` starts two broker names;
    ``namesrv_settings``: name server properties by their Java names (as ``rocketq namesrv key=value``)."""

    def __init__(
        self,
        base_dir: str | Path | None = None,
        *,
        brokers: int = 1,
        namesrv_settings: dict[str, str] | None = None,
        **overrides: Any,
    ) -> None:
        self.namesrv_settings = dict(namesrv_settings or {})
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if base_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="rocketq-")
            base_dir = self._tmp.name
        self.base_dir = Path(base_dir)
        self.broker_count = brokers
        self.overrides = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in overrides.items()}
        self.namesrv: NamesrvServer | None = None
        self.brokers: list[BrokerController] = []
        #: position in ``brokers`` → (master's index, brokerId, overrides) of each slave started by start_slave
        self._slaves: dict[int, tuple[int, int, dict[str, Any]]] = {}

    @property
    def namesrv_addr(self) -> str:
        assert self.namesrv is not None, "cluster not started"
        return f"127.0.0.1:{self.namesrv.port}"

    @property
    def broker(self) -> BrokerController:
        return self.brokers[0]

    @property
    def broker_addr(self) -> str:
        return self.brokers[0].config.broker_addr

    async def start(self) -> EmbeddedCluster:
        config = NamesrvConfig(listen_host="127.0.0.1", listen_port=0, home_dir=self.base_dir / "namesrv")
        config.update_from_properties(self.namesrv_settings, strict=True)
        self.namesrv = NamesrvServer(config)
        await self.namesrv.start()
        for i in range(self.broker_count):
            await self.start_broker(i)
        return self

    def broker_config(self, index: int = 0) -> BrokerConfig:
        values = dict(TEST_BROKER_DEFAULTS)
        values["brokerName"] = f"broker-{chr(ord('a') + index)}"
        values["storePathRootDir"] = str(self.base_dir / values["brokerName"])
        values["namesrvAddr"] = self.namesrv_addr
        values.update(self.overrides)
        return BrokerConfig.from_mapping(values)

    async def start_broker(self, index: int = 0, config: BrokerConfig | None = None) -> BrokerController:
        cfg = config or self.broker_config(index)
        controller = BrokerController(cfg, grpc=grpc_front_end)
        controller.use_ephemeral_port()
        await controller.start()
        try:
            async with asyncio.timeout(10):
                await controller.registration.registered_once.wait()
        except TimeoutError:
            await controller.shutdown()
            raise
        if index < len(self.brokers):
            self.brokers[index] = controller
        else:
            self.brokers.append(controller)
        return controller

    def slave_config(self, index: int = 0, broker_id: int = 1, **overrides: Any) -> BrokerConfig:
        """The config of slave ``broker_id`` of broker ``index`` (same brokerName, its own store)."""
        values = dict(TEST_BROKER_DEFAULTS)
        name = f"broker-{chr(ord('a') + index)}"
        values.update(self.overrides)
        values.update(
            brokerName=name, brokerId=str(broker_id), brokerRole="SLAVE", namesrvAddr=self.namesrv_addr,
            storePathRootDir=str(self.base_dir / f"{name}-s{broker_id}"),
        )  # fmt: skip
        values.update({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in overrides.items()})
        return BrokerConfig.from_mapping(values)

    async def start_slave(self, index: int = 0, broker_id: int = 1, **overrides: Any) -> BrokerController:
        """Start a slave of broker ``index``; it finds its master's HA address through the name server."""
        at = len(self.brokers)
        controller = await self.start_broker(at, self.slave_config(index, broker_id, **overrides))
        self._slaves[at] = (index, broker_id, overrides)
        return controller

    async def restart_broker(self, index: int = 0) -> BrokerController:
        """Graceful restart on a fresh port with the same store and config files."""
        old = self.brokers[index]
        await old.shutdown()
        slave = self._slaves.get(index)
        cfg = self.slave_config(slave[0], slave[1], **slave[2]) if slave else self.broker_config(index)
        return await self.start_broker(index, cfg)

    async def stop(self) -> None:
        for b in self.brokers:
            await b.shutdown()
        self.brokers.clear()
        if self.namesrv is not None:
            await self.namesrv.close()
            self.namesrv = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    async def __aenter__(self) -> EmbeddedCluster:
        try:
            return await self.start()
        except BaseException:
            await self.stop()
            raise

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
