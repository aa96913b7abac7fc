"""``PopPushConsumer``: a push consumer (a listener is called with the messages) that receives by POP instead of
owning queues — Java 5's ``DefaultMQPushConsumer`` in POP mode (``ConsumeMessagePopConcurrentlyService`` /
``ConsumeMessagePopOrderlyService``), over the remoting protocol.

A ``SimpleConsumer`` does the wire work. One receive loop per subscribed topic long-polls while fewer than
``max_cached_messages`` are in the listener's hands. Concurrently: a batch the listener accepts is acked (up to
``ack_index``); a failed one is made invisible for its back-off (``pop_delay_levels``, seconds, by delivery count
or the context's ``delay_level_when_next_consume``) and the broker delivers it again. Orderly (``orderly=True``:
pops with ``order=true``): the messages of each answer are handed over in order, one batch at a time; a
SUSPEND makes that batch and the rest of the answer invisible for ``suspend_time`` — the broker keeps the queue
blocked until they come back, so nothing after them is handed over first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from rocketq.client._tasks import TaskSet
from rocketq.client._util import call_user, is_async_callable
from rocketq.client.config import ClientConfig
from rocketq.client.errors import ClientNotStartedError
from rocketq.client.listener import (
    ConcurrentlyListener,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    OrderlyListener,
)
from rocketq.client.message import MessageExt
from rocketq.client.simple_consumer import MAX_RECEIVE, MessageView, SimpleConsumer
from rocketq.client.subscription import MessageSelector
from rocketq.errors import BrokerError, ClientError, ProtocolError, RemotingError
from rocketq.protocol.bodies import MessageQueue

__all__ = ["POP_DELAY_LEVELS", "PopPushConsumer"]

log = logging.getLogger("rocketq.client.pop_push")

#: Java DefaultMQPushConsumerImpl.popDelayLevel, seconds
POP_DELAY_LEVELS = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
_WIRE_ERRORS = (BrokerError, RemotingError, ProtocolError, ClientError)


class PopPushConsumer:
    """Push consumption over POP for ``group``; ``listener`` is a concurrent listener, or an orderly one with
    ``orderly=True``. Durations are seconds."""

    def __init__(
        self,
        group: str,
        listener: ConcurrentlyListener | OrderlyListener,
        *,
        namesrv_addr: str | None = None,
        config: ClientConfig | None = None,
        subscriptions: Mapping[str, str | MessageSelector] | None = None,
        orderly: bool = False,
        invisible_duration: float = 60.0,
        await_duration: float = 5.0,
        pop_batch_size: int = MAX_RECEIVE,
        consume_message_batch_max_size: int = 1,
        consume_thread_max: int = 20,
        max_cached_messages: int = 64,
        max_reconsume_times: int = 16,
        pop_delay_levels: Sequence[float] = POP_DELAY_LEVELS,
        suspend_time: float = 1.0,
        retry_interval: float = 1.0,
        init_mode: str = "MAX",
        executor: Executor | None = None,
    ) -> None:
        if not 1 <= pop_batch_size <= MAX_RECEIVE:
            raise ValueError(f"pop_batch_size must be 1..{MAX_RECEIVE}")
        if consume_message_batch_max_size < 1 or consume_thread_max < 1 or max_cached_messages < 1:
            raise ValueError("batch sizes, thread and cache limits must be positive")
        if not pop_delay_levels or suspend_time <= 0:
            raise ValueError("pop_delay_levels must not be empty and suspend_time must be positive")
        self.simple = SimpleConsumer(
            group, namesrv_addr=namesrv_addr, config=config, subscriptions=subscriptions,
            await_duration=await_duration, invisible_duration=invisible_duration, fifo=orderly, init_mode=init_mode,
        )  # fmt: skip
        self.group = group
        self.listener = listener
        self.orderly = orderly
        self.pop_batch_size = pop_batch_size
        self.batch_size = consume_message_batch_max_size
        self.max_cached_messages = max_cached_messages
        self.max_reconsume_times = max_reconsume_times
        self.pop_delay_levels = tuple(pop_delay_levels)
        self.suspend_time = suspend_time
        self.retry_interval = retry_interval
        self._executor = executor
        self._own_executor: ThreadPoolExecutor | None = None
        self._listener_async = is_async_callable(listener)
        self._sem = asyncio.Semaphore(consume_thread_max)
        self._cached = 0
        self._room = asyncio.Condition()
        self._tasks = TaskSet(log)
        self._running = False

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        if self._running:
            raise ClientError("subscribe before start()")
        self.simple.subscribe(topic, expression)

    async def start(self) -> None:
        if self._running:
            return
        if not self.simple.subscriptions():
            raise ClientError(f"the consumer {self.group!r} has no subscription")
        if self._executor is None and not self._listener_async:
            self._own_executor = ThreadPoolExecutor(max_workers=20, thread_name_prefix=f"pop-{self.group}")
            self._executor = self._own_executor
        await self.simple.start()
        self._running = True
        self._tasks = TaskSet(log)
        for sub in self.simple.subscriptions():
            self._tasks.spawn(self._receive_loop(sub.topic), f"pop-receive-{sub.topic}")
        log.info("pop_push.started group=%s orderly=%s", self.group, self.orderly)

    async def shutdown(self) -> None:
        if not self._running:
            return
        self._running = False
        await self._tasks.aclose()
        await self.simple.shutdown()
        if self._own_executor is not None:
            self._own_executor.shutdown(wait=False)
            self._own_executor = self._executor = None
        log.info("pop_push.stopped group=%s", self.group)

    async def __aenter__(self) -> PopPushConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # -- receiving ------------------------------------------------------------------------------------------

    async def _receive_loop(self, topic: str) -> None:
        while self._running:
            async with self._room:
                await self._room.wait_for(lambda: self._cached < self.max_cached_messages)
            try:
                msgs = await self.simple.receive(self.pop_batch_size, topic=topic)
            except (ClientNotStartedError, asyncio.CancelledError):
                raise
            except _WIRE_ERRORS as exc:
                log.warning("pop_push.receive_failed group=%s topic=%s error=%s", self.group, topic, exc)
                await asyncio.sleep(self.retry_interval)
                continue
            if not msgs:
                continue
            self._cached += len(msgs)
            if self.orderly:
                self._tasks.spawn(self._consume_orderly(msgs), "pop-consume-orderly")
            else:
                for i in range(0, len(msgs), self.batch_size):
                    self._tasks.spawn(self._consume(msgs[i : i + self.batch_size]), "pop-consume")

    async def _done(self, n: int) -> None:
        async with self._room:
            self._cached -= n
            self._room.notify_all()

    @staticmethod
    def _queue_of(msg: MessageView) -> MessageQueue:
        return MessageQueue(msg.topic, msg.broker_name, msg.queue_id)

    # -- concurrently ---------------------------------------------------------------------------------------

    async def _consume(self, msgs: list[MessageView]) -> None:
        try:
            async with self._sem:
                ctx = ConsumeConcurrentlyContext(self._queue_of(msgs[0]))
                try:
                    got = await call_user(self.listener, list(msgs), ctx, executor=self._executor,
                                          is_async=self._listener_async)  # fmt: skip
                    ok = got is not ConsumeConcurrentlyStatus.RECONSUME_LATER
                except Exception as exc:
                    log.warning("pop_push.consume_failed group=%s error=%r", self.group, exc)
                    ok = False
            ack_index = min(ctx.ack_index, len(msgs) - 1) if ok else -1
            for m in msgs[: ack_index + 1]:
                await self._settle(self.simple.ack(m), m)
            for m in msgs[ack_index + 1 :]:
                if m.reconsume_times >= self.max_reconsume_times:
                    await self._give_up_or_delay(m)
                else:
                    await self._later(m, ctx.delay_level_when_next_consume)
        finally:
            await self._done(len(msgs))

    def _delay_seconds(self, level: int) -> float:
        return self.pop_delay_levels[min(level, len(self.pop_delay_levels) - 1)]

    async def _later(self, msg: MessageView, delay_level: int) -> None:
        """Java ``changePopInvisibleTime``: level 0 means the message's delivery count so far."""
        level = delay_level if delay_level > 0 else msg.reconsume_times
        await self._settle(self.simple.change_invisible_duration(msg, self._delay_seconds(level)), msg)

    async def _give_up_or_delay(self, msg: MessageView) -> None:
        """Java ``checkNeedAckOrDelay``: a message failed ``max_reconsume_times`` is acked once it is older than
        twice the longest back-off, else delayed by the first back-off longer than its age."""
        age = time.time() - msg.born_timestamp / 1000
        if age > self.pop_delay_levels[-1] * 2:
            log.warning("pop_push.too_many_attempts_acked group=%s msg_id=%s", self.group, msg.msg_id)
            await self._settle(self.simple.ack(msg), msg)
            return
        delay = next((d for d in self.pop_delay_levels if d > age), self.pop_delay_levels[-1])
        await self._settle(self.simple.change_invisible_duration(msg, delay), msg)

    async def _settle(self, call: Any, msg: MessageExt) -> None:
        """An ack or change that fails is logged: the message comes back after its invisible time."""
        try:
            await call
        except _WIRE_ERRORS as exc:
            log.warning("pop_push.settle_failed group=%s msg_id=%s error=%s", self.group, msg.msg_id, exc)

    # -- orderly --------------------------------------------------------------------------------------------

    async def _consume_orderly(self, msgs: list[MessageView]) -> None:
        try:
            async with self._sem:
                for i in range(0, len(msgs), self.batch_size):
                    batch = msgs[i : i + self.batch_size]
                    ctx = ConsumeOrderlyContext(self._queue_of(batch[0]))
                    try:
                        got = await call_user(self.listener, list(batch), ctx, executor=self._executor,
                                              is_async=self._listener_async)  # fmt: skip
                        ok = got not in (ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT,
                                         ConsumeOrderlyStatus.ROLLBACK)  # fmt: skip
                    except Exception as exc:
                        log.warning("pop_push.consume_failed group=%s error=%r", self.group, exc)
                        ok = False
                    if ok:
                        for m in batch:
                            await self._settle(self.simple.ack(m), m)
                        continue
                    # this batch and everything after it in the answer come back after the suspend time, in order
                    pause = ctx.suspend_current_queue_time or self.suspend_time
                    for m in msgs[i:]:
                        await self._settle(self.simple.change_invisible_duration(m, pause), m)
                    break
        finally:
            await self._done(len(msgs))
