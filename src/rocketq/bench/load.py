"""Load shapes: a window of N operations in flight, and a steady rate.

Both drive *operations* that each stand for ``per_op`` messages (1, or the batch size). Completion is seen in a
future's done-callback, not in a task per operation, so the load generator spends its CPU on the client under
test rather than on its own bookkeeping.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from rocketq.bench.stats import LatencyRecorder

__all__ = ["Counter", "Pacer", "run_rate", "run_window", "sends_due"]

StartOp = Callable[[], "asyncio.Future[object] | Awaitable[object]"]


@dataclass(slots=True)
class Counter:
    """Progress of a scenario: messages done and failed operations. Read by the progress display."""

    done: int = 0
    errors: int = 0
    skipped: int = 0  # operations a steady-rate sender dropped because too many were unanswered
    first_error: BaseException | None = None
    latencies: LatencyRecorder = field(default_factory=LatencyRecorder)

    def fail(self, exc: BaseException) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = exc


def _as_future(op: asyncio.Future[object] | Awaitable[object]) -> asyncio.Future[object]:
    if isinstance(op, asyncio.Future):
        return op
    return asyncio.ensure_future(op)


async def run_window(
    start_op: StartOp,
    *,
    inflight: int,
    counter: Counter,
    per_op: int = 1,
    total_ops: int | None = None,
    duration: float | None = None,
) -> float:
    """Keep ``inflight`` operations outstanding until ``total_ops`` were started or ``duration`` s passed.

    Returns the elapsed seconds from the first start to the last completion. Each operation's latency goes into
    ``counter.latencies``; failures are counted, not raised.
    """
    if total_ops is None and duration is None:
        raise ValueError("give total_ops or duration")
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()
    started = outstanding = 0
    limit = float("inf") if total_ops is None else total_ops
    deadline = time.perf_counter() + duration if duration is not None else float("inf")
    record = counter.latencies.appender()
    perf = time.perf_counter
    future_type = asyncio.Future

    # Start times by future, and one context for every completion callback: no closure and no copied context
    # per operation (GC-tracked objects that the load generator would add to what it measures). The checks of
    # the limits, the future and the sample are inline: a call each per operation would be the generator's own
    # cost in the client's CPU.
    begun: dict[asyncio.Future[object], float] = {}
    context = contextvars.copy_context()

    def launch(t: float) -> None:
        nonlocal started, outstanding
        started += 1
        outstanding += 1
        try:
            op = start_op()
            fut = op if isinstance(op, future_type) else asyncio.ensure_future(op)
        except Exception as exc:
            counter.fail(exc)
            outstanding -= 1
            return
        begun[fut] = t
        fut.add_done_callback(on_done, context=context)

    def on_done(fut: asyncio.Future[object]) -> None:
        nonlocal outstanding
        now = perf()  # one clock reading: this operation's end, the deadline check, the next one's start
        t = begun.pop(fut)
        outstanding -= 1
        if fut.cancelled():
            counter.fail(asyncio.CancelledError())
        elif (exc := fut.exception()) is not None:
            counter.fail(exc)
        else:
            record(now - t)
            counter.done += per_op
        while outstanding < inflight and started < limit and now < deadline:
            launch(now)
        if outstanding == 0 and not finished.done():
            finished.set_result(None)

    t0 = perf()
    while outstanding < inflight and started < limit and (now := perf()) < deadline:
        launch(now)
    if outstanding == 0:
        return perf() - t0
    await finished
    return perf() - t0


def sends_due(elapsed: float, rate: float, sent: int) -> int:
    """How many operations a steady ``rate``/s sender is behind after ``elapsed`` s, having sent ``sent``."""
    return max(0, int(elapsed * rate) - sent)


@dataclass(slots=True)
class Pacer:
    """Steady-rate scheduling arithmetic, separate from the loop so it can be tested without one."""

    rate: float
    max_burst: int = 1000
    sent: int = 0

    def due(self, elapsed: float) -> int:
        n = min(self.max_burst, sends_due(elapsed, self.rate, self.sent))
        self.sent += n
        return n


async def run_rate(
    start_op: StartOp,
    *,
    rate: float,
    duration: float,
    counter: Counter,
    per_op: int = 1,
    max_outstanding: int = 100_000,
    tick: float = 0.001,
) -> tuple[float, int]:
    """Start ``rate`` operations a second for ``duration`` s (catching up in bursts after a late tick).

    Returns (elapsed seconds, operations started). Operations beyond ``max_outstanding`` unanswered are skipped
    (counted in ``counter.skipped``) so a stalled broker cannot make the generator's memory grow without bound.
    """
    loop = asyncio.get_running_loop()
    pacer = Pacer(rate)
    outstanding = 0
    started = 0
    all_done: asyncio.Future[None] = loop.create_future()
    stopping = False
    perf = time.perf_counter

    record = counter.latencies.record

    def on_done(fut: asyncio.Future[object], t: float) -> None:
        nonlocal outstanding
        outstanding -= 1
        if fut.cancelled():
            counter.fail(asyncio.CancelledError())
        elif (exc := fut.exception()) is not None:
            counter.fail(exc)
        else:
            record(perf() - t)
            counter.done += per_op
        if stopping and outstanding == 0 and not all_done.done():
            all_done.set_result(None)

    t0 = perf()
    while (elapsed := perf() - t0) < duration:
        for _ in range(pacer.due(elapsed)):
            if outstanding >= max_outstanding:
                counter.skipped += 1
                continue
            started += 1
            outstanding += 1
            t = perf()
            try:
                fut = _as_future(start_op())
            except Exception as exc:
                outstanding -= 1
                counter.fail(exc)
                continue
            fut.add_done_callback(lambda f, t=t: on_done(f, t))  # type: ignore[misc]
        await asyncio.sleep(tick)
    stopping = True
    if outstanding:
        await all_done
    return perf() - t0, started
