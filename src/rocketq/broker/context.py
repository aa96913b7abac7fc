"""BrokerContext: what processors and services are handed instead of the controller.

The controller is the composition root only: it builds the managers and services, puts them in one context,
registers the processors and starts and stops the services. A processor or service takes the context (or a
narrower piece of it) and never imports the controller, so ``broker/`` has no import circle and each piece
can be built alone in a test with fakes where it needs them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from rocketq.broker.config import BrokerConfig
from rocketq.broker.managers.client_manager import ConsumerManager, ProducerManager
from rocketq.broker.managers.lock_manager import QueueLockManager
from rocketq.broker.managers.offset_manager import ConsumerOffsetManager
from rocketq.broker.managers.persist import BackgroundWriter
from rocketq.broker.managers.sink_watermark import SinkWatermarkManager
from rocketq.broker.managers.subscription_manager import SubscriptionGroupManager
from rocketq.broker.managers.topic_manager import TopicConfigManager
from rocketq.broker.messaging.put_ack import PutAck
from rocketq.broker.metrics import BrokerMetrics
from rocketq.broker.role import BrokerRoleState
from rocketq.protocol.bodies import PERM_WRITE
from rocketq.remoting.server import RemotingDispatcher
from rocketq.store import MessageStore


class Registrar(Protocol):
    """Registration with the name servers (``rocketq.broker.services.registration.NamesrvRegistration``)."""

    def kick(self) -> None:
        """Register again soon (coalesced)."""

    async def register_all(self) -> None:
        """Register with every name server now; returns when each has answered or failed."""


class FrontEnd(Protocol):
    """A second front over the broker's services (the 5.x gRPC endpoint): built by a factory the composition
    root hands the controller, since ``broker/`` may not import the packages above it."""

    port: int

    @property
    def address(self) -> str: ...

    async def start(self) -> int:
        """Listen; the bound port."""

    async def stop(self) -> None: ...


class _NotRegistering:
    """Until the controller plugs in the real registration (and in unit tests)."""

    def kick(self) -> None:
        pass

    async def register_all(self) -> None:
        await asyncio.sleep(0)


@dataclass(eq=False)
class BrokerContext:
    config: BrokerConfig
    role: BrokerRoleState
    store: MessageStore
    topics: TopicConfigManager
    groups: SubscriptionGroupManager
    offsets: ConsumerOffsetManager
    consumers: ConsumerManager
    producers: ProducerManager
    locks: QueueLockManager
    watermarks: SinkWatermarkManager
    metrics: BrokerMetrics
    persister: BackgroundWriter
    put_ack: PutAck
    #: the one gate requests come in by and answers leave by (answers written later go through ``reply``)
    gate: RemotingDispatcher
    registrar: Registrar = field(default_factory=_NotRegistering)
    boot_timestamp: int = 0
    #: the host stored in each record; set again once the listening port is known
    store_host: tuple[str, int] = ("127.0.0.1", 0)
    #: called after UPDATE_BROKER_CONFIG changed ``config`` (a part that worked something out from it redoes it)
    config_listeners: list[Callable[[], None]] = field(default_factory=list)

    async def publish_topics(self) -> None:
        """Wait until the topic table is on disk and the name servers have it (Java persists and registers
        before it answers a request that created a topic)."""
        await self.topics.flushed()
        await self.registrar.register_all()

    def writable(self) -> bool:
        """The broker takes writes: a master whose permission has WRITE."""
        return bool(self.config.brokerPermission & PERM_WRITE) and self.role.is_master
