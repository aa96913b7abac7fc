"""``NamesrvServer``: route tables + KV config + processors behind one ``RemotingServer``.

Usable in-process (tests, ``rocketq standalone``) and by ``rocketq namesrv``::

    server = NamesrvServer(NamesrvConfig(listen_host="127.0.0.1", listen_port=0, home_dir=tmp))
    port = await server.start()
    ...
    await server.close()

Background work is one task: every ``scan_interval`` s, brokers not heard from for ``broker_expiry`` s are
dropped and their connections closed. A closed connection drops the broker registered over it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from types import TracebackType

from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.kv_config import KVConfigManager
from rocketq.namesrv.processors import NamesrvProcessor
from rocketq.namesrv.prometheus import namesrv_registry
from rocketq.namesrv.protection import NamesrvProtection
from rocketq.namesrv.route_info import Clock, RouteInfoManager
from rocketq.remoting.connection import Connection
from rocketq.remoting.exposure import check_bind, is_loopback
from rocketq.remoting.metrics_http import MetricsEndpoint
from rocketq.remoting.server import RemotingDispatcher, RemotingServer
from rocketq.replication.controller.config import ControllerConfig
from rocketq.replication.controller.runtime import ControllerRuntime
from rocketq.replication.controller.service import Controller
from rocketq.replication.controller.store import FileMetadataStore

log = logging.getLogger("rocketq.namesrv.server")


class NamesrvServer:
    """One name server. ``await start()`` binds and returns the port; ``await close()`` stops everything."""

    def __init__(self, config: NamesrvConfig | None = None, *, clock: Clock = time.monotonic) -> None:
        self.config = config if config is not None else NamesrvConfig()
        self.route_info = RouteInfoManager(clock=clock, broker_expiry=self.config.broker_expiry)
        self.kv_config = KVConfigManager(
            self.config.resolved_kv_config_path, max_bytes=self.config.kv_config_max_bytes
        )
        self.dispatcher = RemotingDispatcher("namesrv")
        self.processor = NamesrvProcessor(
            self.route_info, self.kv_config, self.config, on_config_updated=self._apply_config
        )
        self.processor.register(self.dispatcher)
        self.dispatcher.close_listeners.append(self._on_connection_closed)
        #: the embedded 5.x controller (``enableControllerInNamesrv``), on this server's port
        self.controller: ControllerRuntime | None = None
        if self.config.enable_controller_in_namesrv:
            self.controller = ControllerRuntime(self._build_controller(clock), self.dispatcher)
        #: name server protection (set at start when ``acl_file`` is given)
        self.protection: NamesrvProtection | None = None
        self._remoting: RemotingServer | None = None
        self._scan_task: asyncio.Task[None] | None = None
        self._closed = False
        #: Prometheus /metrics (metricsExporterType=PROM)
        self.metrics_endpoint: MetricsEndpoint | None = None

    # ---------------------------------------------------------------------------------------- lifecycle

    @property
    def protected(self) -> bool:
        """Whether write requests need a signed account (name server protection, docs/security.md)."""
        return self.config.acl_file is not None

    @property
    def port(self) -> int:
        if self._remoting is None:
            raise RuntimeError("name server not started")
        return self._remoting.port

    @property
    def address(self) -> str:
        """``host:port`` a client on this machine can dial (127.0.0.1 when listening on every interface)."""
        host = self.config.listen_host
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        return f"{host}:{self.port}"

    async def start(self) -> int:
        if self._remoting is not None:
            raise RuntimeError("name server already started")
        if self.config.acl_file is not None:  # an account file it cannot use stops start-up (fail closed)
            self.protection = NamesrvProtection(self.config.acl_file, self.config.acl_reload_interval)
            self.dispatcher.request_hooks.append(self.protection.hook)
        check_bind("the name server", "listenHost", self.config.listen_host, protected=self.protected,
                   protection="name server protection (aclFile, --acl-file)", allowed=self.config.allow_insecure_bind,
                   loopback="--host 127.0.0.1, or listenHost=127.0.0.1 for standalone")  # fmt: skip
        metrics_on = self.config.metrics_exporter_type.upper() == "PROM"
        if metrics_on:
            check_bind("the name server's metrics endpoint", "metricsPromExporterHost",
                       self.config.metrics_prom_exporter_host,
                       protected=self.protected, protection="name server protection (aclFile, --acl-file)",
                       allowed=self.config.allow_insecure_bind)  # fmt: skip
        self.config.home_dir.mkdir(parents=True, exist_ok=True)
        self.kv_config.load()
        remoting = RemotingServer(
            self.dispatcher,
            self.config.listen_host,
            self.config.listen_port,
            idle_timeout=self.config.idle_timeout,
            idle_scan_interval=min(10.0, self.config.idle_timeout),
            limits=self.config.server_limits(),
            tls=self.config.server_tls(),
        )
        port = await remoting.start()
        if metrics_on:
            registry, rpc = namesrv_registry(lambda: self.address, self.route_info.statistics)
            endpoint = MetricsEndpoint(
                registry, self.config.metrics_prom_exporter_host, self.config.metrics_prom_exporter_port
            )
            try:
                await endpoint.start()
            except BaseException:  # the metrics port is taken: do not leave the main port open
                await remoting.close()
                raise
            self.metrics_endpoint = endpoint
            rpc.install(self.dispatcher)
        # GET_NAMESRV_CONFIG shows the port served (Java's listenPort), also when asked for any free one (0)
        self.config.listen_port = port
        self._remoting = remoting
        self._scan_task = asyncio.get_running_loop().create_task(self._scan_loop(), name="namesrv-scan")
        if self.controller is not None:
            self.controller.controller.address = self.address
            self.controller.start()
        log.info("namesrv.started listen=%s home=%s protected=%s", ",".join(remoting.bound_addresses),
                 self.config.home_dir, self.protected)  # fmt: skip
        if not is_loopback(self.config.listen_host) and not self.protected:  # allowInsecureBind said so
            log.warning(
                "namesrv.insecure_bind listen=%s: allowInsecureBind=true and no account file, so anyone who can "
                "reach this port can register brokers and change routes; keep it behind a firewall",
                ",".join(remoting.bound_addresses),
            )
        return port

    @property
    def listen_addresses(self) -> list[str]:
        """Where the name server listens, as bound (``0.0.0.0:9876`` when it listens on every interface)."""
        return self._remoting.bound_addresses if self._remoting is not None else []

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._scan_task is not None:
            self._scan_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scan_task
        if self.controller is not None:
            await self.controller.close()
        if self.metrics_endpoint is not None:
            await self.metrics_endpoint.close()
        if self._remoting is not None:
            await self._remoting.close()
        log.info("namesrv.stopped")

    async def __aenter__(self) -> NamesrvServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # ------------------------------------------------------------------------------------------ internals

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.scan_interval)
            try:
                self.scan_not_active_brokers()
            except Exception:  # keep scanning whatever one pass hit
                log.exception("scan.failed")

    def _build_controller(self, clock: Clock) -> Controller:
        c = self.config
        config = ControllerConfig(
            enable_elect_unclean_master=c.enable_elect_unclean_master,
            notify_broker_role_changed=c.notify_broker_role_changed,
            scan_not_active_broker_interval=c.scan_interval,
            controller_store_path=c.resolved_controller_store_path,
        )
        return Controller(config, FileMetadataStore(c.resolved_controller_store_path), clock=clock)

    def scan_not_active_brokers(self) -> int:
        """One expiry pass (the scan task calls it); returns how many brokers were dropped."""
        expired = self.route_info.scan_not_active_broker()
        for item in expired:
            if isinstance(item.channel, Connection):
                item.channel.close()
        return len(expired)

    def _on_connection_closed(self, conn: Connection) -> None:
        self.route_info.on_channel_destroy(conn.remote, conn)

    def _apply_config(self) -> None:
        self.route_info.broker_expiry = self.config.broker_expiry
        self.kv_config.max_bytes = self.config.kv_config_max_bytes
        if self._remoting is not None:
            self._remoting.idle_timeout = self.config.idle_timeout
            self._remoting.ledger.limits = self.config.server_limits()  # new caps at once, marks for new connections
