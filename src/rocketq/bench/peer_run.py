"""What every outside peer of ``benchmarks/peer_compare.py`` shares: a measured window's figures (``PeerRun``), a
free loopback port, and the CPU of the server and of this load generator over a window."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field

from rocketq.bench.echo import cpu_seconds

__all__ = ["PeerRun", "Window", "close_window", "free_port", "open_window"]

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
