"""A broker context built from parts, no sockets: real managers and a real small store in ``tmp_path``, a
recording registrar, and fake connections that keep what is written to them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.broker.config_views import store_config_from
from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.client_manager import ConsumerManager, ProducerManager
from rocketq.broker.managers.lock_manager import QueueLockManager
from rocketq.broker.managers.offset_manager import ConsumerOffsetManager
from rocketq.broker.managers.persist import BackgroundWriter
from rocketq.broker.managers.sink_watermark import SinkWatermarkManager
from rocketq.broker.managers.subscription_manager import SubscriptionGroupManager
from rocketq.broker.managers.topic_manager import TopicConfigManager
from rocketq.broker.messaging.put_ack import PutAck
from rocketq.broker.metrics import BrokerMetrics
from rocketq.broker.role import BrokerRole, BrokerRoleState
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.server import RemotingDispatcher
from rocketq.store import MessageStore


class RecordingRegistrar:
    def __init__(self) -> None:
        self.kicks = 0
        self.registrations = 0

    def kick(self) -> None:
        self.kicks += 1

    async def register_all(self) -> None:
        self.registrations += 1


class FakeConnection:
    """What a processor sees of a connection; answers land in ``written``."""

    def __init__(self, language: str = "JAVA", version: int = 409) -> None:
        self.remote = "10.0.0.9:50000"
        self.remote_host = ("10.0.0.9", 50000)
        self.language = language
        self.version = version
        self.closed = False
        self.written: list[RemotingCommand] = []
        self.frames: list[bytes] = []

    def write(self, cmd: RemotingCommand) -> None:
        self.written.append(cmd)

    def write_frame(self, head: bytes, body: bytes = b"") -> None:
        self.frames.append(head + body)

    def write_frames(self, frames: list[bytes]) -> None:
        self.frames.extend(frames)

    def send_oneway(self, cmd: RemotingCommand) -> None:
        self.written.append(cmd)


def make_context(tmp_path: Path, role: BrokerRole = BrokerRole.ASYNC_MASTER, **config: Any) -> BrokerContext:
    values: dict[str, Any] = {
        "storePathRootDir": str(tmp_path / "store"),
        "mappedFileSizeCommitLog": 1 << 20,
        "mappedFileSizeConsumeQueue": 20 * 1000,
        "maxHashSlotNum": 64,
        "maxIndexNum": 256,
        **config,
    }
    cfg = BrokerConfig.from_mapping({k: str(v) for k, v in values.items()})
    config_dir = tmp_path / "store" / "config"
    store = MessageStore(store_config_from(cfg))
    assert store.load()
    store.start()
    role_state = BrokerRoleState(role)
    gate = RemotingDispatcher("test")
    return BrokerContext(
        config=cfg,
        role=role_state,
        store=store,
        topics=TopicConfigManager(config_dir, cluster_name=cfg.brokerClusterName, broker_name=cfg.brokerName),
        groups=SubscriptionGroupManager(config_dir),
        offsets=ConsumerOffsetManager(config_dir),
        consumers=ConsumerManager(),
        producers=ProducerManager(),
        locks=QueueLockManager(),
        watermarks=SinkWatermarkManager(config_dir),
        metrics=BrokerMetrics(store.stats_service, gate.answer_counts),
        persister=BackgroundWriter(),
        put_ack=PutAck(store, role_state, sync_flush=cfg.flushDiskType == "SYNC_FLUSH"),
        gate=gate,
        registrar=RecordingRegistrar(),
        store_host=("127.0.0.1", 10911),
    )


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[BrokerContext]:
    context = make_context(tmp_path)
    yield context
    context.store.shutdown()
    context.persister.close()
