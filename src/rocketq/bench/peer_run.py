"""What every outside peer of ``benchmarks/peer_compare.py`` shares: a measured window's figures (``PeerRun``), a
free loopback port, the CPU of the server and of this load generator over a window, the warm-up-then-measure of
a send scenario, and stopping a server started in a session of its own."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from rocketq.bench.echo import cpu_seconds
from rocketq.bench.stats import LatencyRecorder

__all__ = ["PeerRun", "SendFor", "Window", "close_window", "free_port", "measured_sends", "open_window", "send_each",
           "stop_session"]  # fmt: skip

#: server CPU seconds, this process's CPU seconds, wall clock at the start of a window
Window = tuple[float | None, float | None, float]


@dataclass
class PeerRun:
    """One measured window: what a peer carried, and what it cost its server and the load generator."""

    messages: int = 0
    seconds: float = 0.0
    server_cpu_s: float | None = None
    client_cpu_s: float | None = None
    latency_ms: dict[str, float] | None = None
    errors: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def msgs_per_s(self) -> float | None:
        return self.messages / self.seconds if self.messages and self.seconds > 0 else None

    def us_per_msg(self, cpu_s: float | None) -> float | None:
        return None if cpu_s is None or not self.messages else round(cpu_s / self.messages * 1e6, 2)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def open_window(server_pid: int) -> Window:
    return cpu_seconds(server_pid), cpu_seconds(os.getpid()), time.perf_counter()


def close_window(run: PeerRun, server_pid: int, start: Window) -> None:
    """Fill ``run``'s seconds and both CPU figures from ``start`` to now."""
    s0, c0, t0 = start
    s1, c1, t1 = open_window(server_pid)
    run.seconds = t1 - t0
    run.server_cpu_s = None if s0 is None or s1 is None else s1 - s0
    run.client_cpu_s = None if c0 is None or c1 is None else c1 - c0


#: sends for ``seconds``, each timed into the recorder when one is given; returns how many were acknowledged
SendFor = Callable[[float, LatencyRecorder | None], Awaitable[int]]


async def measured_sends(server_pid: int, send_for: SendFor, *, warmup: float, duration: float,
                         latency: bool) -> PeerRun:  # fmt: skip
    """A send scenario of a peer: ``warmup`` seconds unmeasured, then ``duration`` seconds inside a CPU window
    (with each send's latency when ``latency``: the one-at-a-time scenario)."""
    await send_for(warmup, None)
    run = PeerRun()
    recorder = LatencyRecorder() if latency else None
    start = open_window(server_pid)
    run.messages = await send_for(duration, recorder)
    close_window(run, server_pid, start)
    summary = recorder.summary() if recorder is not None else None
    if summary is not None:
        run.latency_ms = {"p50": summary.p50, "p99": summary.p99}
    return run


async def send_each(send: Callable[[], Awaitable[object]], seconds: float, recorder: LatencyRecorder | None) -> int:
    """One send at a time, each awaited, for ``seconds``."""
    perf = time.perf_counter
    deadline = perf() + seconds
    done = 0
    while perf() < deadline:
        t = perf()
        await send()
        if recorder is not None:
            recorder.record(perf() - t)
        done += 1
    return done


async def stop_session(proc: asyncio.subprocess.Process, grace: float) -> None:
    """Stop a server started with ``start_new_session=True``: SIGTERM to its whole session (a start script and
    what it started), SIGKILL after ``grace`` seconds."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        async with asyncio.timeout(grace):
            await proc.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
