"""What the push and lite-pull consumers share: the ``MQConsumerInner`` plumbing and the pull back-off delays.

Java has no shared class here — ``DefaultMQPushConsumerImpl`` and ``DefaultLitePullConsumerImpl`` each implement
``MQConsumerInner`` and each carry the same ``subscriptions``/``updateTopicSubscribeInfo``/
``isSubscribeTopicNeedUpdate`` and ``RebalanceImpl`` hooks. Here they live once: ``ConsumerBase`` (the settings
every consumer has, the instance it runs on, the callbacks ``ClientInstance`` makes) and ``ConsumerRebalance``
(the rebalance hooks both consumers answer the same way). A later POP consumer builds on the same base.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from rocketq.client._client_base import ClientBase
from rocketq.client._instance import ClientInstance, unique_instance_name
from rocketq.client._pull_api import PullAPIWrapper
from rocketq.client._rebalance import RebalanceImpl
from rocketq.client._tasks import TaskSet
from rocketq.client._util import now_ms
from rocketq.client.allocate import AllocateMessageQueueAveragely, AllocateMessageQueueStrategy
from rocketq.client.config import ClientConfig
from rocketq.client.offset_store import LocalFileOffsetStore, OffsetStore, RemoteBrokerOffsetStore
from rocketq.client.process_queue import ProcessQueue
from rocketq.client.subscription import (
    ConsumeFromWhere,
    MessageModel,
    MessageSelector,
    build_subscription_data,
    parse_consume_timestamp,
)
from rocketq.errors import ProtocolError, RemotingError
from rocketq.protocol.bodies import MessageQueue, SubscriptionData
from rocketq.protocol.topics import retry_topic

__all__ = [
    "PULL_DELAY_WHEN_BROKER_FLOW_CONTROL",
    "PULL_DELAY_WHEN_CACHE_FLOW_CONTROL",
    "ConsumerBase",
    "ConsumerRebalance",
    "cache_flow_control_delay",
]

#: Java PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL / _BROKER_FLOW_CONTROL, seconds.
PULL_DELAY_WHEN_CACHE_FLOW_CONTROL = 0.05
PULL_DELAY_WHEN_BROKER_FLOW_CONTROL = 0.02

R = TypeVar("R", bound="ConsumerRebalance")


def cache_flow_control_delay(pq: ProcessQueue, max_count: int, max_size_mib: int, max_span: int | None) -> float | None:
    """``PULL_DELAY_WHEN_CACHE_FLOW_CONTROL`` when ``pq`` caches more than ``max_count`` messages or
    ``max_size_mib`` MiB, or spans more than ``max_span`` offsets (None: no span limit); else None."""
    if pq.msg_count > max_count:
        return PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
    if pq.msg_size // (1024 * 1024) > max_size_mib:
        return PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
    if max_span is not None and pq.max_span > max_span:
        return PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
    return None


class ConsumerBase(ClientBase):
    """The settings, state and ``ClientInstance`` callbacks (``MQConsumerInner``) every consumer has.

    A subclass's ``start()`` opens with ``_open`` (instance, rebalance, pull API, offset store); it implements
    ``start``/``shutdown`` and the rest of ``MQConsumerInner``. Durations are seconds.
    """

    _rebalance: ConsumerRebalance | None
    _tasks: TaskSet

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None,
        config: ClientConfig | None,
        message_model: MessageModel,
        consume_from_where: ConsumeFromWhere,
        consume_timestamp: str | int | float | None,
        allocate_strategy: AllocateMessageQueueStrategy | None,
        offset_store: OffsetStore | None,
        local_offset_store_dir: str | None,
    ) -> None:
        super().__init__(group, namesrv_addr, config)
        self.message_model_enum = message_model
        self.consume_from_where_enum = consume_from_where
        ts = consume_timestamp if consume_timestamp is not None else time.time() - 30 * 60
        self.consume_timestamp_ms = parse_consume_timestamp(ts)
        self.allocate_strategy: AllocateMessageQueueStrategy = allocate_strategy or AllocateMessageQueueAveragely()
        self.offset_store: OffsetStore | None = offset_store
        self.local_offset_store_dir = local_offset_store_dir
        self._subscriptions: dict[str, str | MessageSelector] = {}
        self._rebalance = None
        self._pull_api: PullAPIWrapper | None = None
        self._stopping = False

    @property
    def message_model(self) -> str:
        return self.message_model_enum.value

    @property
    def consume_from_where(self) -> str:
        return self.consume_from_where_enum.value

    _kind = "consumer"

    async def _open(self, make_rebalance: Callable[[ClientInstance], R], *, retry_subscription: bool) -> R:
        """The start both consumers begin with: a ``ClientInstance`` (a unique instance name when CLUSTERING), a
        rebalance holding the subscriptions (and, with ``retry_subscription``, the group's retry topic when
        CLUSTERING), the pull API, the loaded offset store."""
        if self.message_model_enum is MessageModel.CLUSTERING and self.config.instance_name == "DEFAULT":
            self.config.instance_name = unique_instance_name()
        instance = ClientInstance(self.config)
        self._instance = instance
        rebalance = make_rebalance(instance)
        for topic, expr in self._subscriptions.items():
            rebalance.subscription_inner[topic] = build_subscription_data(topic, expr)
        if retry_subscription and self.message_model_enum is MessageModel.CLUSTERING:
            rt = retry_topic(self.group)
            rebalance.subscription_inner[rt] = build_subscription_data(rt, "*")
        self._rebalance = rebalance
        self._pull_api = PullAPIWrapper(instance, self.group)
        await self._load_offset_store(instance)
        return rebalance

    async def _update_subscribed_routes(self, instance: ClientInstance, logger: logging.Logger) -> None:
        """Fetch the route of every subscribed topic; a failure is logged (the periodic refresh retries)."""
        assert self._rebalance is not None
        for topic in list(self._rebalance.subscription_inner):
            try:
                await instance.update_topic_route(topic)
            except (RemotingError, ProtocolError) as exc:
                logger.warning("consumer.route_failed topic=%s error=%s", topic, exc)

    async def _load_offset_store(self, instance: ClientInstance) -> OffsetStore:
        """The offset store given to the constructor, else the message model's (Java: a local file when
        BROADCASTING, the broker otherwise), loaded."""
        if self.offset_store is None:
            if self.message_model_enum is MessageModel.BROADCASTING:
                self.offset_store = LocalFileOffsetStore(instance.client_id, self.group, self.local_offset_store_dir)
            else:
                self.offset_store = RemoteBrokerOffsetStore(instance, self.group)
        await self.offset_store.load()
        return self.offset_store

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """Subscribe ``topic`` with a tag expression (``"*"``, ``"A || B"``) or ``MessageSelector.by_sql(...)``."""
        self._subscriptions[topic] = expression
        if self._rebalance is not None and self._instance is not None:
            self._rebalance.subscription_inner[topic] = build_subscription_data(topic, expression)
            self._instance.tasks.spawn(self._after_subscription_change(topic), "subscribe")

    def unsubscribe(self, topic: str) -> None:
        self._subscriptions.pop(topic, None)
        if self._rebalance is not None:
            self._rebalance.subscription_inner.pop(topic, None)

    async def _after_subscription_change(self, topic: str) -> None:
        """A subscription added while running: fetch its route, tell the brokers, rebalance now."""
        assert self._instance is not None
        await self._instance.update_topic_route(topic)
        await self._instance.send_heartbeat_to_all_brokers()
        self._instance.rebalance_immediately()

    # -- MQConsumerInner (called by the instance) ---------------------------------------------------------------

    def subscriptions(self) -> list[SubscriptionData]:
        return list(self._rebalance.subscription_inner.values()) if self._rebalance else []

    def update_topic_subscribe_info(self, topic: str, mqs: set[MessageQueue]) -> None:
        if self._rebalance is not None and topic in self._rebalance.subscription_inner:
            self._rebalance.topic_subscribe_info_table[topic] = set(mqs)

    def is_subscribe_topic_need_update(self, topic: str) -> bool:
        if self._rebalance is None or topic not in self._rebalance.subscription_inner:
            return False
        return topic not in self._rebalance.topic_subscribe_info_table

    def _running_info(self, properties: dict[str, str], mq_table: dict[MessageQueue, Any]) -> dict[str, Any]:
        """GET_CONSUMER_RUNNING_INFO's answer (Java ``ConsumerRunningInfo``) around a consumer's own parts."""
        return {
            "jstack": "",
            "mqTable": mq_table,
            "properties": properties,
            "statusTable": {},
            "subscriptionSet": [s.to_json() for s in self.subscriptions()],
        }


class ConsumerRebalance(RebalanceImpl):
    """The ``RebalanceImpl`` hooks both consumers answer alike: offsets come from the consumer's store, where it
    says to start; a changed queue set bumps the subscription's version and is told to the brokers."""

    def __init__(self, consumer: ConsumerBase, instance: ClientInstance) -> None:
        super().__init__(consumer.group, consumer.message_model, consumer.allocate_strategy, instance)
        self.consumer = consumer

    async def message_queue_changed(self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]) -> None:
        sub = self.subscription_inner.get(topic)
        if sub is not None:
            sub.sub_version = now_ms()
        await self.instance.send_heartbeat_to_all_brokers()

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        assert self.consumer.offset_store is not None
        self.consumer.offset_store.remove_offset(mq)

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        c = self.consumer
        assert c.offset_store is not None
        return await self.start_offset(c.offset_store, c.consume_from_where_enum, c.consume_timestamp_ms, mq)
