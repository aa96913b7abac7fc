"""SYNC_MASTER's waits for a slave, committed as a group (Java's ``GroupTransferService``).

One number decides them all: ``acked``, the highest offset any slave has reported (a maximum over slaves,
never lowered, as Java's ``push2SlaveMaxOffset``). An ack completes every wait at or below it in one pass;
each wait that outlives ``timeout`` completes with False (FLUSH_SLAVE_TIMEOUT). Runs on the event loop;
``add`` may be called from any thread (the flush thread under SYNC_FLUSH).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import threading
from collections import deque

from rocketq.store.results import FlushCallback

log = logging.getLogger(__name__)


class _Wait:
    __slots__ = ("callback", "deadline", "done", "offset")

    def __init__(self, offset: int, deadline: float, callback: FlushCallback) -> None:
        self.offset = offset
        self.deadline = deadline
        self.callback = callback
        self.done = False


class ReplicaWaiters:
    def __init__(self, loop: asyncio.AbstractEventLoop, timeout_s: float) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self.timeout_s = timeout_s
        self.acked = 0
        self._by_offset: list[tuple[int, int, _Wait]] = []  # heap
        self._by_deadline: deque[_Wait] = deque()  # same timeout for all: insertion order is deadline order
        self._seq = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False

    def __len__(self) -> int:
        return sum(1 for w in self._by_deadline if not w.done)

    def add(self, offset: int, callback: FlushCallback) -> None:
        if threading.get_ident() == self._loop_thread:
            self._add(offset, callback)
        else:
            self._loop.call_soon_threadsafe(self._add, offset, callback)

    def _add(self, offset: int, callback: FlushCallback) -> None:
        if self._closed:
            _call(callback, False)
            return
        if offset <= self.acked:
            _call(callback, True)
            return
        w = _Wait(offset, self._loop.time() + self.timeout_s, callback)
        heapq.heappush(self._by_offset, (offset, next(self._seq), w))
        self._by_deadline.append(w)
        if self._timer is None:
            self._arm()

    def ack(self, offset: int) -> None:
        """A slave reported ``offset``: complete every wait it covers."""
        if offset <= self.acked:
            return
        self.acked = offset
        heap = self._by_offset
        while heap and heap[0][0] <= offset:
            w = heapq.heappop(heap)[2]
            if not w.done:
                w.done = True
                _call(w.callback, True)

    def _arm(self) -> None:
        q = self._by_deadline
        while q and q[0].done:
            q.popleft()
        self._timer = self._loop.call_at(q[0].deadline, self._expire) if q else None

    def _expire(self) -> None:
        now = self._loop.time()
        q = self._by_deadline
        while q and (q[0].done or q[0].deadline <= now):
            w = q.popleft()
            if not w.done:
                w.done = True
                _call(w.callback, False)
        if not q:
            self._by_offset.clear()  # only completed waits are left in it
        self._arm()

    def close(self) -> None:
        """Fail every wait (the service stops); later adds fail at once."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._by_deadline:
            w = self._by_deadline.popleft()
            if not w.done:
                w.done = True
                _call(w.callback, False)
        self._by_offset.clear()


def _call(callback: FlushCallback, ok: bool) -> None:
    try:
        callback(ok)
    except Exception:  # one failing answer must not strand the others
        log.exception("ha.waiter_callback_failed")
