"""The consume services: how pulled messages reach the listener and what its answer does (Java
``ConsumeMessageConcurrentlyService`` and ``ConsumeMessageOrderlyService``).

* ``ConcurrentlyService``: batches of up to ``consume_message_batch_max_size`` messages, at most
  ``consume_thread_max`` listener calls at a time; a failed batch (``RECONSUME_LATER`` or an exception) is sent
  back through the consumer's ``send_message_back`` (CLUSTERING) or dropped with a warning (BROADCASTING); a
  message whose send-back failed is consumed again locally 5 s later.
* ``OrderlyService``: one queue's messages in order, one batch at a time, while the consumer holds the queue's
  broker lock (CLUSTERING); failures suspend the queue and retry, and a message over the retry limit is re-sent to
  the retry topic (and so, in the end, to the DLQ).

Each service sees its consumer through a narrow view (``ConsumerView`` and the two Protocols built on it), never
the push consumer itself, so a POP consumer can drive the same services. The services own the consume tasks and
their concurrency limit; the consumer owns the listener, the settings, the offsets and the send-back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rocketq.client._tasks import TaskSet
from rocketq.client._util import call_user, now_ms
from rocketq.client.listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
)
from rocketq.client.message import Message, MessageExt
from rocketq.client.offset_store import OffsetStore
from rocketq.client.process_queue import ProcessQueue
from rocketq.client.subscription import MessageModel, restore_retry_topic
from rocketq.client.trace import ConsumeReturnType, TraceDispatcher, consume_after, consume_before
from rocketq.common.stats_items import ItemStats, StatsTable
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.message import (
    PROP_CONSUME_START_TIME,
    PROP_DELAY,
    PROP_MAX_RECONSUME_TIMES,
    PROP_ORIGIN_MESSAGE_ID,
    PROP_RECONSUME_TIME,
    PROP_RETRY_TOPIC,
    PROP_TRAN_MSG,
)
from rocketq.protocol.topics import retry_topic

if TYPE_CHECKING:
    from rocketq.client.metrics import ClientMetrics

__all__ = [
    "CONSUME_LATER_DELAY",
    "MAX_TIME_CONSUME_CONTINUOUSLY",
    "ConcurrentlyService",
    "ConsumeStats",
    "ConsumerView",
    "OrderlyService",
    "clean_expired",
    "retry_message",
]

# The push consumer's logger: these were always its events ("consume.*"), and log filters name it.
log = logging.getLogger("rocketq.client.push_consumer")

#: Java ConsumeMessageOrderlyService.MAX_TIME_CONSUME_CONTINUOUSLY, seconds.
MAX_TIME_CONSUME_CONTINUOUSLY = 60.0
#: Java submitConsumeRequestLater delay for messages whose send-back failed, seconds.
CONSUME_LATER_DELAY = 5.0


# Java's ConsumerStatsManager tables, keyed ``topic@group`` (the queue's topic: a retry topic counts apart)
PULL_TPS, PULL_RT = "PULL_TPS", "PULL_RT"
CONSUME_OK_TPS, CONSUME_FAILED_TPS, CONSUME_RT = "CONSUME_OK_TPS", "CONSUME_FAILED_TPS", "CONSUME_RT"


@dataclass
class ConsumeStats:
    """The consumer's counters (``PushConsumer.stats``), and per topic the windows of Java's ConsumerStatsManager
    that GET_CONSUMER_RUNNING_INFO reports as ``statusTable`` (``sample`` every 10 s rolls them)."""

    pulled: int = 0
    consumed_ok: int = 0
    consumed_failed: int = 0
    sent_back: int = 0
    flow_control_times: int = 0
    extra: dict[str, int] = field(default_factory=dict)
    windows: StatsTable = field(default_factory=StatsTable, repr=False)
    topics: set[str] = field(default_factory=set, repr=False)
    #: the client's Prometheus metrics (``ClientConfig.metrics``) and the client id they are labelled with
    meter: ClientMetrics | None = field(default=None, repr=False)
    client_id: str = ""

    def on_pull(self, group: str, topic: str, found: int, rt_ms: float) -> None:
        """A pull that found messages (Java: incPullRT always, incPullTPS when the list is not empty)."""
        key = self._key(group, topic)
        self.windows.add(PULL_RT, key, int(rt_ms))
        if found:
            self.pulled += found
            self.windows.add(PULL_TPS, key, found)

    def on_consumed(self, group: str, topic: str, ok: int, failed: int) -> None:
        self.consumed_ok += ok
        self.consumed_failed += failed
        if self.meter is not None:
            self.meter.on_consumed(topic, self.client_id, group, ok, failed)
        key = self._key(group, topic)
        self.windows.add(CONSUME_OK_TPS, key, ok)
        self.windows.add(CONSUME_FAILED_TPS, key, failed)

    def on_consume_rt(self, group: str, topic: str, rt_ms: float, ok: bool = True) -> None:
        """A listener call ended after ``rt_ms`` (``ok``: its verdict was success)."""
        self.windows.add(CONSUME_RT, self._key(group, topic), int(rt_ms))
        if self.meter is not None:
            self.meter.on_process(topic, self.client_id, group, rt_ms, ok)

    def _key(self, group: str, topic: str) -> str:
        self.topics.add(topic)
        return f"{topic}@{group}"

    def sample(self) -> None:
        self.windows.sample()

    def status(self, group: str, topic: str) -> dict[str, float | int]:
        """Java's ConsumeStatus of one topic: minute-window RTs and TPS, the failures of the last hour; a
        consume RT with nothing in the minute falls back to the hour's, as Java's getConsumeRT does."""
        key = f"{topic}@{group}"

        def view(name: str) -> ItemStats | None:
            return self.windows.view(name, key)

        pull_rt, pull_tps, rt, ok, failed = (view(n) for n in (PULL_RT, PULL_TPS, CONSUME_RT, CONSUME_OK_TPS,
                                                                 CONSUME_FAILED_TPS))  # fmt: skip
        consume_rt = 0.0
        if rt is not None:
            consume_rt = rt.minute.avgpt if rt.minute.sum else rt.hour.avgpt
        return {
            "consumeFailedMsgs": failed.hour.sum if failed else 0,
            "consumeFailedTPS": failed.minute.tps if failed else 0.0,
            "consumeOKTPS": ok.minute.tps if ok else 0.0,
            "consumeRT": consume_rt,
            "pullRT": pull_rt.minute.avgpt if pull_rt else 0.0,
            "pullTPS": pull_tps.minute.tps if pull_tps else 0.0,
        }


def retry_message(group: str, msg: MessageExt, reconsume_time: int, delay_level: int, max_reconsume: int) -> Message:
    """``msg`` as re-sent to ``%RETRY%<group>`` when the broker did not take it back (Java: the message both
    ``DefaultMQPushConsumerImpl.sendMessageBack`` and the orderly service's ``sendMessageBack`` build)."""
    new = Message(retry_topic(group), msg.body, flag=msg.flag, properties=msg.properties)
    origin = msg.origin_message_id
    new.properties[PROP_ORIGIN_MESSAGE_ID] = origin if origin and origin.strip() else msg.msg_id  # Java's isBlank
    new.properties[PROP_RETRY_TOPIC] = msg.topic
    new.properties[PROP_RECONSUME_TIME] = str(reconsume_time)
    new.properties[PROP_MAX_RECONSUME_TIMES] = str(max_reconsume)
    new.properties.pop(PROP_TRAN_MSG, None)
    new.properties[PROP_DELAY] = str(delay_level)
    return new


class ConsumerView(Protocol):
    """What a consume service reads of its consumer. Attributes are read at each use: they may change while the
    consumer runs (a listener registered again, a batch size set)."""

    group: str
    message_model_enum: MessageModel
    consume_message_batch_max_size: int
    offset_store: OffsetStore | None
    stats: ConsumeStats
    _listener: Callable[..., Any] | None
    _listener_async: bool  # is_async_callable(_listener), worked out once at registration
    _trace: TraceDispatcher | None  # enable_msg_trace: SubBefore/SubAfter records

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None = None) -> bool:
        """Hand a failed message back to the broker (or the retry topic); False when that failed."""
        ...


class ConcurrentlyView(ConsumerView, Protocol):
    consume_timeout: float


class OrderlyView(ConsumerView, Protocol):
    suspend_current_queue_time: float
    _running: bool

    def _max_reconsume_times_orderly(self) -> int: ...

    async def _resend_to_retry_topic(self, msg: MessageExt, reconsume_time: int, delay_level: int) -> None: ...


class _Service(ABC):
    """The consume tasks (awaited for up to ``await_termination_when_shutdown`` at shutdown, then cancelled), the
    ``consume_thread_max`` limit on listener calls in progress, and CONSUME_MESSAGE_DIRECTLY."""

    orderly = False

    def __init__(self, consumer: ConsumerView, executor: Executor | None, max_in_progress: int) -> None:
        self._view = consumer
        self.executor = executor
        self.tasks = TaskSet(log)
        self._sem = asyncio.Semaphore(max_in_progress)

    async def shutdown(self, await_termination: float) -> None:
        await self.tasks.wait(await_termination)
        await self.tasks.aclose()

    async def consume_directly(self, msg: MessageExt, broker_name: str | None) -> dict[str, Any]:
        """CONSUME_MESSAGE_DIRECTLY (Java ``consumeMessageDirectly``): the listener's verdict on ``msg``, timed."""
        mq = MessageQueue(msg.topic, broker_name or "", msg.queue_id)
        restore_retry_topic([msg], retry_topic(self._view.group))
        begin = time.monotonic()
        result: dict[str, Any] = {"order": self.orderly, "autoCommit": True}
        try:
            result.update(await self._verdict(msg, mq))  # autoCommit keeps its place in the answer
        except Exception as exc:
            result["consumeResult"] = "CR_THROW_EXCEPTION"
            result["remark"] = repr(exc)
        result["spentTimeMills"] = int((time.monotonic() - begin) * 1000)
        return result

    @abstractmethod
    async def _verdict(self, msg: MessageExt, mq: MessageQueue) -> dict[str, Any]:
        """The listener's answer to one message, as CONSUME_MESSAGE_DIRECTLY reports it."""


class ConcurrentlyService(_Service):
    """Java ``ConsumeMessageConcurrentlyService``."""

    def __init__(self, consumer: ConcurrentlyView, executor: Executor | None, max_in_progress: int) -> None:
        super().__init__(consumer, executor, max_in_progress)
        self._consumer = consumer
        self._task_names: dict[MessageQueue, str] = {}  # no dataclass repr per consume request

    def submit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """One consume task per batch of up to ``consume_message_batch_max_size`` of the pulled ``msgs``."""
        size = max(1, self._consumer.consume_message_batch_max_size)
        names = self._task_names
        name = names.get(mq)
        if name is None:
            if len(names) >= 4096:  # queues come and go with rebalances: keep the cache bounded
                names.clear()
            name = names[mq] = f"consume-{mq}"
        arrived = time.perf_counter() if self._consumer.stats.meter is not None else 0.0
        for i in range(0, len(msgs), size):
            self.tasks.spawn(self._consume(msgs[i : i + size], pq, mq, arrived), name)

    def _submit_later(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        async def later() -> None:
            await asyncio.sleep(CONSUME_LATER_DELAY)
            self.submit(msgs, pq, mq)

        self.tasks.spawn(later(), f"consume-later-{mq}")

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, arrived: float = 0.0) -> None:
        c = self._consumer
        async with self._sem:
            if pq.dropped:
                return
            meter = c.stats.meter
            if meter is not None and arrived:
                meter.on_await(mq.topic, c.stats.client_id, c.group, arrived)
            assert c._listener is not None
            ctx = ConsumeConcurrentlyContext(mq)
            restore_retry_topic(msgs, retry_topic(c.group))
            start = str(now_ms())
            for m in msgs:
                m.properties[PROP_CONSUME_START_TIME] = start
            status: ConsumeConcurrentlyStatus
            began = time.monotonic()
            trace = c._trace
            before = consume_before(trace, c.group, msgs) if trace is not None else None
            code = ConsumeReturnType.SUCCESS
            try:
                got = await call_user(c._listener, list(msgs), ctx, executor=self.executor, is_async=c._listener_async)
                status = ConsumeConcurrentlyStatus.RECONSUME_LATER if got is ConsumeConcurrentlyStatus.RECONSUME_LATER \
                    else ConsumeConcurrentlyStatus.CONSUME_SUCCESS  # fmt: skip
                if status is ConsumeConcurrentlyStatus.RECONSUME_LATER:
                    code = ConsumeReturnType.FAILED
            except Exception as exc:
                log.warning("consume.failed group=%s mq=%s error=%r", c.group, mq, exc)
                status = ConsumeConcurrentlyStatus.RECONSUME_LATER
                code = ConsumeReturnType.EXCEPTION
            ok = status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS
            c.stats.on_consume_rt(c.group, mq.topic, (time.monotonic() - began) * 1000, ok)
            if before is not None and trace is not None:
                consume_after(trace, before, ok, code)
            if pq.dropped:
                log.warning("consume.dropped_after group=%s mq=%s", c.group, mq)
                return
            await self._process_result(status, ctx, msgs, pq, mq)

    async def _process_result(
        self,
        status: ConsumeConcurrentlyStatus,
        ctx: ConsumeConcurrentlyContext,
        msgs: list[MessageExt],
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> None:
        """Java ``processConsumeResult``: count, send the failed ones back, move the queue's offset."""
        if not msgs:
            return
        c = self._consumer
        ack_index = ctx.ack_index
        if status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
            ack_index = min(ack_index, len(msgs) - 1)
            c.stats.on_consumed(c.group, mq.topic, ack_index + 1, len(msgs) - ack_index - 1)
        else:
            ack_index = -1
            c.stats.on_consumed(c.group, mq.topic, 0, len(msgs))
        done = list(msgs)
        if c.message_model_enum is MessageModel.BROADCASTING:
            for m in msgs[ack_index + 1 :]:
                log.warning("consume.broadcast_dropped group=%s msg_id=%s", c.group, m.msg_id)
        else:
            back_failed: list[MessageExt] = []
            for m in msgs[ack_index + 1 :]:
                if not await c.send_message_back(m, ctx.delay_level_when_next_consume, mq.broker_name):
                    m.reconsume_times += 1
                    back_failed.append(m)
            if back_failed:
                failed_ids = {id(m) for m in back_failed}
                done = [m for m in msgs if id(m) not in failed_ids]
                self._submit_later(back_failed, pq, mq)
        offset = pq.remove_messages(done)
        if offset >= 0 and not pq.dropped:
            assert c.offset_store is not None
            c.offset_store.update_offset(mq, offset, True)

    async def _verdict(self, msg: MessageExt, mq: MessageQueue) -> dict[str, Any]:
        c = self._consumer
        assert c._listener is not None
        status = await call_user(c._listener, [msg], ConsumeConcurrentlyContext(mq), executor=self.executor,
                                 is_async=c._listener_async)  # fmt: skip
        later = status is ConsumeConcurrentlyStatus.RECONSUME_LATER
        return {"consumeResult": "CR_LATER" if later else "CR_SUCCESS"}


async def clean_expired(consumer: ConcurrentlyView, process_queues: dict[MessageQueue, ProcessQueue]) -> None:
    """The concurrent mode's cleaner (Java ``ProcessQueue.cleanExpiredMsg``, run by
    ``ConsumeMessageConcurrentlyService``): a message whose listener call started more than ``consume_timeout`` ago
    is sent back (delay level 3) and dropped from the cache, so the committed offset can move past it. At most 16
    per queue per round, oldest first."""
    c = consumer
    now = now_ms()
    limit_ms = int(c.consume_timeout * 1000)
    for mq, pq in list(process_queues.items()):
        for _ in range(min(16, len(pq))):
            msgs = pq.messages()
            if not msgs:
                break
            first = msgs[0]
            started = first.properties.get(PROP_CONSUME_START_TIME)
            if not started or now - int(started) <= limit_ms:
                break
            log.warning("consume.timeout group=%s mq=%s msg_id=%s", c.group, mq, first.msg_id)
            if not await c.send_message_back(first, 3, mq.broker_name):
                break
            if pq.first_offset == first.queue_offset:
                offset = pq.remove_messages([first])
                if offset >= 0 and not pq.dropped and c.offset_store is not None:
                    c.offset_store.update_offset(mq, offset, True)


class OrderlyService(_Service):
    """Java ``ConsumeMessageOrderlyService``. ``lock(mq)`` asks the broker for a queue's lock again."""

    orderly = True

    def __init__(
        self,
        consumer: OrderlyView,
        executor: Executor | None,
        max_in_progress: int,
        lock: Callable[[MessageQueue], Awaitable[bool]],
    ) -> None:
        super().__init__(consumer, executor, max_in_progress)
        self._consumer = consumer
        self._lock = lock
        self._mq_locks: dict[MessageQueue, asyncio.Lock] = {}  # one consume loop per queue at a time

    def submit(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        self.tasks.spawn(self._consume(pq, mq), f"consume-orderly-{mq}")

    def _submit_later(self, pq: ProcessQueue, mq: MessageQueue, delay: float) -> None:
        delay = min(max(delay, 0.01), 30.0)

        async def later() -> None:
            await asyncio.sleep(delay)
            await self._consume(pq, mq)

        self.tasks.spawn(later(), f"consume-orderly-later-{mq}")

    def _try_lock_later_and_reconsume(self, mq: MessageQueue, pq: ProcessQueue, delay: float) -> None:
        async def later() -> None:
            await asyncio.sleep(delay)
            ok = self._consumer._running and await self._lock(mq)
            self._submit_later(pq, mq, 0.01 if ok else 3.0)

        self.tasks.spawn(later(), f"relock-{mq}")

    async def _consume(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        if pq.dropped:
            return
        c = self._consumer
        clustering = c.message_model_enum is MessageModel.CLUSTERING
        lock = self._mq_locks.setdefault(mq, asyncio.Lock())
        async with lock:
            if clustering and not (pq.locked and not pq.is_lock_expired()):
                if not pq.dropped:
                    self._try_lock_later_and_reconsume(mq, pq, 0.1)
                return
            begin = time.monotonic()
            while True:
                if pq.dropped:
                    return
                if clustering and (not pq.locked or pq.is_lock_expired()):
                    self._try_lock_later_and_reconsume(mq, pq, 0.01)
                    return
                if time.monotonic() - begin > MAX_TIME_CONSUME_CONTINUOUSLY:
                    self._submit_later(pq, mq, 0.01)
                    return
                msgs = pq.take_messages(max(1, c.consume_message_batch_max_size))
                restore_retry_topic(msgs, retry_topic(c.group))
                if not msgs:
                    return
                ctx = ConsumeOrderlyContext(mq)
                status: ConsumeOrderlyStatus
                async with pq.consume_lock:
                    if pq.dropped:
                        return
                    async with self._sem:
                        began = time.monotonic()
                        trace = c._trace
                        before = consume_before(trace, c.group, msgs) if trace is not None else None
                        code = ConsumeReturnType.SUCCESS
                        try:
                            assert c._listener is not None
                            got = await call_user(
                                c._listener, list(msgs), ctx, executor=self.executor, is_async=c._listener_async,
                            )  # fmt: skip
                            status = got if isinstance(got, ConsumeOrderlyStatus) else ConsumeOrderlyStatus.SUCCESS
                        except Exception as exc:
                            log.warning("consume_orderly.failed group=%s mq=%s error=%r", c.group, mq, exc)
                            status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                            code = ConsumeReturnType.EXCEPTION
                        ok = status in (ConsumeOrderlyStatus.SUCCESS, ConsumeOrderlyStatus.COMMIT)
                        c.stats.on_consume_rt(c.group, mq.topic, (time.monotonic() - began) * 1000, ok)
                        if before is not None and trace is not None:
                            consume_after(trace, before, ok, code if ok or code is not ConsumeReturnType.SUCCESS
                                          else ConsumeReturnType.FAILED)  # fmt: skip
                if not await self._process_result(msgs, status, ctx, pq, mq):
                    return

    async def _process_result(
        self,
        msgs: list[MessageExt],
        status: ConsumeOrderlyStatus,
        ctx: ConsumeOrderlyContext,
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> bool:
        """Java ``ConsumeMessageOrderlyService.processConsumeResult``; False stops the consume loop."""
        c = self._consumer
        cont = True
        commit_offset = -1
        suspend = ctx.suspend_current_queue_time
        suspend_time = c.suspend_current_queue_time if suspend is None else suspend
        if ctx.auto_commit:
            if status is ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
                c.stats.on_consumed(c.group, mq.topic, 0, len(msgs))
                if await self._check_reconsume_times(msgs):
                    pq.make_message_to_consume_again(msgs)
                    self._submit_later(pq, mq, suspend_time)
                    cont = False
                else:
                    commit_offset = pq.commit()
            else:
                c.stats.on_consumed(c.group, mq.topic, len(msgs), 0)
                commit_offset = pq.commit()
        else:
            if status is ConsumeOrderlyStatus.SUCCESS:
                c.stats.on_consumed(c.group, mq.topic, len(msgs), 0)
            elif status is ConsumeOrderlyStatus.COMMIT:
                commit_offset = pq.commit()
            elif status is ConsumeOrderlyStatus.ROLLBACK:
                pq.rollback()
                self._submit_later(pq, mq, suspend_time)
                cont = False
            else:
                c.stats.on_consumed(c.group, mq.topic, 0, len(msgs))
                if await self._check_reconsume_times(msgs):
                    pq.make_message_to_consume_again(msgs)
                    self._submit_later(pq, mq, suspend_time)
                    cont = False
        if commit_offset >= 0 and not pq.dropped:
            assert c.offset_store is not None
            c.offset_store.update_offset(mq, commit_offset, False)
        return cont

    async def _check_reconsume_times(self, msgs: Sequence[MessageExt]) -> bool:
        """True: suspend and retry locally; messages over the retry limit go to the retry topic (→ DLQ)."""
        c = self._consumer
        suspend = False
        limit = c._max_reconsume_times_orderly()
        for m in msgs:
            if m.reconsume_times >= limit:
                m.properties[PROP_RECONSUME_TIME] = str(m.reconsume_times)
                try:
                    await c._resend_to_retry_topic(m, m.reconsume_times, 3 + m.reconsume_times)
                except Exception as exc:
                    log.error("consume_orderly.send_back_failed msg_id=%s error=%s", m.msg_id, exc)
                    suspend = True
                    m.reconsume_times += 1
            else:
                suspend = True
                m.reconsume_times += 1
        return suspend

    async def _verdict(self, msg: MessageExt, mq: MessageQueue) -> dict[str, Any]:
        c = self._consumer
        assert c._listener is not None
        octx = ConsumeOrderlyContext(mq)
        status = await call_user(c._listener, [msg], octx, executor=self.executor, is_async=c._listener_async)
        return {
            "autoCommit": octx.auto_commit,
            "consumeResult": {
                ConsumeOrderlyStatus.COMMIT: "CR_COMMIT", ConsumeOrderlyStatus.ROLLBACK: "CR_ROLLBACK",
                ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT: "CR_LATER",
            }.get(status, "CR_SUCCESS"),
        }  # fmt: skip
