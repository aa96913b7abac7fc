"""Broker-level counters for runtime info: totals and TPS over a sliding window."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable


class BrokerStats:
    def __init__(self, window: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self.clock = clock
        self.put_total = 0
        self.put_bytes = 0
        self.get_total = 0
        self.get_bytes = 0
        self._puts: deque[tuple[float, int]] = deque()
        self._gets: deque[tuple[float, int]] = deque()

    def on_put(self, count: int, size: int) -> None:
        self.put_total += count
        self.put_bytes += size
        self._record(self._puts, count)

    def on_get(self, count: int, size: int) -> None:
        self.get_total += count
        self.get_bytes += size
        self._record(self._gets, count)

    def _record(self, q: deque[tuple[float, int]], count: int) -> None:
        now = self.clock()
        second = int(now)
        if q and q[-1][0] == second:
            q[-1] = (second, q[-1][1] + count)
            return  # same second as the last record: nothing new can have left the window
        q.append((second, count))
        while q and q[0][0] < now - self.window:
            q.popleft()

    def _tps(self, q: deque[tuple[float, int]]) -> float:
        now = self.clock()
        while q and q[0][0] < now - self.window:
            q.popleft()
        return sum(c for _, c in q) / self.window

    def put_tps(self) -> float:
        return self._tps(self._puts)

    def get_tps(self) -> float:
        return self._tps(self._gets)
