"""Live progress on stderr: one rewritten line a second on a terminal, a line every few seconds otherwise."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TextIO

from rocketq.bench.load import Counter

__all__ = ["Progress", "progress_line"]


def progress_line(label: str, elapsed: float, done: int, rate_now: float, errors: int, p99_ms: float | None) -> str:
    parts = [f"{label:<28}", f"{elapsed:6.1f} s", f"{done:>12,} msg", f"{rate_now:>10,.0f} msg/s"]
    if p99_ms is not None:
        parts.append(f"p99 {p99_ms:7.2f} ms")
    if errors:
        parts.append(f"errors {errors:,}")
    return "  ".join(parts)


class Progress:
    """``async with Progress(label, counter):`` prints while the block runs (no-op when disabled)."""

    def __init__(self, label: str, counter: Counter, *, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.label = label
        self.counter = counter
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self._tty = self.stream.isatty()
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        interval = 1.0 if self._tty else 5.0
        t0 = last_t = time.perf_counter()
        last_done = 0
        while True:
            await asyncio.sleep(interval)
            now = time.perf_counter()
            c = self.counter
            rate = (c.done - last_done) / (now - last_t)
            last_t, last_done = now, c.done
            recent = c.latencies.recent(2000) if len(c.latencies) else None
            line = progress_line(self.label, now - t0, c.done, rate, c.errors, recent.p99 if recent else None)
            self.stream.write(f"\r{line}\x1b[K" if self._tty else f"{line}\n")
            self.stream.flush()

    async def __aenter__(self) -> Progress:
        if self.enabled:
            self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            if self._tty:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
