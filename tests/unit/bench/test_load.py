"""Load shapes: the in-flight window and the steady-rate pacer (no broker; futures stand in for sends)."""

from __future__ import annotations

import asyncio

import pytest

from rocketq.bench.load import Counter, Pacer, run_rate, run_window, sends_due


def test_sends_due() -> None:
    assert sends_due(0.0, 1000, 0) == 0
    assert sends_due(0.0105, 1000, 0) == 10
    assert sends_due(0.0105, 1000, 10) == 0
    assert sends_due(1.0, 1000, 2000) == 0  # ahead of schedule: nothing due, never negative


def test_pacer_catches_up_in_bounded_bursts() -> None:
    p = Pacer(rate=1000, max_burst=50)
    assert p.due(0.010) == 10
    assert p.due(0.010) == 0
    assert p.due(1.0) == 50  # a late tick catches up at most max_burst at a time
    assert p.sent == 60
    assert p.due(1.0) == 50


class _FakeBroker:
    """Answers each operation on the next loop iteration; fails every ``fail_every``-th."""

    def __init__(self, fail_every: int = 0) -> None:
        self.outstanding = 0
        self.max_outstanding = 0
        self.calls = 0
        self.fail_every = fail_every

    def op(self) -> asyncio.Future[object]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[object] = loop.create_future()
        self.calls += 1
        self.outstanding += 1
        self.max_outstanding = max(self.max_outstanding, self.outstanding)
        failing = self.fail_every and self.calls % self.fail_every == 0

        def answer() -> None:
            self.outstanding -= 1
            if failing:
                fut.set_exception(RuntimeError("refused"))
            else:
                fut.set_result(None)

        loop.call_soon(answer)
        return fut


async def test_window_runs_exactly_total_ops_with_bounded_inflight() -> None:
    broker = _FakeBroker()
    counter = Counter()
    elapsed = await run_window(broker.op, inflight=7, counter=counter, total_ops=100, per_op=3)
    assert broker.calls == 100
    assert broker.max_outstanding == 7
    assert counter.done == 300 and counter.errors == 0
    assert len(counter.latencies) == 100
    assert elapsed >= 0


async def test_window_counts_failures_and_keeps_going() -> None:
    broker = _FakeBroker(fail_every=4)
    counter = Counter()
    await run_window(broker.op, inflight=3, counter=counter, total_ops=40)
    assert counter.errors == 10 and counter.done == 30
    assert isinstance(counter.first_error, RuntimeError)


async def test_window_accepts_coroutines_and_sync_raises() -> None:
    calls = 0

    async def op() -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise ValueError("bad")

    counter = Counter()
    await run_window(op, inflight=2, counter=counter, total_ops=5)
    assert counter.done == 4 and counter.errors == 1

    def raising() -> asyncio.Future[object]:
        raise OSError("no connection")

    counter = Counter()
    await run_window(raising, inflight=2, counter=counter, total_ops=3)
    assert counter.errors == 3 and counter.done == 0


async def test_window_by_duration() -> None:
    broker = _FakeBroker()
    counter = Counter()
    await run_window(broker.op, inflight=4, counter=counter, duration=0.05)
    assert counter.done > 0 and broker.outstanding == 0
    with pytest.raises(ValueError):
        await run_window(broker.op, inflight=1, counter=counter)


async def test_rate_skips_when_too_much_is_outstanding() -> None:
    loop = asyncio.get_running_loop()
    never: list[asyncio.Future[object]] = []

    def op() -> asyncio.Future[object]:
        fut: asyncio.Future[object] = loop.create_future()
        never.append(fut)
        return fut

    counter = Counter()
    task = asyncio.ensure_future(run_rate(op, rate=2000, duration=0.05, counter=counter, max_outstanding=5))
    await asyncio.sleep(0.1)
    assert len(never) == 5 and counter.skipped > 0
    for fut in never:
        fut.set_result(None)
    elapsed, started = await task
    assert started == 5 and counter.done == 5 and elapsed >= 0.05
