"""``ControllerServer``: the controller on its own port (``rocketq controller``; Java ``ControllerStartup``)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from rocketq.remoting.exposure import check_bind
from rocketq.remoting.server import RemotingDispatcher, RemotingServer
from rocketq.replication.controller.config import DEFAULT_CONTROLLER_PORT, ControllerConfig
from rocketq.replication.controller.liveness import Clock
from rocketq.replication.controller.runtime import ControllerRuntime
from rocketq.replication.controller.service import Controller
from rocketq.replication.controller.store import FileMetadataStore, MemoryMetadataStore, MetadataStore

log = logging.getLogger("rocketq.controller")


@dataclass(slots=True)
class ControllerServerConfig:
    listen_host: str = "127.0.0.1"
    listen_port: int = DEFAULT_CONTROLLER_PORT
    allow_insecure_bind: bool = False


def store_for(config: ControllerConfig) -> MetadataStore:
    path = config.controller_store_path
    return FileMetadataStore(Path(path)) if path is not None else MemoryMetadataStore()


class ControllerServer:
    def __init__(
        self, server_config: ControllerServerConfig, config: ControllerConfig, *, clock: Clock = time.monotonic
    ) -> None:
        self.server_config = server_config
        self.dispatcher = RemotingDispatcher("controller")
        self.controller = Controller(config, store_for(config), clock=clock)
        self.runtime = ControllerRuntime(self.controller, self.dispatcher)
        self._remoting: RemotingServer | None = None

    @property
    def port(self) -> int:
        if self._remoting is None:
            raise RuntimeError("controller not started")
        return self._remoting.port

    @property
    def address(self) -> str:
        host = self.server_config.listen_host
        return f"{'127.0.0.1' if host in ('', '0.0.0.0', '::') else host}:{self.port}"

    @property
    def listen_addresses(self) -> list[str]:
        return self._remoting.bound_addresses if self._remoting is not None else []

    async def start(self) -> int:
        # The controller has no account check: like an unprotected name server, loopback unless told otherwise.
        check_bind(
            "the controller",
            "listenHost",
            self.server_config.listen_host,
            protected=False,
            protection="none (the controller has no ACL)",
            allowed=self.server_config.allow_insecure_bind,
            loopback="--host 127.0.0.1",
        )
        remoting = RemotingServer(self.dispatcher, self.server_config.listen_host, self.server_config.listen_port)
        port = await remoting.start()
        self._remoting = remoting
        self.controller.address = self.address
        self.runtime.start()
        log.info(
            "controller.started listen=%s store=%s",
            ",".join(remoting.bound_addresses),
            self.controller.config.controller_store_path,
        )
        return port

    async def close(self) -> None:
        await self.runtime.close()
        if self._remoting is not None:
            await self._remoting.close()
            self._remoting = None
        log.info("controller.stopped")
