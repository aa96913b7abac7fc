"""The consume services driven through a fake consumer view — no ``PushConsumer``, as a POP consumer will drive
them: batches reach the listener, failures go to ``send_message_back``, offsets move, orderly queues retry, and
CONSUME_MESSAGE_DIRECTLY answers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rocketq.client._consume_service import (
    ConcurrentlyService,
    ConsumeStats,
    OrderlyService,
    retry_message,
)
from rocketq.client.listener import ConsumeConcurrentlyStatus, ConsumeOrderlyStatus
from rocketq.client.message import MessageExt
from rocketq.client.offset_store import OffsetStore
from rocketq.client.process_queue import ProcessQueue
from rocketq.client.subscription import MessageModel
from rocketq.common.stats_items import StatsTable
from rocketq.protocol.bodies import MessageQueue

MQ = MessageQueue("T", "broker-a", 0)


class _Store(OffsetStore):
    async def _read_from_store(self, mq: MessageQueue) -> int:
        return -1

    async def persist(self, mq: MessageQueue) -> None:
        pass

    async def persist_all(self, mqs: Any) -> None:
        pass


class _View:
    """The members ``ConcurrentlyView`` and ``OrderlyView`` list, and nothing else."""

    def __init__(self, listener: Callable[..., Any], model: MessageModel = MessageModel.CLUSTERING) -> None:
        self.group = "g"
        self.message_model_enum = model
        self.consume_message_batch_max_size = 2
        self.offset_store: OffsetStore | None = _Store()
        self.stats = ConsumeStats()
        self._listener: Callable[..., Any] | None = listener
        self._listener_async = asyncio.iscoroutinefunction(listener)
        self.consume_timeout = 900.0
        self.suspend_current_queue_time = 0.01
        self._running = True
        self.sent_back: list[tuple[int, int]] = []
        self.back_ok = True
        self.resent: list[int] = []
        self._trace = None  # no message trace

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None = None) -> bool:
        self.sent_back.append((msg.queue_offset, delay_level))
        return self.back_ok

    def _max_reconsume_times_orderly(self) -> int:
        return 1

    async def _resend_to_retry_topic(self, msg: MessageExt, reconsume_time: int, delay_level: int) -> None:
        self.resent.append(msg.queue_offset)


def _messages(*offsets: int) -> list[MessageExt]:
    out = []
    for off in offsets:
        m = MessageExt("T", b"x")
        m.queue_offset = off
        out.append(m)
    return out


async def test_concurrent_batches_success_and_send_back() -> None:
    seen: list[list[int]] = []

    async def listener(msgs: list[MessageExt], ctx: Any) -> ConsumeConcurrentlyStatus:
        seen.append([m.queue_offset for m in msgs])
        return ConsumeConcurrentlyStatus.RECONSUME_LATER if msgs[0].queue_offset == 2 else None  # type: ignore[return-value]

    view = _View(listener)
    service = ConcurrentlyService(view, None, 4)
    pq = ProcessQueue()
    msgs = _messages(0, 1, 2, 3)
    pq.put_messages(msgs)
    service.submit(msgs, pq, MQ)
    await service.shutdown(5.0)
    assert sorted(seen) == [[0, 1], [2, 3]]  # batches of consume_message_batch_max_size
    assert view.sent_back == [(2, 0), (3, 0)]  # the failed batch, broker-chosen delay
    assert view.stats.consumed_ok == 2 and view.stats.consumed_failed == 2
    assert view.offset_store is not None and view.offset_store.offset_table[MQ] == 4 and pq.msg_count == 0
    # the running info's statusTable for the queue's topic: two OK, two failed, each counted at once
    status = view.stats.status("g", "T")
    assert status["consumeFailedMsgs"] == 2 and status["consumeOKTPS"] > 0 and status["consumeFailedTPS"] > 0
    assert status["consumeRT"] >= 0 and view.stats.topics == {"T"}


async def test_concurrent_broadcast_failures_are_dropped_not_sent_back() -> None:
    def listener(msgs: list[MessageExt], ctx: Any) -> ConsumeConcurrentlyStatus:
        raise RuntimeError("boom")

    view = _View(listener, MessageModel.BROADCASTING)
    service = ConcurrentlyService(view, None, 1)
    pq = ProcessQueue()
    msgs = _messages(5)
    pq.put_messages(msgs)
    service.submit(msgs, pq, MQ)
    await service.shutdown(5.0)
    assert view.sent_back == [] and view.stats.consumed_failed == 1 and pq.msg_count == 0


async def test_orderly_retries_then_resends_over_the_limit() -> None:
    calls: list[int] = []

    async def listener(msgs: list[MessageExt], ctx: Any) -> ConsumeOrderlyStatus:
        calls.append(msgs[0].queue_offset)
        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT

    async def lock(mq: MessageQueue) -> bool:
        return True

    view = _View(listener, MessageModel.BROADCASTING)  # no broker lock needed
    view.consume_message_batch_max_size = 1
    service = OrderlyService(view, None, 1, lock)
    pq = ProcessQueue()
    pq.put_messages(_messages(7))
    service.submit(pq, MQ)
    for _ in range(100):
        if view.resent:
            break
        await asyncio.sleep(0.01)
    await service.shutdown(1.0)
    assert calls[:2] == [7, 7] and view.resent == [7]  # once suspended, then over the limit of 1: to the retry topic
    assert view.offset_store is not None and view.offset_store.offset_table[MQ] == 8


async def test_consume_directly_answers_for_both_modes() -> None:
    def concurrently(msgs: list[MessageExt], ctx: Any) -> ConsumeConcurrentlyStatus:
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    def orderly(msgs: list[MessageExt], ctx: Any) -> ConsumeOrderlyStatus:
        ctx.auto_commit = False
        return ConsumeOrderlyStatus.COMMIT

    async def lock(mq: MessageQueue) -> bool:
        return True

    got = await ConcurrentlyService(_View(concurrently), None, 1).consume_directly(_messages(1)[0], "broker-a")
    assert list(got) == ["order", "autoCommit", "consumeResult", "spentTimeMills"]
    assert (got["order"], got["autoCommit"], got["consumeResult"]) == (False, True, "CR_LATER")
    got = await OrderlyService(_View(orderly), None, 1, lock).consume_directly(_messages(1)[0], None)
    assert (got["order"], got["autoCommit"], got["consumeResult"]) == (True, False, "CR_COMMIT")


def test_retry_message() -> None:
    m = _messages(3)[0]
    m.properties["TRAN_MSG"] = "true"
    new = retry_message("g", m, 2, 5, 16)
    assert new.topic == "%RETRY%g" and new.properties["RETRY_TOPIC"] == "T"
    assert (new.properties["RECONSUME_TIME"], new.properties["MAX_RECONSUME_TIMES"], new.properties["DELAY"]) == (
        "2", "16", "5",
    )  # fmt: skip
    assert "TRAN_MSG" not in new.properties


def test_retry_message_keeps_an_origin_id_unless_blank() -> None:
    """Java: ``UtilAll.isBlank(originMsgId) ? msg.getMsgId() : originMsgId`` (the client id of the message)."""
    kept = "0A0000010000000000000001"
    for origin, expected in ((None, None), ("", None), ("  ", None), (kept, kept)):
        m = _messages(1)[0]
        if origin is not None:
            m.properties["ORIGIN_MESSAGE_ID"] = origin
        new = retry_message("g", m, 1, 3, 16)
        assert new.properties["ORIGIN_MESSAGE_ID"] == (expected or m.msg_id)


def test_consume_status_windows_follow_javas_consumer_stats() -> None:
    """ConsumeStatus per topic: TPS and RT over the minute's samples, failures summed over the hour; a consume RT
    with nothing in the minute falls back to the hour's (Java's getConsumeRT)."""
    now = [1000.0]
    stats = ConsumeStats(windows=StatsTable(lambda: now[0]))
    assert stats.status("g", "T") == {"consumeFailedMsgs": 0, "consumeFailedTPS": 0.0, "consumeOKTPS": 0.0,
                                      "consumeRT": 0.0, "pullRT": 0.0, "pullTPS": 0.0}  # fmt: skip
    stats.on_pull("g", "T", 32, 4.0)
    stats.on_pull("g", "T", 0, 10.0)  # a pull that found an empty list: its RT counts, no messages
    stats.on_consumed("g", "T", 30, 2)
    stats.on_consume_rt("g", "T", 20.0)
    stats.on_consume_rt("g", "T", 40.0)
    now[0] += 60.0
    s = stats.status("g", "T")
    assert (s["pullTPS"], s["pullRT"]) == (32 / 60, 7.0)
    assert (s["consumeOKTPS"], s["consumeFailedTPS"], s["consumeRT"], s["consumeFailedMsgs"]) == (0.5, 2 / 60, 30.0, 2)
    assert stats.pulled == 32 and (stats.consumed_ok, stats.consumed_failed) == (30, 2)
    for _ in range(7):  # seven 10-s samples: the minute window now starts after the counts
        now[0] += 10.0
        stats.sample()
    s = stats.status("g", "T")
    assert (s["pullTPS"], s["consumeOKTPS"], s["consumeFailedTPS"]) == (0.0, 0.0, 0.0)
    assert s["consumeFailedMsgs"] == 2 and s["consumeRT"] == 30.0  # the hour still holds them
    assert stats.status("g", "Other") == {k: 0 for k in s}
