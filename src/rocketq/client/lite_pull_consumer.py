"""The lite pull consumer (Java ``DefaultLitePullConsumer``): the application polls; background tasks pull.

Two ways to get queues:

* ``subscribe(topic, expression)`` — the group rebalances the topic's queues like a push consumer;
* ``assign(queues)`` — exactly these queues, no rebalancing.

``await poll()`` returns the next batch of pulled messages (empty after ``poll_timeout``). With
``auto_commit`` (default) the consumed offsets are committed every ``auto_commit_interval`` from ``poll``;
otherwise call ``commit()``. ``seek``/``seek_to_begin``/``seek_to_end``/``seek_to_timestamp`` move a queue: the
messages already cached for it are dropped and pulling restarts at the new offset.

Pulls are PULL_MESSAGE with flags SUSPEND | SUBSCRIPTION | LITE_PULL (0x16), the broker holding an empty pull up
to ``broker_suspend_max_time``. What it shares with the push consumer (settings, ``MQConsumerInner`` plumbing,
the flow-control delays) is in ``_consumer_base``.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# The flow-control delays are re-exported under their old names (``lite_pull_consumer.PULL_DELAY_...``).
from rocketq.client._consumer_base import PULL_DELAY_WHEN_BROKER_FLOW_CONTROL as PULL_DELAY_WHEN_BROKER_FLOW_CONTROL
from rocketq.client._consumer_base import PULL_DELAY_WHEN_CACHE_FLOW_CONTROL as PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
from rocketq.client._consumer_base import ConsumerBase, ConsumerRebalance, cache_flow_control_delay
from rocketq.client._pull_api import build_pull_sys_flag
from rocketq.client._rebalance import CONSUME_ACTIVELY, PullRequest
from rocketq.client._tasks import TaskSet
from rocketq.client.allocate import AllocateMessageQueueStrategy
from rocketq.client.config import ClientConfig
from rocketq.client.errors import InvalidOffsetError, QueueNotAssignedError
from rocketq.client.message import MessageExt, PullStatus
from rocketq.client.offset_store import OffsetStore, ReadOffsetType
from rocketq.client.process_queue import ProcessQueue
from rocketq.client.producer import trace_producer
from rocketq.client.subscription import (
    ConsumeFromWhere,
    ExpressionType,
    MessageModel,
    MessageSelector,
    build_subscription_data,
)
from rocketq.client.trace import ConsumeReturnType, TraceDispatcher, consume_after, consume_before
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError, ClientError, ProtocolError, RemotingError
from rocketq.protocol.bodies import MessageQueue, SubscriptionData
from rocketq.protocol.topics import RETRY_PREFIX

__all__ = ["LitePullConsumer"]

log = logging.getLogger("rocketq.client.lite_pull_consumer")

PULL_DELAY_WHEN_PAUSE = 1.0
PULL_DELAY_ON_EXCEPTION = 3.0


@dataclass(slots=True)
class _QueueState:
    """Java ``AssignedMessageQueue.MessageQueueState``."""

    process_queue: ProcessQueue
    pull_offset: int = -1
    consume_offset: int = -1
    seek_offset: int = -1
    paused: bool = False
    task: asyncio.Task[None] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass(slots=True)
class _ConsumeRequest:
    messages: list[MessageExt]
    message_queue: MessageQueue
    process_queue: ProcessQueue


class LitePullConsumer(ConsumerBase):
    """See the module docstring. Durations are seconds."""

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        config: ClientConfig | None = None,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp: str | int | float | None = None,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
        auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        pull_batch_size: int = 10,
        pull_threshold_for_all: int = 10000,
        consume_max_span: int = 2000,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue: int = 100,
        poll_timeout: float = 5.0,
        broker_suspend_max_time: float = 20.0,
        consumer_timeout_when_suspend: float = 30.0,
        pull_time_delay_when_exception: float = 1.0,
        rebalance_interval: float = 20.0,
        offset_store: OffsetStore | None = None,
        local_offset_store_dir: str | None = None,
        enable_msg_trace: bool = False,
        customized_trace_topic: str | None = None,
    ) -> None:
        super().__init__(
            group, namesrv_addr=namesrv_addr, config=config, message_model=message_model,
            consume_from_where=consume_from_where, consume_timestamp=consume_timestamp,
            allocate_strategy=allocate_strategy, offset_store=offset_store,
            local_offset_store_dir=local_offset_store_dir,
        )  # fmt: skip
        self.auto_commit = auto_commit
        self.auto_commit_interval = max(auto_commit_interval, 1.0)
        self.pull_batch_size = pull_batch_size
        self.pull_threshold_for_all = pull_threshold_for_all
        self.consume_max_span = consume_max_span
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.poll_timeout = poll_timeout
        self.broker_suspend_max_time = broker_suspend_max_time
        self.consumer_timeout_when_suspend = consumer_timeout_when_suspend
        self.pull_time_delay_when_exception = pull_time_delay_when_exception
        self.rebalance_interval = rebalance_interval
        self._assign_expressions: dict[str, str] = {}
        self._mode: str | None = None  # "SUBSCRIBE" | "ASSIGN"
        self._assigned: dict[MessageQueue, _QueueState] = {}
        self._requests: collections.deque[_ConsumeRequest] = collections.deque()
        self._requests_ready = asyncio.Event()
        self._tasks = TaskSet(log)
        self._next_auto_commit = 0.0
        #: Java's enableMsgTrace / customizedTraceTopic: SubBefore + SubAfter per pull that found messages
        self.enable_msg_trace = enable_msg_trace
        self.customized_trace_topic = customized_trace_topic
        self._trace: TraceDispatcher | None = None

    consume_type = CONSUME_ACTIVELY

    # -- subscription / assignment ------------------------------------------------------------------------

    def _set_mode(self, mode: str) -> None:
        if self._mode is None:
            self._mode = mode
        elif self._mode != mode:
            raise ClientError("subscribe and assign are mutually exclusive")

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        self._set_mode("SUBSCRIBE")
        super().subscribe(topic, expression)

    def unsubscribe(self, topic: str) -> None:
        super().unsubscribe(topic)
        for mq in [m for m in self._assigned if m.topic == topic]:
            self._drop_queue(mq)

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues (no rebalancing). Replaces the previous assignment."""
        self._set_mode("ASSIGN")
        wanted = set(queues)
        if not wanted:
            raise ValueError("message queues can not be empty")
        for mq in list(self._assigned):
            if mq not in wanted:
                self._drop_queue(mq)
        for mq in wanted:
            if mq not in self._assigned:
                self._assigned[mq] = _QueueState(ProcessQueue())
                if self._running:
                    self._start_pull_task(mq)

    def set_sub_expression_for_assign(self, topic: str, expression: str) -> None:
        """The tag expression used when pulling assigned queues of ``topic`` (default ``*``)."""
        self._assign_expressions[topic] = expression

    def assignment(self) -> set[MessageQueue]:
        return set(self._assigned)

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        for mq in queues:
            st = self._assigned.get(mq)
            if st is not None:
                st.paused = True

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        for mq in queues:
            st = self._assigned.get(mq)
            if st is not None:
                st.paused = False

    async def fetch_message_queues(self, topic: str) -> set[MessageQueue]:
        """All readable queues of ``topic`` (from the name server)."""
        return await self.instance.fetch_subscribe_message_queues(topic)

    # -- lifecycle ----------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._running:
            return
        rebalance = await self._open(lambda instance: _RebalanceLitePull(self, instance), retry_subscription=False)
        instance = rebalance.instance
        self._tasks = TaskSet(log)
        instance.register_consumer(self)
        self._running = True
        self._stopping = False
        self._next_auto_commit = time.monotonic() + self.auto_commit_interval
        await instance.start()
        if self.enable_msg_trace:
            self._trace = TraceDispatcher(self.group, trace_producer(self.group, "CONSUME", self.config),
                                          self.customized_trace_topic)  # fmt: skip
            await self._trace.start()
        await self._update_subscribed_routes(instance, log)
        await instance.send_heartbeat_to_all_brokers()
        for mq in list(self._assigned):
            self._start_pull_task(mq)
        if self._mode == "SUBSCRIBE":
            instance.rebalance_immediately()
        log.info("lite_pull.started group=%s client_id=%s", self.group, instance.client_id)

    async def shutdown(self) -> None:
        if not self._running or self._instance is None:
            return
        instance = self._instance
        self._stopping = True
        for st in self._assigned.values():
            if st.task is not None:
                st.task.cancel()
        await self._tasks.aclose()
        await self.persist_consumer_offset()
        if self._trace is not None:  # after the pull tasks, whose records it sends
            await self._trace.shutdown()
            self._trace = None
        self._running = False
        await instance.unregister_consumer(self.group)
        await instance.shutdown()
        if self._rebalance is not None:
            self._rebalance.destroy()
        log.info("lite_pull.stopped group=%s", self.group)

    # -- polling and offsets ------------------------------------------------------------------------------

    async def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """The next batch of messages (possibly empty after ``timeout``, default ``poll_timeout``)."""
        self.instance  # noqa: B018
        timeout = self.poll_timeout if timeout is None else timeout
        if timeout < 0:
            raise ValueError("timeout must not be negative")
        if self.auto_commit:
            await self._maybe_auto_commit()
        deadline = time.monotonic() + timeout
        while True:
            while self._requests:
                req = self._requests.popleft()
                if req.process_queue.dropped:
                    continue
                offset = req.process_queue.remove_messages(req.messages)
                st = self._assigned.get(req.message_queue)
                if st is not None and st.process_queue is req.process_queue:
                    st.consume_offset = offset
                return req.messages
            self._requests_ready.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            try:
                async with asyncio.timeout(remaining):
                    await self._requests_ready.wait()
            except TimeoutError:
                return []

    async def _maybe_auto_commit(self) -> None:
        now = time.monotonic()
        if now >= self._next_auto_commit:
            self._commit_all_to_memory()
            self._next_auto_commit = now + self.auto_commit_interval

    def _commit_all_to_memory(self) -> None:
        assert self.offset_store is not None
        for mq, st in self._assigned.items():
            if st.consume_offset != -1 and not st.process_queue.dropped:
                self.offset_store.update_offset(mq, st.consume_offset, False)

    async def commit(self, offsets: dict[MessageQueue, int] | None = None, *, persist: bool = True) -> None:
        """Commit the consumed offsets (or the given ones) and, with ``persist``, write them to the broker now."""
        self.instance  # noqa: B018
        assert self.offset_store is not None
        if offsets is None:
            self._commit_all_to_memory()
            mqs = list(self._assigned)
        else:
            for mq, off in offsets.items():
                st = self._assigned.get(mq)
                if off != -1 and st is not None and not st.process_queue.dropped:
                    self.offset_store.update_offset(mq, off, False)
            mqs = list(offsets)
        if persist:
            await self.offset_store.persist_all(mqs)

    async def commit_sync(self) -> None:
        await self.commit()

    async def committed(self, mq: MessageQueue) -> int:
        """The committed offset of ``mq`` (memory first, then the store); -1 when there is none."""
        assert self.offset_store is not None
        off = await self.offset_store.read_offset(mq, ReadOffsetType.MEMORY_FIRST_THEN_STORE)
        if off == -2:
            raise ClientError(f"fetch consume offset of {mq} from broker failed")
        return off

    async def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self.instance.search_offset(mq, timestamp_ms)

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Restart ``mq`` at ``offset`` (must be within ``[min_offset, max_offset]``)."""
        st = self._assigned.get(mq)
        if st is None:
            hint = ", may be rebalancing" if self._mode == "SUBSCRIBE" else ""
            raise QueueNotAssignedError(f"the message queue is not in the assigned list{hint}: {mq}")
        lo = await self.instance.min_offset(mq)
        hi = await self.instance.max_offset(mq)
        if offset < lo or offset > hi:
            raise InvalidOffsetError(f"seek offset illegal, seek offset = {offset}, min offset = {lo}, "
                                     f"max offset = {hi}")  # fmt: skip
        async with st.lock:
            self._clear_queue_cache(mq, st)
            if st.task is not None:
                st.task.cancel()
                st.task = None
            st.seek_offset = offset
            self._start_pull_task(mq)

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.instance.min_offset(mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.instance.max_offset(mq))

    async def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> None:
        await self.seek(mq, await self.offset_for_timestamp(mq, timestamp_ms))

    def _clear_queue_cache(self, mq: MessageQueue, st: _QueueState) -> None:
        st.process_queue.clear()
        self._requests = collections.deque(r for r in self._requests if r.message_queue != mq)

    # -- MQConsumerInner (the rest is in ConsumerBase) ----------------------------------------------------------

    async def do_rebalance(self) -> None:
        if self._rebalance is not None and self._running and not self._stopping and self._mode == "SUBSCRIBE":
            await self._rebalance.do_rebalance(False)

    async def persist_consumer_offset(self) -> None:
        if self.offset_store is None:
            return
        if self.auto_commit:
            self._commit_all_to_memory()
        await self.offset_store.persist_all(list(self._assigned))

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        for mq, off in offsets.items():
            if mq.topic == topic and mq in self._assigned:
                await self.seek(mq, off)

    def running_info(self) -> dict[str, Any]:
        props = {
            "PROP_CONSUME_TYPE": CONSUME_ACTIVELY,
            "PROP_CLIENT_VERSION": "V4_9_8",
            "messageModel": self.message_model,
        }
        return self._running_info(props, {mq: st.process_queue.info() for mq, st in self._assigned.items()})

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> dict[str, Any]:
        return {"consumeResult": "CR_THROW_EXCEPTION", "remark": "a lite pull consumer has no listener"}

    # -- assignment from rebalance --------------------------------------------------------------------------

    def _add_queue(self, mq: MessageQueue, pq: ProcessQueue, next_offset: int) -> None:
        st = self._assigned.get(mq)
        if st is not None and st.task is not None:
            st.task.cancel()
        self._assigned[mq] = _QueueState(pq, pull_offset=next_offset)
        if self._running:
            self._start_pull_task(mq)

    def _drop_queue(self, mq: MessageQueue) -> None:
        st = self._assigned.pop(mq, None)
        if st is None:
            return
        st.process_queue.dropped = True
        if st.task is not None:
            st.task.cancel()
        self._requests = collections.deque(r for r in self._requests if r.message_queue != mq)

    # -- pulling ------------------------------------------------------------------------------------------

    def _start_pull_task(self, mq: MessageQueue) -> None:
        if self._stopping:
            return
        st = self._assigned[mq]
        st.task = self._tasks.spawn(self._pull_loop(mq, st), f"lite-pull-{mq}")

    async def _pull_loop(self, mq: MessageQueue, st: _QueueState) -> None:
        while self._running and not st.process_queue.dropped and self._assigned.get(mq) is st:
            delay = await self._pull_once(mq, st)
            if delay:
                await asyncio.sleep(delay)

    def _subscription_for(self, topic: str) -> SubscriptionData:
        if self._mode == "SUBSCRIBE":
            assert self._rebalance is not None
            sub = self._rebalance.subscription_inner.get(topic)
            if sub is not None:
                return sub
        return build_subscription_data(topic, self._assign_expressions.get(topic, "*"))

    async def _next_pull_offset(self, mq: MessageQueue, st: _QueueState) -> int:
        if st.seek_offset != -1:
            offset = st.seek_offset
            st.consume_offset = offset
            st.seek_offset = -1
            return offset
        if st.pull_offset != -1:
            return st.pull_offset
        assert self._rebalance is not None
        offset = await self._rebalance.compute_pull_from_where(mq)
        if offset < 0:
            raise ClientError(f"can not compute the start offset of {mq}")
        return offset

    async def _pull_once(self, mq: MessageQueue, st: _QueueState) -> float:
        pq = st.process_queue
        if st.paused:
            return PULL_DELAY_WHEN_PAUSE
        if len(self._requests) * self.pull_batch_size > self.pull_threshold_for_all:
            return PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
        flow_delay = cache_flow_control_delay(
            pq, self.pull_threshold_for_queue, self.pull_threshold_size_for_queue, self.consume_max_span
        )
        if flow_delay is not None:
            return flow_delay
        try:
            offset = await self._next_pull_offset(mq, st)
        except (RemotingError, BrokerError, ClientError, ProtocolError) as exc:
            log.warning("lite_pull.offset_failed mq=%s error=%s", mq, exc)
            return PULL_DELAY_ON_EXCEPTION
        if pq.dropped:
            return 0.0
        sub = self._subscription_for(mq.topic)
        is_tag = sub.expression_type == ExpressionType.TAG.value
        assert self._pull_api is not None
        try:
            raw = await self._pull_api.pull_kernel(
                mq, sub.sub_string, sub.expression_type, 0 if is_tag else sub.sub_version, offset, self.pull_batch_size,
                build_pull_sys_flag(False, True, True, False, True), 0, int(self.broker_suspend_max_time * 1000),
                self.consumer_timeout_when_suspend,
            )  # fmt: skip
            result = self._pull_api.process_pull_result(mq, raw, sub)
        except BrokerError as exc:
            if not mq.topic.startswith(RETRY_PREFIX):
                log.warning("lite_pull.failed mq=%s error=%s", mq, exc)
            if exc.code == ResponseCode.FLOW_CONTROL:
                return PULL_DELAY_WHEN_BROKER_FLOW_CONTROL
            return self.pull_time_delay_when_exception
        except (RemotingError, ClientError, ProtocolError) as exc:
            log.warning("lite_pull.failed mq=%s error=%s", mq, exc)
            return self.pull_time_delay_when_exception
        if result.messages:
            meter = self.config.metrics
            if meter is not None:
                meter.on_arrived(mq.topic, self.instance.client_id, self.group, result.messages)
            if self._trace is not None:
                self._trace_pulled(result.messages)
        if pq.dropped:
            return 0.0
        if result.status is PullStatus.FOUND:
            async with st.lock:
                if result.messages and st.seek_offset == -1:
                    pq.put_messages(result.messages)
                    self._requests.append(_ConsumeRequest(result.messages, mq, pq))
                    self._requests_ready.set()
        if st.seek_offset == -1:
            st.pull_offset = result.next_begin_offset
        return 0.0

    def _trace_pulled(self, msgs: list[MessageExt]) -> None:
        """Java 4.9's lite pull runs the consume hooks on each pull that found messages: SubBefore, then at
        once SubAfter, successful (the application's handling after ``poll`` is not seen)."""
        trace = self._trace
        assert trace is not None
        before = consume_before(trace, self.group, msgs)
        if before is not None:
            consume_after(trace, before, True, ConsumeReturnType.SUCCESS)


class _RebalanceLitePull(ConsumerRebalance):
    consumer: LitePullConsumer

    @property
    def consume_type(self) -> str:
        return CONSUME_ACTIVELY

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        c = self.consumer
        assert c.offset_store is not None
        st = c._assigned.get(mq)
        if st is not None and st.consume_offset != -1:
            c.offset_store.update_offset(mq, st.consume_offset, False)
        c._drop_queue(mq)
        await c.offset_store.persist(mq)
        c.offset_store.remove_offset(mq)
        return True

    def dispatch_pull_requests(self, requests: list[PullRequest]) -> None:
        for req in requests:
            self.consumer._add_queue(req.message_queue, req.process_queue, req.next_offset)
