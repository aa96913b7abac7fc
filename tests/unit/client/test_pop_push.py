"""PopPushConsumer's verdicts on a listener's answer (Java's ConsumeMessagePop*Service rules), with the wire
calls recorded instead of sent."""

from __future__ import annotations

import time
from typing import Any

from rocketq.client import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    MessageExt,
    PopPushConsumer,
)
from rocketq.client.simple_consumer import MessageView

LEVELS = (10, 30, 60)


def _msgs(n: int, reconsume: int = 0, born_ms: int | None = None) -> list[MessageView]:
    out = []
    for i in range(n):
        m = MessageView("T", f"m{i}".encode(), {"UNIQ_KEY": f"K{i}"})
        m.queue_offset, m.reconsume_times = i, reconsume
        m.born_timestamp = int(time.time() * 1000) if born_ms is None else born_ms
        out.append(m)
    return out


def _consumer(listener: Any, **kw: Any) -> tuple[PopPushConsumer, list[tuple[str, bytes, float | None]]]:
    c = PopPushConsumer("g", listener, subscriptions={"T": "*"}, pop_delay_levels=LEVELS, max_reconsume_times=3,
                        **kw)  # fmt: skip
    calls: list[tuple[str, bytes, float | None]] = []

    async def ack(m: MessageExt) -> None:
        calls.append(("ack", m.body, None))

    async def change(m: MessageExt, seconds: float) -> None:
        calls.append(("change", m.body, seconds))

    c.simple.ack = ack  # type: ignore[method-assign]
    c.simple.change_invisible_duration = change  # type: ignore[method-assign]
    c._cached = 100
    return c, calls


async def test_success_acks_up_to_ack_index_and_delays_the_rest() -> None:
    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        ctx.ack_index = 0
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c, calls = _consumer(listener)
    msgs = _msgs(3, reconsume=1)
    await c._consume(msgs)
    assert calls == [("ack", b"m0", None), ("change", b"m1", 30), ("change", b"m2", 30)]
    assert c._cached == 97


async def test_failure_delays_by_delivery_count_or_the_context_level() -> None:
    async def later(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    async def raises(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> None:
        raise RuntimeError("boom")

    async def level2(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        ctx.delay_level_when_next_consume = 2
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    for listener, reconsume, want in ((later, 0, 10), (raises, 1, 30), (later, 2, 60), (level2, 0, 60)):
        c, calls = _consumer(listener)
        await c._consume(_msgs(1, reconsume=reconsume))
        assert calls == [("change", b"m0", want)], (listener, reconsume)


async def test_past_max_reconsume_acked_when_old_else_delayed() -> None:
    async def later(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    c, calls = _consumer(later)
    await c._consume(_msgs(1, reconsume=3, born_ms=int((time.time() - 1000) * 1000)))  # older than 2 x 60 s
    assert calls == [("ack", b"m0", None)]
    c, calls = _consumer(later)
    await c._consume(_msgs(1, reconsume=3, born_ms=int((time.time() - 20) * 1000)))  # 20 s old: the 30 s level
    assert calls == [("change", b"m0", 30)]
    c, calls = _consumer(later)
    await c._consume(_msgs(1, reconsume=5, born_ms=int((time.time() - 2) * 1000)))  # younger than every level
    assert calls == [("change", b"m0", 10)]


async def test_orderly_suspend_hides_the_rest_of_the_answer() -> None:
    seen: list[bytes] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        seen.append(msgs[0].body)
        if msgs[0].body == b"m1":
            ctx.suspend_current_queue_time = 2.5
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    c, calls = _consumer(listener, orderly=True)
    await c._consume_orderly(_msgs(3))
    assert seen == [b"m0", b"m1"]
    assert calls == [("ack", b"m0", None), ("change", b"m1", 2.5), ("change", b"m2", 2.5)]
    assert c._cached == 97
