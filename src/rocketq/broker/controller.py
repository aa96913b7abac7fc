"""BrokerController: composes the store, the managers, the processors and the background tasks."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from pathlib import Path

from rocketq.broker.client_manager import ConsumerGroupInfo, ConsumerManager, ProducerManager
from rocketq.broker.config import BrokerConfig
from rocketq.broker.lock_manager import QueueLockManager
from rocketq.broker.long_polling import PullHoldService
from rocketq.broker.offset_manager import ConsumerOffsetManager
from rocketq.broker.persist import BackgroundWriter
from rocketq.broker.processors.admin import AdminProcessors
from rocketq.broker.processors.clients import ClientProcessors
from rocketq.broker.processors.pull import PullProcessor
from rocketq.broker.processors.query import QueryProcessors
from rocketq.broker.processors.send import SendProcessor
from rocketq.broker.processors.send_back import SendBackProcessor
from rocketq.broker.processors.sink_commit import SinkCommitProcessor
from rocketq.broker.registration import NamesrvRegistration
from rocketq.broker.schedule import ScheduleService
from rocketq.broker.semantics import MessageSemantics
from rocketq.broker.stats import BrokerStats
from rocketq.broker.subscription_manager import SubscriptionGroupManager
from rocketq.broker.timer import TimerService
from rocketq.broker.topic_manager import TopicConfigManager
from rocketq.broker.transaction import TransactionService
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import NotifyConsumerIdsChangedRequestHeader
from rocketq.remoting.busy_poll import BusyPoller
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingDispatcher, RemotingServer
from rocketq.store import MessageStore, StoreConfig

log = logging.getLogger("rocketq.broker")


def store_config_from(cfg: BrokerConfig) -> StoreConfig:
    return StoreConfig(
        store_path_root_dir=cfg.storePathRootDir,
        mapped_file_size_commit_log=cfg.mappedFileSizeCommitLog,
        mapped_file_size_consume_queue=cfg.mappedFileSizeConsumeQueue,
        flush_disk_type=cfg.flushDiskType,
        flush_interval_commit_log=cfg.flushIntervalCommitLog,
        flush_commit_log_least_pages=cfg.flushCommitLogLeastPages,
        flush_commit_log_thorough_interval=cfg.flushCommitLogThoroughInterval,
        sync_flush_timeout=cfg.syncFlushTimeout,
        max_message_size=cfg.maxMessageSize,
        file_reserved_time=cfg.fileReservedTime,
        delete_when=cfg.deleteWhen,
        disk_max_used_space_ratio=cfg.diskMaxUsedSpaceRatio,
        max_hash_slot_num=cfg.maxHashSlotNum,
        max_index_num=cfg.maxIndexNum,
        message_delay_level=cfg.messageDelayLevel,
        check_crc_on_recover=cfg.checkCRCOnRecover,
        max_transfer_count_on_message_in_memory=cfg.maxTransferCountOnMessageInMemory,
        max_transfer_bytes_on_message_in_memory=cfg.maxTransferBytesOnMessageInMemory,
    )


class BrokerController:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        root = Path(config.storePathRootDir)
        config_dir = root / "config"
        self.topics = TopicConfigManager(
            config_dir,
            cluster_name=config.brokerClusterName,
            broker_name=config.brokerName,
            default_topic_queue_nums=config.defaultTopicQueueNums,
            auto_create_topic_enable=config.autoCreateTopicEnable,
            cluster_topic_enable=config.clusterTopicEnable,
            broker_topic_enable=config.brokerTopicEnable,
            delay_level_count=len(config.delay_levels_ms()),
        )
        self.groups = SubscriptionGroupManager(config_dir, auto_create=config.autoCreateSubscriptionGroup)
        self.offsets = ConsumerOffsetManager(config_dir)
        #: the thread periodic config persisters write through (offsets, delay and timer progress, queue locks)
        self.persister = BackgroundWriter()
        self.consumers = ConsumerManager()
        self.consumers.on_members_changed = self._on_members_changed
        self.producers = ProducerManager()
        self.locks = QueueLockManager(config.lockMaxLiveTimeMills / 1000.0, path=config_dir / "queueLocks.json")
        self.locks.writer = self.persister
        self.stats = BrokerStats()
        self.semantics = MessageSemantics(self)
        self.store = MessageStore(store_config_from(config))
        self.dispatcher = RemotingDispatcher("broker")
        self.dispatcher.close_listeners.append(self._on_connection_closed)
        self.remoting_client = RemotingClient()
        self.send = SendProcessor(self)
        self.pull = PullProcessor(self)
        self.pull_holds = PullHoldService(self.pull.rerun)
        self.sink_commit = SinkCommitProcessor(self)
        self.registration = NamesrvRegistration(self)
        self.transactions = TransactionService(self)
        self.timers = TimerService(self, interval=config.scheduleIntervalMills / 1000.0)
        self.schedule = ScheduleService(self, interval=config.scheduleIntervalMills / 1000.0)
        self.servers: list[RemotingServer] = []
        self.boot_timestamp = int(time.time() * 1000)
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._started = False

    @property
    def sync_flush(self) -> bool:
        return self.config.flushDiskType == "SYNC_FLUSH"

    # --------------------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        cfg = self.config
        self.topics.load()
        self.groups.load()
        self.offsets.load()
        self.schedule.load()
        self.timers.load()
        self.locks.load()
        if not self.store.load():
            raise RuntimeError(f"the store under {cfg.storePathRootDir} could not be loaded")
        self.store.arrival_listener = self._on_message_arrival
        self.store.start()
        self.topics.persist()
        processors = (
            self.send,
            self.pull,
            SendBackProcessor(self),
            ClientProcessors(self),
            QueryProcessors(self),
            self.sink_commit,
        )
        for proc in (*processors, self.transactions, AdminProcessors(self)):
            proc.register()
        self.dispatcher.hooks.append(self._wrap_broker_errors)
        # one poller for both ports: it keeps this loop turning, whichever socket the requests come on
        poller = BusyPoller(cfg.busyPollMaxMicros / 1e6) if cfg.busyPollMaxMicros > 0 else None
        main = RemotingServer(
            self.dispatcher, cfg.listenHost, cfg.listenPort, max_frame_size=cfg.maxFrameSize, busy_poller=poller
        )
        cfg.listenPort = await main.start()
        self.servers.append(main)
        if cfg.fastListenPortEnable and cfg.listenPort > 2 and cfg.listenPort == main.port and self._fixed_port:
            fast = RemotingServer(
                self.dispatcher, cfg.listenHost, cfg.listenPort - 2, max_frame_size=cfg.maxFrameSize,
                busy_poller=poller,
            )  # fmt: skip
            try:
                await fast.start()
                self.servers.append(fast)
            except OSError as exc:
                log.warning("broker.fast_port_unavailable port=%s error=%s", cfg.listenPort - 2, exc)
        self.send.store_host = (cfg.brokerIP1, cfg.listenPort)
        self.send.start()
        if not cfg.is_slave:
            self.schedule.start()
            self.transactions.start()
            self.timers.start()
        self.registration.start()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._housekeeping()))
        self._tasks.append(loop.create_task(self._persist_offsets()))
        self._started = True
        log.info(
            "broker.started name=%s addr=%s namesrv=%s store=%s",
            cfg.brokerName,
            cfg.broker_addr,
            cfg.namesrvAddr,
            cfg.storePathRootDir,
        )

    _fixed_port = True

    def use_ephemeral_port(self) -> None:
        """Tests: bind the main port to 0 and skip the VIP port."""
        self.config.listenPort = 0
        self._fixed_port = False

    async def shutdown(self) -> None:
        if not self._started:
            return
        self._started = False
        await self.registration.stop()
        try:
            async with asyncio.timeout(3):
                await self.registration.unregister_all()
        except TimeoutError:
            pass
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.pull_holds.close()
        await self.schedule.stop()
        await self.transactions.stop()
        await self.timers.stop()
        for server in self.servers:
            await server.close()
        await self.send.stop()
        await self.remoting_client.close()
        # Background writes still running finish first: the final writes below are synchronous and complete.
        self.persister.close()
        self.offsets.persist()
        self.topics.persist()
        self.groups.persist()
        self.store.shutdown()
        log.info("broker.stopped name=%s", self.config.brokerName)

    # ------------------------------------------------------------------------------------ background

    async def _housekeeping(self) -> None:
        interval = self.config.clientScanIntervalMills / 1000.0
        expiry = self.config.clientChannelExpiredTimeMills / 1000.0
        while True:
            await asyncio.sleep(interval)
            try:
                self.consumers.scan_expired(expiry)
                self.producers.scan_expired(expiry)
            except Exception:
                log.exception("housekeeping.failed")

    async def _persist_offsets(self) -> None:
        # The snapshot is taken on the loop; the write, fsync and renames run on the persister's thread, so a
        # slow disk never stalls sends and pulls (it used to: one synchronous fsync every 5 s).
        interval = self.config.consumerOffsetPersistIntervalMills / 1000.0
        while True:
            await asyncio.sleep(interval)
            try:
                await self.offsets.persist_in_background(self.persister)
            except OSError:
                log.exception("offsets.persist_failed")

    def schedule_register(self) -> None:
        self.registration.kick()

    # ------------------------------------------------------------------------------------- listeners

    def _on_message_arrival(
        self, topic: str, queue_id: int, next_offset: int, tags_code: int | None, store_ts: int, props: object
    ) -> None:
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            self.pull_holds.notify_arrival(topic, queue_id, next_offset, tags_code)
        else:
            loop.call_soon_threadsafe(self.pull_holds.notify_arrival, topic, queue_id, next_offset, tags_code)

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

    @staticmethod
    def _wrap_broker_errors(conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        # The single place every request passes through: ACL checks will go here.
        return None

    def is_offset_in_disk(self, topic: str, queue_id: int, offset: int) -> bool:
        """Whether the message at ``offset`` has likely left the page cache (RocketMQ: > 40 % of RAM behind)."""
        try:
            ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            ram = 8 << 30
        distance = self.store.get_max_phy_offset() - self.store.get_min_phy_offset()
        return distance > ram * 0.4


def broker_error_response(cmd: RemotingCommand, exc: BrokerError) -> RemotingCommand:
    return cmd.response(exc.code or ResponseCode.SYSTEM_ERROR, exc.remark)
