"""Gathering auto-batched sends: the compiled fast path (``_gather_c``) against the method it stands in for
(``ProduceAccumulator.gather``), over the same sends: the same futures, accumulations, held bytes and batches."""

from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client import Message, MessageQueue
from rocketq.client import gathering as gathering_module
from rocketq.client._accumulator import ProduceAccumulator

try:  # imported whether or not ROCKETQ_NO_EXTENSIONS switches it off: the twins are compared in both runs
    from rocketq.client import _gather_c as COMPILED
except ImportError:  # pragma: no cover - make test sets ROCKETQ_REQUIRE_NATIVE=1, checked below
    COMPILED = None
TWINS: list[Any] = [ProduceAccumulator.gather] + ([COMPILED.gather] if COMPILED is not None else [])


def test_the_compiled_twin_is_built_where_required() -> None:
    if os.environ.get("ROCKETQ_REQUIRE_NATIVE") == "1":
        assert gathering_module.IMPLEMENTATION == "c", "rocketq.client._gather_c was not built (C compiler?)"


class _Sub(Message):
    __slots__ = ()


MQ = MessageQueue("GatherT", "broker-a", 1)
SEND = st.fixed_dictionaries({
    "topic": st.sampled_from(["GatherT", "GatherT", "GatherU", "%RETRY%g", "bad topic!"]),
    "body": st.sampled_from([1, 700, 1500, 0, 5000]),
    "tags": st.sampled_from([None, None, "TagA"]),
    "extra": st.sampled_from([None, None, None, "DELAY", "WAIT_FALSE", "OTHER", "PGROUP"]),
    "queue": st.booleans(),
    "asynchronous": st.booleans(),
    "subclass": st.sampled_from([False, False, False, True]),
    "metrics": st.sampled_from([False, False, False, True]),
})  # fmt: skip


def _message(spec: dict[str, Any], i: int) -> Message:
    cls = _Sub if spec["subclass"] else Message
    msg = cls(spec["topic"], bytes([i % 256]) * spec["body"] if spec["body"] else b"x", tags=spec["tags"])
    if spec["body"] == 0:
        msg.body = b""
    extra = spec["extra"]
    if extra == "DELAY":
        msg.properties["DELAY"] = "2"
    elif extra == "WAIT_FALSE":
        msg.properties["WAIT"] = "false"
    elif extra == "OTHER":
        msg.properties["K"] = "v"
    elif extra == "PGROUP":
        msg.properties["PGROUP"] = "tx"
    return msg


class _Metrics:
    def on_send(self, *args: Any) -> None: ...


def _run(gather: Any, sends: list[dict[str, Any]], loop: asyncio.AbstractEventLoop) -> Any:
    """The observable outcome of ``sends`` gathered through ``gather``."""
    messages: list[Message] = []
    batches: list[Any] = []

    def spawn(coro: Any, name: str) -> None:  # a batch sent: its accumulation, from the unstarted _send(acc)
        a = coro.cr_frame.f_locals["acc"]
        batches.append((a.key[0], a.key[2:], [messages.index(m) for m in a.messages], a.size))
        coro.close()

    owner = SimpleNamespace(send_msg_timeout=3.0, max_message_size=4096, _id_gen=None, _async_in_flight=set(),
                            instance=SimpleNamespace(client_id="cid"), _tasks=SimpleNamespace(spawn=spawn))  # fmt: skip
    acc = ProduceAccumulator(owner, batch_max_delay_ms=30_000, batch_max_bytes=3000,  # type: ignore[arg-type]
                             total_batch_max_bytes=9000)  # fmt: skip
    steps = []
    for i, spec in enumerate(sends):
        msg = _message(spec, i)
        messages.append(msg)
        metrics = _Metrics() if spec["metrics"] else None
        fut = gather(acc, msg, MQ if spec["queue"] else None, print, None, loop, metrics, spec["asynchronous"])
        if fut is None:
            steps.append(None)
            continue
        exc = fut.exception() if fut.done() else None
        meter = fut._meter
        steps.append((type(fut).__name__, fut.done(), repr(exc), fut._owner is owner, fut._on_success is print,
                      fut._on_exception, None if meter is None else meter[1:3]))  # fmt: skip
    held = [(a.key[0], a.key[1] is MQ, a.key[2:], [messages.index(m) for m in a.messages], a.size,
             [messages.index(m) for m in a.messages] == [messages.index(m) for m in a.messages])
            for a in acc._open.values()]  # fmt: skip
    for a in acc._open.values():
        assert a.timer is not None
        a.timer.cancel()
        assert len(a.futures) == len(a.messages)
    return steps, held, batches, acc.held_bytes


@pytest.mark.skipif(COMPILED is None, reason="the compiled twin is not built here (ROCKETQ_REQUIRE_NATIVE guards CI)")
@settings(max_examples=150, deadline=None)
@given(st.lists(SEND, min_size=1, max_size=14))
def test_twins_agree(sends: list[dict[str, Any]]) -> None:
    loop = asyncio.new_event_loop()
    try:
        outcomes = [_run(gather, sends, loop) for gather in TWINS]
    finally:
        loop.close()
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("gather", TWINS, ids=["py", "c"][: len(TWINS)])
async def test_sends_join_their_accumulation_and_a_full_one_goes(gather: Any) -> None:
    spec = {"topic": "GatherT", "body": 1500, "tags": None, "extra": None, "queue": False, "asynchronous": True,
            "subclass": False, "metrics": False}  # fmt: skip
    steps, held, batches, held_bytes = _run(gather, [spec] * 5, asyncio.get_running_loop())
    assert batches == [("GatherT", (True, None, True), [0, 1, 2], 4500)]  # over 3000 bytes: sent
    assert [h[3] for h in held] == [[3, 4]] and held_bytes == 7500  # the sent batch's bytes stay held until answered
    assert all(s is not None and s[0] == "SendFuture" and not s[1] for s in steps)
