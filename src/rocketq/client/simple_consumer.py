"""``SimpleConsumer``: RocketMQ 5's message-level consumer (POP) over the remoting protocol.

As the 5.x SDKs' ``SimpleConsumer``: no queues are owned; ``receive`` pops up to ``max_messages`` from one
broker (all masters of the subscribed topics' routes, in turn; queue -1: the broker picks), long-polling up to
``await_duration``; every message stays invisible to the group for ``invisible_duration`` and comes back
(``delivery_attempt`` + 1) unless ``ack``-ed in time; ``change_invisible_duration`` restarts that clock and gives
the message a new handle. A FIFO consumer pops with ``order=true``: the broker hands out a queue's next messages
only when the earlier ones are acked or expired. ``fifo=None`` (the default) asks the first broker popped from
whether the group is orderly (``consumeMessageOrderly``, GET_SUBSCRIPTIONGROUP_CONFIG) — as the 5.x proxy decides
from the group — and takes False from a broker that cannot say.

The consumer heartbeats as CONSUME_ACTIVELY with its subscriptions; durations are seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from rocketq.client._client_base import ClientBase
from rocketq.client._instance import ClientInstance, unique_instance_name
from rocketq.client._pop_api import (
    ack_message,
    batch_ack_message,
    change_invisible_time,
    group_is_orderly,
    handle_of,
    pop_message,
)
from rocketq.client._pop_handle import PROP_POP_CK, PopHandle
from rocketq.client._rebalance import CONSUME_ACTIVELY
from rocketq.client._util import now_ms
from rocketq.client.config import ClientConfig
from rocketq.client.errors import BrokerNotFoundError, NoRouteError
from rocketq.client.message import MessageExt
from rocketq.client.subscription import MessageSelector, build_subscription_data
from rocketq.errors import ClientError
from rocketq.protocol.bodies import MessageQueue, SubscriptionData
from rocketq.protocol.headers import PopMessageRequestHeader
from rocketq.protocol.message import PROP_SHARDING_KEY
from rocketq.protocol.route import MASTER_ID

__all__ = ["MAX_RECEIVE", "MessageView", "SimpleConsumer"]

log = logging.getLogger("rocketq.client.simple_consumer")

#: a broker pops at most 32 messages a request (more: INVALID_PARAMETER)
MAX_RECEIVE = 32
_PERM_READ = 4
#: Java's PopMessageRequestHeader initMode values
_INIT_MODES = {"MIN": 0, "MAX": 1}


class MessageView(MessageExt):
    """A received message: a ``MessageExt`` (``topic`` is the subscribed topic, also for a redelivered message
    read from ``%RETRY%<group>_<topic>``) with its receipt handle."""

    __slots__ = ()

    @property
    def receipt_handle(self) -> str:
        """The handle to ack with (Java's ``POP_CK`` / ``extraInfo``); replaced by ``change_invisible_duration``."""
        return self.properties.get(PROP_POP_CK, "")

    @property
    def delivery_attempt(self) -> int:
        return self.reconsume_times + 1

    @property
    def message_group(self) -> str | None:
        """The FIFO message group the producer set (``__SHARDINGKEY``)."""
        return self.properties.get(PROP_SHARDING_KEY)

    @property
    def handle(self) -> PopHandle:
        return PopHandle.parse(self.receipt_handle)


class SimpleConsumer(ClientBase):
    """POP consumer of ``group`` for ``subscriptions`` ({topic: tag expression or ``MessageSelector``})."""

    _kind = "consumer"
    consume_type = CONSUME_ACTIVELY
    message_model = "CLUSTERING"
    consume_from_where = "CONSUME_FROM_LAST_OFFSET"

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        config: ClientConfig | None = None,
        subscriptions: Mapping[str, str | MessageSelector] | None = None,
        await_duration: float = 5.0,
        invisible_duration: float = 30.0,
        fifo: bool | None = None,
        init_mode: str = "MAX",
    ) -> None:
        super().__init__(group, namesrv_addr, config)
        if await_duration < 0:
            raise ValueError("await_duration must not be negative")
        if init_mode not in _INIT_MODES:
            raise ValueError(f"init_mode must be MIN or MAX, not {init_mode!r}")
        self._check_duration(invisible_duration)
        self.await_duration = await_duration
        self.invisible_duration = invisible_duration
        #: pop with order=true; None until asked from the broker (see the module docstring)
        self.fifo = fifo
        self.init_mode = init_mode
        #: the ClientInstance's rebalance loop asks every consumer; a POP consumer has nothing to rebalance
        self.rebalance_interval = 20.0
        self._subs: dict[str, SubscriptionData] = {
            t: build_subscription_data(t, e) for t, e in (subscriptions or {}).items()
        }
        self._readable: dict[str, set[MessageQueue]] = {}
        self._topic_turn = 0
        self._broker_turn = 0

    @staticmethod
    def _check_duration(seconds: float) -> None:
        if seconds <= 0:
            raise ValueError("an invisible duration must be positive")

    # -- lifecycle ----------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._running:
            return
        if self.config.instance_name == "DEFAULT":
            self.config.instance_name = unique_instance_name()
        instance = ClientInstance(self.config)
        self._instance = instance
        instance.register_consumer(self)
        self._running = True
        await instance.start()
        for topic in list(self._subs):
            await self._refresh_route(instance, topic)
        await instance.send_heartbeat_to_all_brokers()
        log.info("simple_consumer.started group=%s client_id=%s", self.group, instance.client_id)

    async def shutdown(self) -> None:
        if not self._running or self._instance is None:
            return
        instance = self._instance
        self._running = False
        await instance.unregister_consumer(self.group)
        await instance.shutdown()
        log.info("simple_consumer.stopped group=%s", self.group)

    async def _refresh_route(self, instance: ClientInstance, topic: str) -> None:
        try:
            await instance.update_topic_route(topic)
        except ClientError:
            raise
        except Exception as exc:  # a route the periodic refresh retries; receive says what is missing
            log.warning("simple_consumer.route_failed topic=%s error=%s", topic, exc)

    # -- subscriptions ------------------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        self._subs[topic] = build_subscription_data(topic, expression)

    def unsubscribe(self, topic: str) -> None:
        self._subs.pop(topic, None)
        self._readable.pop(topic, None)

    def subscriptions(self) -> list[SubscriptionData]:
        return list(self._subs.values())

    # -- receive / ack / change ---------------------------------------------------------------------------

    async def receive(
        self, max_messages: int = 16, invisible_duration: float | None = None, *, topic: str | None = None
    ) -> list[MessageView]:
        """Up to ``max_messages`` (1..32) messages of one subscribed topic (each in turn, or ``topic``) from one
        broker, waiting up to ``await_duration`` for one to arrive; an empty list when none came."""
        instance = self.instance
        if not 1 <= max_messages <= MAX_RECEIVE:
            raise ValueError(f"max_messages must be 1..{MAX_RECEIVE}, not {max_messages}")
        invisible = self.invisible_duration if invisible_duration is None else invisible_duration
        self._check_duration(invisible)
        if not self._subs:
            raise ClientError(f"the simple consumer {self.group!r} has no subscription")
        if topic is None:
            topics = sorted(self._subs)
            topic = topics[self._topic_turn % len(topics)]
            self._topic_turn += 1
        elif topic not in self._subs:
            raise ClientError(f"the simple consumer {self.group!r} does not subscribe {topic!r}")
        sub = self._subs[topic]
        broker_name, addr = await self._pick_broker(instance, topic)
        if self.fifo is None:
            self.fifo = bool(await group_is_orderly(instance.api, addr, self.group, instance.timeout))
        poll_ms = int(self.await_duration * 1000)
        header = PopMessageRequestHeader(
            consumer_group=self.group, topic=topic, queue_id=-1, max_msg_nums=max_messages,
            invisible_time=int(invisible * 1000), poll_time=poll_ms, born_time=now_ms(),
            init_mode=_INIT_MODES[self.init_mode], exp_type=sub.expression_type, exp=sub.sub_string,
            order=self.fifo,
        )  # fmt: skip
        # as Java, the answer may take the poll time plus the usual request time
        wait = instance.timeout + self.await_duration
        answer = await pop_message(instance.api, addr, broker_name, header, MessageView, wait)
        return answer.messages  # type: ignore[return-value]

    async def _pick_broker(self, instance: ClientInstance, topic: str) -> tuple[str, str]:
        """The next master (in turn) with readable queues of ``topic``."""
        names = self._readable_brokers(instance, topic)
        if not names:
            await self._refresh_route(instance, topic)
            names = self._readable_brokers(instance, topic)
        if not names:
            raise NoRouteError(topic, "no broker has readable queues of it")
        for _ in range(len(names)):
            name = names[self._broker_turn % len(names)]
            self._broker_turn += 1
            found = instance.find_broker_address_in_subscribe(name, MASTER_ID, True)
            if found is not None:
                return name, found[0]
        raise BrokerNotFoundError(names[0])

    @staticmethod
    def _readable_brokers(instance: ClientInstance, topic: str) -> list[str]:
        route = instance.routes.route(topic)
        if route is None:
            return []
        return sorted({q.broker_name for q in route.queue_datas if q.perm & _PERM_READ and q.read_queue_nums > 0})

    async def ack(self, msg: MessageExt) -> None:
        """Acknowledge ``msg``: it is not delivered again. A refused ack (the handle expired and the message was
        revived, a wrong handle) raises the broker's ``BrokerError``."""
        instance = self.instance
        handle = handle_of(msg)
        addr = await self._broker_addr(instance, handle.broker_name, msg.topic)
        await ack_message(instance.api, addr, self.group, msg.topic, handle, instance.timeout)

    async def batch_ack(self, msgs: Sequence[MessageExt]) -> None:
        """Acknowledge several messages of one subscribed topic with one BATCH_ACK_MESSAGE per broker (Java's
        ``batchAckMessageAsync``)."""
        instance = self.instance
        by_broker: dict[str, list[PopHandle]] = {}
        topics = {m.topic for m in msgs}
        if len(topics) > 1:
            raise ValueError(f"a batch ack names one topic, not {sorted(topics)}")
        for m in msgs:
            h = handle_of(m)
            by_broker.setdefault(h.broker_name, []).append(h)
        for broker_name, handles in by_broker.items():
            addr = await self._broker_addr(instance, broker_name, msgs[0].topic)
            await batch_ack_message(instance.api, addr, self.group, msgs[0].topic, handles, instance.timeout)

    async def change_invisible_duration(self, msg: MessageExt, duration: float) -> None:
        """Make ``msg`` invisible for ``duration`` seconds from now; ``msg``'s handle becomes the new one."""
        self._check_duration(duration)
        instance = self.instance
        handle = handle_of(msg)
        addr = await self._broker_addr(instance, handle.broker_name, msg.topic)
        new = await change_invisible_time(
            instance.api, addr, self.group, msg.topic, handle, int(duration * 1000), instance.timeout
        )
        msg.properties[PROP_POP_CK] = new.text

    async def _broker_addr(self, instance: ClientInstance, broker_name: str, topic: str) -> str:
        found = instance.find_broker_address_in_subscribe(broker_name, MASTER_ID, True)
        if found is None:
            await self._refresh_route(instance, topic)
            found = instance.find_broker_address_in_subscribe(broker_name, MASTER_ID, True)
        if found is None:
            raise BrokerNotFoundError(broker_name)
        return found[0]

    # -- MQConsumerInner (called by the instance) ---------------------------------------------------------

    def update_topic_subscribe_info(self, topic: str, mqs: set[MessageQueue]) -> None:
        if topic in self._subs:
            self._readable[topic] = set(mqs)

    def is_subscribe_topic_need_update(self, topic: str) -> bool:
        return topic in self._subs and topic not in self._readable

    async def do_rebalance(self) -> None:
        """Nothing: POP consumers own no queues."""

    async def persist_consumer_offset(self) -> None:
        """Nothing: the broker keeps a POP group's position."""

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        log.info("simple_consumer.reset_offset_ignored group=%s topic=%s (the broker keeps POP positions)",
                 self.group, topic)  # fmt: skip

    def running_info(self) -> dict[str, Any]:
        return {
            "jstack": "",
            "mqTable": {},
            "properties": {"PROP_CONSUME_TYPE": CONSUME_ACTIVELY, "PROP_CLIENT_VERSION": "V4_9_8",
                           "messageModel": self.message_model},
            "statusTable": {},
            "subscriptionSet": [s.to_json() for s in self._subs.values()],
        }  # fmt: skip

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> dict[str, Any]:
        return {"consumeResult": "CR_THROW_EXCEPTION", "remark": "a simple consumer has no listener"}
