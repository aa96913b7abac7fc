"""BrokerController: the composition root. It builds the store, the managers and the services, hands them to
the processors in one ``BrokerContext``, and starts and stops everything in one place.

Nothing reaches into the controller: processors and services are given the context (or the piece of it they
need), so ``broker/`` has no import circle. The order of ``start`` and ``shutdown`` is the order of Java's
``BrokerController.start`` / ``shutdown``: state is loaded before the store starts, the ports open after the
processors are registered, registration with the name servers comes last and goes first.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from rocketq.acl.errors import AclConfigError
from rocketq.acl.store import AclStore
from rocketq.broker.config import BrokerConfig, store_ip
from rocketq.broker.config_views import ha_config_from, replicas_config_from, store_config_from
from rocketq.broker.context import BrokerContext, FrontEnd
from rocketq.broker.ha_access import HAPeerPolicy
from rocketq.broker.managers.client_manager import ConsumerGroupInfo, ConsumerManager, ProducerManager
from rocketq.broker.managers.lock_manager import QueueLockManager
from rocketq.broker.managers.offset_manager import ConsumerOffsetManager
from rocketq.broker.managers.persist import BackgroundWriter
from rocketq.broker.managers.sink_watermark import SinkWatermarkManager
from rocketq.broker.managers.subscription_manager import SubscriptionGroupManager
from rocketq.broker.managers.topic_manager import SCHEDULE_TOPIC, TopicConfigManager
from rocketq.broker.messaging.consumers import ConsumerService
from rocketq.broker.messaging.pull import PullService
from rocketq.broker.messaging.put_ack import PutAck
from rocketq.broker.messaging.reply import ReplyService
from rocketq.broker.messaging.semantics import MessageSemantics
from rocketq.broker.messaging.send import SendService
from rocketq.broker.metrics import BrokerMetrics, seconds_to_next_midnight
from rocketq.broker.pop.revive import ReviveService
from rocketq.broker.pop.service import PopService
from rocketq.broker.processors.acl import AclGate, AclProcessors
from rocketq.broker.processors.admin import AdminProcessors
from rocketq.broker.processors.clients import ClientProcessors
from rocketq.broker.processors.end_transaction import EndTransactionProcessor
from rocketq.broker.processors.ha_status import HAStatusProcessor
from rocketq.broker.processors.pop import PopProcessors
from rocketq.broker.processors.pull import PullProcessor
from rocketq.broker.processors.query import QueryProcessors
from rocketq.broker.processors.replicas import ReplicasProcessors
from rocketq.broker.processors.reply import ReplyProcessor
from rocketq.broker.processors.send import SendProcessor
from rocketq.broker.processors.send_back import SendBackProcessor
from rocketq.broker.processors.sink_commit import SinkCommitProcessor
from rocketq.broker.prometheus import broker_registry
from rocketq.broker.role import BrokerRole, BrokerRoleState, RoleSnapshot
from rocketq.broker.services.registration import NamesrvRegistration
from rocketq.broker.services.schedule import ScheduleService
from rocketq.broker.services.slave_sync import SlaveSynchronize
from rocketq.broker.services.timer import TIMER_TOPIC, TimerService
from rocketq.broker.services.transaction import TransactionService
from rocketq.codes import RequestCode
from rocketq.errors import ConfigError
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import NotifyConsumerIdsChangedRequestHeader
from rocketq.protocol.route import RegisterBrokerResult
from rocketq.remoting.busy_poll import BusyPoller
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import Connection
from rocketq.remoting.exposure import check_bind, is_loopback
from rocketq.remoting.limits import ConnectionLedger
from rocketq.remoting.metrics_http import MetricsEndpoint
from rocketq.remoting.server import RemotingDispatcher, RemotingServer
from rocketq.remoting.tasks import TaskSet
from rocketq.replication import HAService
from rocketq.replication.replicas import ReplicasManager
from rocketq.replication.status import ha_runtime_info
from rocketq.store import MessageStore

log = logging.getLogger(__name__)


class _Registrable(Protocol):
    def register(self) -> None: ...


class BrokerController:
    def __init__(self, config: BrokerConfig, *, grpc: Callable[[BrokerController], FrontEnd] | None = None) -> None:
        """``grpc``: what builds the gRPC endpoint (``rocketq.grpc.server.grpc_front_end``, passed by the CLI and
        the test clusters); ``grpcServerEnable=true`` without one stops start-up naming the key."""
        self.config = config
        if config.grpcServerEnable and grpc is None:
            raise ConfigError("grpcServerEnable", "this broker was built without the gRPC front end (rocketq.grpc)")
        # plain ACL: read before anything is built; a file that cannot be honoured stops start-up
        self.acl: AclStore | None = None
        if config.aclEnable:
            self.acl = AclStore(
                config.acl_file, strict_admin=config.aclStrictAdmin, strict_resources=config.aclStrictResources
            )
            try:
                self.acl.load()
            except AclConfigError as exc:
                raise ConfigError("aclFilePath", str(exc)) from None
        config_dir = Path(config.storePathRootDir) / "config"
        #: the thread every manager's file is written on (off the event loop)
        self.persister = BackgroundWriter()
        # controller mode: a slave until the controller names the role (brokerRole is then not read)
        initial = BrokerRole.SLAVE if config.enableControllerMode else BrokerRole.parse(config.brokerRole)
        self.role = BrokerRoleState(initial, broker_id=config.brokerId)
        self.store = MessageStore(store_config_from(config))
        self.dispatcher = RemotingDispatcher("broker")
        #: replication: the HA port, the slaves' acks (SYNC_MASTER), and following a master as a slave
        self.ha_peers = HAPeerPolicy.parse(config.haAllowedAddresses)
        self.ha = HAService(self.store, ha_config_from(config), admit=self.ha_peers.allows)
        client_tls = config.client_tls()
        self.remoting_client = RemotingClient(tls=client_tls.context() if client_tls is not None else None)
        topics = TopicConfigManager(
            config_dir,
            cluster_name=config.brokerClusterName,
            broker_name=config.brokerName,
            default_topic_queue_nums=config.defaultTopicQueueNums,
            auto_create_topic_enable=config.autoCreateTopicEnable,
            cluster_topic_enable=config.clusterTopicEnable,
            broker_topic_enable=config.brokerTopicEnable,
            delay_level_count=len(config.delay_levels_ms()),
            trace_topic=config.msgTraceTopicName if config.traceTopicEnable else None,
            writer=self.persister,
        )
        self.ctx = ctx = BrokerContext(
            config=config,
            role=self.role,
            store=self.store,
            topics=topics,
            groups=SubscriptionGroupManager(
                config_dir, auto_create=config.autoCreateSubscriptionGroup, writer=self.persister
            ),
            offsets=ConsumerOffsetManager(config_dir, self.persister),
            consumers=ConsumerManager(),
            producers=ProducerManager(),
            locks=QueueLockManager(
                config.lockMaxLiveTimeMills / 1000.0, path=config_dir / "queueLocks.json", writer=self.persister
            ),
            watermarks=SinkWatermarkManager(config_dir),
            metrics=BrokerMetrics(
                self.store.stats_service, self.dispatcher.answer_counts, cluster_name=config.brokerClusterName
            ),
            persister=self.persister,
            put_ack=PutAck(self.store, self.role, sync_flush=config.flushDiskType == "SYNC_FLUSH"),
            gate=self.dispatcher,
            boot_timestamp=int(time.time() * 1000),
            store_host=(store_ip(config.brokerIP1), config.listenPort),
        )
        # the managers, by their old names (tests and tools read them off the controller)
        self.topics, self.groups, self.offsets = ctx.topics, ctx.groups, ctx.offsets
        self.consumers, self.producers, self.locks = ctx.consumers, ctx.producers, ctx.locks
        self.metrics = ctx.metrics
        self.put_ack = ctx.put_ack
        self.registration = NamesrvRegistration(ctx, self.remoting_client)
        ctx.registrar = self.registration
        self.registration.on_result = self._on_register_result
        # services
        self.transactions = TransactionService(ctx)
        self.timers = TimerService(ctx, interval=config.scheduleIntervalMills / 1000.0)
        self.schedule = ScheduleService(ctx, retry_interval=config.scheduleIntervalMills / 1000.0)
        semantics = MessageSemantics(self.transactions, self.timers)
        self.send_service = SendService(ctx, semantics)
        self.consumer_service = ConsumerService(ctx)
        #: POP (RocketMQ 5's message-level load balancing): the rules, and the loop that gives back expired pops
        self.pop_service = PopService(ctx, revive_queue_num=config.reviveQueueNum,
                                      polling_max=config.popPollingMapSize)  # fmt: skip
        self.revive = ReviveService(ctx, self.pop_service, interval=config.reviveInterval / 1000.0)
        self._grpc_factory = grpc
        #: the RocketMQ 5.x gRPC endpoint (grpcServerEnable): a second front over the same services, built once
        #: the processors below exist
        self.grpc: FrontEnd | None = None
        # remoting processors: header in, answer out
        self.send = SendProcessor(ctx, self.send_service)
        self.pull = PullProcessor(ctx, PullService(ctx))
        self.pull_holds = self.pull.holds
        self.sink_commit = SinkCommitProcessor(ctx, semantics)
        self._processors: tuple[_Registrable, ...] = (
            self.send,
            self.pull,
            SendBackProcessor(ctx, semantics),
            ClientProcessors(ctx, self.consumer_service),
            QueryProcessors(ctx),
            self.sink_commit,
            EndTransactionProcessor(self.dispatcher, self.transactions),
            ReplyProcessor(ctx, ReplyService(ctx, self.send_service)),
            AdminProcessors(
                ctx,
                send_queue_size=self.send.queue_size,
                held_pulls=self.pull_holds.held_count,
                send_queue_head_wait_ms=self.send.head_wait_ms,
                delay_offsets=lambda: self.schedule.build()(),
            ),
            AclProcessors(ctx, self.acl),
            HAStatusProcessor(ctx, lambda: ha_runtime_info(self.ha, is_slave=self.role.is_slave)),
            PopProcessors(ctx, self.pop_service),
        )
        #: controller mode (5.x): the controller decides the role; None otherwise
        self.replicas: ReplicasManager | None = None
        if config.enableControllerMode:
            self.replicas = ReplicasManager(
                replicas_config_from(config), self.role, self.store, self.ha, self.remoting_client,
                on_role_decided=self._on_role_decided, sign=self.registration.sign,
            )  # fmt: skip
            self._processors = (*self._processors, ReplicasProcessors(ctx, self.replicas))
            self.ha.all_ack = config.allAckInSyncStateSet
            self.pull_holds.ready = self.store.is_visible
            self.ha.on_confirm = self.pull_holds.recheck
        if self.acl is not None:  # checked first at the gate, on both ports
            self.dispatcher.request_hooks.insert(0, AclGate(self.acl))
        #: a slave's copy of its master's topics, offsets, delay offsets and groups (runs while a slave)
        self.slave_sync = SlaveSynchronize(ctx, self.remoting_client.invoke, lambda: self.role.master_addr)
        self._slave_sync_task: asyncio.Task[None] | None = None
        self.consumers.on_members_changed = self._on_members_changed
        self.dispatcher.close_listeners.append(self._on_connection_closed)
        self.role.on_change(self._on_role_changed)
        self.servers: list[RemotingServer] = []
        #: the remoting ports' poller (None: busyPollMaxMicros=0); its spun time is a metric
        self.busy_poller: BusyPoller | None = None
        #: Prometheus /metrics (metricsExporterType=PROM)
        self.metrics_endpoint: MetricsEndpoint | None = None
        self.boot_timestamp = ctx.boot_timestamp
        if config.grpcServerEnable and grpc is not None:
            self.grpc = grpc(self)
        self._tasks = TaskSet(log)
        self._started = False
        self._master_services_running = False

    @property
    def sync_flush(self) -> bool:
        return self.ctx.put_ack.sync_flush

    # --------------------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        cfg = self.config
        check_bind("the broker", "listenHost", cfg.listenHost, protected=cfg.aclEnable,
                   protection="aclEnable", allowed=cfg.allowInsecureBind)  # fmt: skip
        if cfg.metrics_on:
            check_bind("the broker's metrics endpoint", "metricsPromExporterHost", cfg.metrics_host,
                       protected=cfg.aclEnable, protection="aclEnable", allowed=cfg.allowInsecureBind)  # fmt: skip
        cfg.server_tls().context()  # a TLS file it cannot use stops start-up before the store is opened
        for manager in (self.topics, self.groups, self.offsets, self.schedule, self.timers, self.locks,
                        self.ctx.watermarks):  # fmt: skip
            manager.load()
        if not self.store.load():
            raise RuntimeError(f"the store under {cfg.storePathRootDir} could not be loaded")
        if self.role.is_master:
            # before the first pop can be served: its position must already be past every stored checkpoint
            self.revive.load()
        self.pull_holds.start()
        self.store.arrival_listener = self._on_arrival
        self.store.arrivals_listener = self._on_arrivals
        self.store.start()
        self.topics.persist()
        self.ctx.put_ack.start()
        for proc in self._processors:
            proc.register()
        # one poller for both ports: it keeps this loop turning, whichever socket the requests come on
        poller = BusyPoller(cfg.busyPollMaxMicros / 1e6) if cfg.busyPollMaxMicros > 0 else None
        self.busy_poller = poller
        # one ledger for both ports too: the connection count and the unfinished-frame budget are the broker's
        ledger = ConnectionLedger(cfg.server_limits(), "broker")
        requested_port = cfg.listenPort  # 0: any free port, and then any free HA port too
        main = RemotingServer(
            self.dispatcher, cfg.listenHost, cfg.listenPort, max_frame_size=cfg.maxFrameSize, busy_poller=poller,
            ledger=ledger, tls=cfg.server_tls(),
        )  # fmt: skip
        try:
            cfg.listenPort = await main.start()
        except BaseException:  # the port is taken (or the address is not ours): stop what start() began
            await self._undo_start()
            raise
        self.servers.append(main)
        if cfg.fastListenPortEnable and cfg.listenPort > 2 and cfg.listenPort == main.port and self._fixed_port:
            fast = RemotingServer(
                self.dispatcher, cfg.listenHost, cfg.listenPort - 2, max_frame_size=cfg.maxFrameSize,
                busy_poller=poller, ledger=ledger, tls=cfg.server_tls(),
            )  # fmt: skip
            try:
                await fast.start()
                self.servers.append(fast)
            except OSError as exc:
                log.warning("broker.fast_port_unavailable port=%s error=%s", cfg.listenPort - 2, exc)
        self.ctx.store_host = (store_ip(cfg.brokerIP1), cfg.listenPort)
        try:
            # an ephemeral main port (tests, listenPort=0) gets an ephemeral HA port; the registration advertises
            # the bound one
            ha_port = cfg.ha_port if (self._fixed_port and requested_port) or cfg.haListenPort else 0
            cfg.haListenPort = await self.ha.start(cfg.listenHost, ha_port)
        except BaseException:
            for server in self.servers:
                await server.close()
            await self._undo_start()
            raise
        if cfg.metrics_on:
            try:
                await self._start_metrics()
            except BaseException:  # the metrics port is taken: stop what start() began, as above
                await self.ha.stop()
                for server in self.servers:
                    await server.close()
                await self._undo_start()
                raise
        if self.grpc is not None:
            try:
                if not self._fixed_port:  # tests: an ephemeral main port gets an ephemeral gRPC port
                    self.grpc.port = 0
                cfg.grpcServerPort = await self.grpc.start()
            except BaseException:  # the gRPC port is taken: stop what start() began, as above
                if self.metrics_endpoint is not None:
                    await self.metrics_endpoint.close()
                await self.ha.stop()
                for server in self.servers:
                    await server.close()
                await self._undo_start()
                raise
        if self.replicas is None and self.role.is_slave and len(cfg.haMasterAddress) >= 6:  # Java's static rule
            self.ha.client.update_master_address(cfg.haMasterAddress)
        self.send.start()
        if self.role.is_master:
            self._start_master_services()
        else:
            self._start_slave_sync()
        if self.replicas is not None:
            self.replicas.config = replace(self.replicas.config, broker_addr=cfg.broker_addr)  # the bound port
            self.replicas.start()  # registration with the name servers starts once the controller named the role
        else:
            self.registration.start()
        self._tasks.every(lambda: cfg.clientScanIntervalMills / 1000.0, self._housekeeping, "housekeeping",
                          initial_delay=cfg.clientScanIntervalMills / 1000.0)  # fmt: skip
        self._tasks.every(lambda: cfg.consumerOffsetPersistIntervalMills / 1000.0, self._persist_offsets,
                          "persist-offsets", initial_delay=cfg.consumerOffsetPersistIntervalMills / 1000.0)  # fmt: skip
        self._tasks.every(lambda: 10.0, self._sample_stats, "sample-stats", initial_delay=10.0)
        if self.acl is not None:
            self._tasks.every(lambda: cfg.aclReloadIntervalMills / 1000.0, self._poll_acl, "acl-reload",
                              initial_delay=cfg.aclReloadIntervalMills / 1000.0)  # fmt: skip
        self._tasks.every(seconds_to_next_midnight, self._record_morning, "daily-stats",
                          initial_delay=seconds_to_next_midnight())  # fmt: skip
        self._started = True
        log.info(
            "broker.started name=%s listen=%s advertised=%s role=%s namesrv=%s store=%s",
            cfg.brokerName,
            ",".join(self.listen_addresses),
            cfg.broker_addr,
            self.role.role.value,
            cfg.namesrvAddr,
            cfg.storePathRootDir,
        )
        if not is_loopback(cfg.listenHost):
            log.info("broker.ha_peers listen=%s:%d admitted=%s", cfg.listenHost, cfg.haListenPort,
                     self.ha_peers.describe())  # fmt: skip
        if not is_loopback(cfg.listenHost) and not cfg.aclEnable:  # allowInsecureBind said so
            log.warning(
                "broker.insecure_bind listen=%s: allowInsecureBind=true and aclEnable=false, so anyone who can reach "
                "this port can send, consume and administer; keep it behind a firewall",
                ",".join(self.listen_addresses),
            )

    async def _undo_start(self) -> None:
        """``start`` failed before serving: stop the store's threads and the pull holds it started, so the
        process can report why and exit (``shutdown`` only stops a broker that started)."""
        for action in (self.pull_holds.close, self.persister.close, self.store.shutdown):
            try:
                result = action()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("broker.start_undo_failed step=%s", getattr(action, "__qualname__", action))

    @property
    def listen_addresses(self) -> list[str]:
        """Where the broker listens, as bound (main port first, then the VIP port); see ``broker_addr`` for the
        address it gives the name servers."""
        return [addr for server in self.servers for addr in server.bound_addresses]

    _fixed_port = True

    def use_ephemeral_port(self) -> None:
        """Tests: bind the main port to 0 and skip the VIP port."""
        self.config.listenPort = 0
        self._fixed_port = False

    async def shutdown(self) -> bool:
        """Stop everything, in Java's order; returns whether every step succeeded.

        A step that fails (a config file that cannot be written, say) is logged with its traceback and the
        others still run: every other file is saved and the store is shut down. The CLI exits 1 when this
        returns False (something could not be saved), 0 otherwise.
        """
        if not self._started:
            return True
        self._started = False
        ok = True

        async def step(name: str, action: Callable[[], Awaitable[object] | object]) -> None:
            nonlocal ok
            try:
                result = action()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                ok = False
                log.exception("broker.shutdown_step_failed step=%s; the other steps go on", name)

        if self.replicas is not None:
            await step("replicas", self.replicas.stop)
        await step("registration", self.registration.stop)
        try:
            async with asyncio.timeout(3):
                await step("unregister", self.registration.unregister_all)
        except TimeoutError:
            pass
        await step("tasks", self._tasks.aclose)
        await step("pull-holds", self.pull_holds.close)
        if self.grpc is not None:
            await step("grpc", self.grpc.stop)
        if self.metrics_endpoint is not None:
            await step("metrics", self.metrics_endpoint.close)
        await step("master-services", self._stop_master_services)
        for server in self.servers:
            await step("server", server.close)
        await step("send", self.send.stop)
        await step("replication", self.ha.stop)
        await step("remoting-client", self.remoting_client.close)
        # Background writes still running finish first: the final writes below are synchronous and complete.
        await step("persister", self.persister.close)
        await step("save consumerOffset.json", self.offsets.persist)
        await step("save topics.json", self.topics.persist)
        await step("save subscriptionGroup.json", self.groups.persist)
        await step("store", self.store.shutdown)
        log.info("broker.stopped name=%s clean=%s", self.config.brokerName, ok)
        return ok

    async def _start_metrics(self) -> None:
        """Serve /metrics; the rpc latency hooks go in only now, so a broker without the endpoint pays nothing."""
        registry, rpc = broker_registry(self)
        endpoint = MetricsEndpoint(registry, self.config.metrics_host, self.config.metricsPromExporterPort)
        await endpoint.start()
        self.metrics_endpoint = endpoint
        rpc.install(self.dispatcher)

    # ------------------------------------------------------------------------------------------ role

    def _start_master_services(self) -> None:
        """What only a master runs (Java's ``changeSpecialServiceStatus(true)``): delays, timers, checks."""
        if not self._master_services_running:
            self._master_services_running = True
            self.schedule.start()
            self.transactions.start()
            self.timers.start()
            self.revive.load()
            self.revive.start()

    async def _stop_master_services(self) -> None:
        if self._master_services_running:
            self._master_services_running = False
            errors = []
            for service in (self.schedule, self.transactions, self.timers, self.revive):  # one failing stops the others
                try:
                    await service.stop()
                except Exception as exc:
                    errors.append(exc)
            if errors:
                raise errors[0]

    def _start_slave_sync(self) -> None:
        """SlaveSynchronize while a slave: first after ~3 s (sooner when the interval is shorter), then every
        ``slaveSyncIntervalMills``."""
        if self._slave_sync_task is None:
            def interval() -> float:
                return self.config.slaveSyncIntervalMills / 1000.0

            self._slave_sync_task = self._tasks.every(
                interval, self.slave_sync.sync_all, "slave-sync", initial_delay=min(3.0, interval())
            )

    def _stop_slave_sync(self) -> None:
        task, self._slave_sync_task = self._slave_sync_task, None
        if task is not None:
            task.cancel()

    def _on_role_changed(self, before: RoleSnapshot, after: RoleSnapshot) -> None:
        if not self._started:
            return
        if after.role is not BrokerRole.SLAVE:
            self._stop_slave_sync()
            self.ha.client.update_master_address(None)  # a master follows nobody: no frame is applied after this
            if before.role is BrokerRole.SLAVE:
                self.store.drop_replica_tail()  # local puts must start after the last complete message
                self._reload_delay_offsets()
            self._start_master_services()
        else:
            self._start_slave_sync()
            self._tasks.spawn(self._stop_master_services(), "stop-master-services")
        self.registration.kick()  # the name servers learn the new role (brokerId) at once

    def _on_role_decided(self) -> None:
        """Controller mode: the controller named (or changed) the role: register now (the first time: start)."""
        if not self._started:
            return
        if not self.registration.running:
            self.registration.start()
        else:
            self.registration.kick()

    def _reload_delay_offsets(self) -> None:
        """A slave turned master delivers delayed messages from the progress SlaveSynchronize copied."""
        if self._master_services_running:
            return
        try:
            self.schedule.load()
        except Exception:  # a damaged copy: the delay service keeps the progress it had
            log.exception("broker.delay_offsets_reload_failed path=%s", self.schedule.path)

    def _on_register_result(self, result: RegisterBrokerResult) -> None:
        """A slave learns its master from the name server's REGISTER_BROKER answer."""
        if self.replicas is not None:  # the controller names the master; the name server its HA address
            self.replicas.on_namesrv_result(result.master_addr, result.ha_server_addr)
            return
        self.role.learn_master(result.master_addr)
        cfg = self.config
        if self.role.is_slave and len(cfg.haMasterAddress) < 6 and result.ha_server_addr:
            self.ha.client.update_master_address(result.ha_server_addr)

    # ------------------------------------------------------------------------------------ background

    async def _housekeeping(self) -> None:
        expiry = self.config.clientChannelExpiredTimeMills / 1000.0
        self.consumers.scan_expired(expiry)
        self.producers.scan_expired(expiry)

    async def _poll_acl(self) -> None:
        if self.acl is not None:
            self.acl.poll()  # a bad file is logged and the rules in force stay

    async def _sample_stats(self) -> None:
        self.metrics.sample_stats()

    async def _record_morning(self) -> None:
        self.metrics.record_morning()

    async def _persist_offsets(self) -> None:
        # The snapshot is taken on the loop; the write, fsync and renames run on the persister's thread, so a
        # slow disk never stalls sends and pulls.
        await self.offsets.persist_in_background(self.persister)

    # ------------------------------------------------------------------------------------- listeners

    def _on_arrival(
        self, topic: str, queue_id: int, next_offset: int, tags_code: int | None, store_ts: int, props: object
    ) -> None:
        """The store's arrival listener (any thread): parked pulls, and the delay and timer tasks waiting for work."""
        self.pull_holds.on_arrival(topic, queue_id, next_offset, tags_code, store_ts, props)
        if self.pop_service.parked:
            self.pull_holds.call_on_loop(self.pop_service.notify, topic)
        if topic == SCHEDULE_TOPIC:
            self.schedule.notify_scheduled()
        elif topic == TIMER_TOPIC:
            self.timers.notify_stored()

    def _on_arrivals(self, arrivals: list[tuple[str, int, int, int]], store_ts: int) -> None:
        """``_on_arrival`` for a run of plain messages: what it does per message, done once per run where once is
        the same (a parked pop or the delay and timer tasks need to hear of a topic once)."""
        self.pull_holds.on_arrivals(arrivals)
        topics = {arrival[0] for arrival in arrivals}
        if self.pop_service.parked:
            for topic in topics:
                self.pull_holds.call_on_loop(self.pop_service.notify, topic)
        if SCHEDULE_TOPIC in topics:
            self.schedule.notify_scheduled()
        if TIMER_TOPIC in topics:
            self.timers.notify_stored()

    def _on_connection_closed(self, conn: Connection) -> None:
        self.consumers.connection_closed(conn)
        self.producers.connection_closed(conn)

    def _on_members_changed(self, group: str, info: ConsumerGroupInfo) -> None:
        cfg = self.groups.get(group)
        if cfg is not None and not cfg.notify_consumer_ids_changed_enable:
            return
        ext = NotifyConsumerIdsChangedRequestHeader(consumer_group=group).to_ext()
        for ch in list(info.channels.values()):
            ch.conn.send_oneway(
                RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, dict(ext), language="JAVA")
            )
