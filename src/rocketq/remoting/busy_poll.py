"""Poll the sockets for a short while after a request instead of going to sleep at once.

An event loop with nothing to do blocks in ``epoll_wait``; the next request then costs a wake-up: the peer's
``send`` wakes the sleeping thread, and a virtual CPU that went idle is halted and has to be woken by the
hypervisor. On the VMs this project is measured on (Firecracker, ``haltpoll.guest_halt_poll_ns=0``) that is
most of a one-at-a-time round trip: the broker's share of a sync send was ~120 µs of CPU, of which ~45 µs was
the wake-up and the rest the same Python work as a pipelined send (~16 µs) run on cold caches.

``BusyPoller`` keeps the loop turning (one ``call_soon`` per iteration, so the loop polls with a zero timeout)
for ``limit`` seconds after the last read or answer — the quiet time is counted from the end of the work, not
from the request that started it. The limit adapts as Linux's ``haltpoll`` governor does: a read that came after
the loop stopped polling, but within ``max_limit`` of the last activity, doubles it (from ``GROW_START``) —
polling longer would have caught it; a read after a longer quiet period halves it, so a broker that sees a
request now and then polls for nothing. At most ``max_limit`` of CPU is spent per quiet period.

Polling pays only while the core is ours. Each polling turn gives the core away (``sched_yield``): a producer
woken on this core (Linux runs a wakee beside its waker) then runs at once, does its ~50 µs and blocks again for
the answer, and the yield comes back quickly. A thread that wants the core for longer (a CPU-bound job, another
broker under load) keeps it for a scheduler slice, milliseconds; a yield that took longer than ``LOST_CORE``
means polling is costing more than it can save, and it stops for ``COOLDOWN``. Measured on 2 cores, sync sends
(docs/performance.md, issue 25): the machine otherwise idle, polling +25–35 % over sleeping at once; beside one
CPU hog, polling without the yield −40 %, with the yield −28 %, with the back-off about even.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

#: the first limit after a read that polling would have caught (seconds)
GROW_START = 50e-6
#: how long polling stays off once the core was found contended (seconds)
COOLDOWN = 1.0
#: a yield that came back this late gave the core to a thread that ran a scheduler slice (Linux's minimum is
#: 0.75 ms × (1 + log2 CPUs)); a producer woken beside us gives it back within ~0.1 ms
LOST_CORE = 1e-3
_sched_yield = getattr(os, "sched_yield", lambda: None)


class BusyPoller:
    """One per event loop; ``kick()`` on every read. ``max_limit`` 0 turns polling off."""

    __slots__ = (
        "_clock", "_last", "_loop", "_off_until", "_polling", "backoffs", "idle_seconds", "limit", "max_limit",
        "polls_started",
    )  # fmt: skip

    def __init__(
        self,
        max_limit: float,
        loop: asyncio.AbstractEventLoop | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_limit = max(0.0, max_limit)
        self._clock = clock
        self._off_until = 0.0  # no polling before this (monotonic seconds): the core was wanted elsewhere
        #: times polling was turned off for COOLDOWN because a yield gave the core away for too long
        self.backoffs = 0
        self.limit = 0.0  # grows once requests come close enough together
        self._loop = loop
        self._last = -1.0  # monotonic time of the last read or answer
        self._polling = False
        #: times polling started (a figure for tests and stats)
        self.polls_started = 0
        #: seconds the loop spun with nothing to do: from the last read or answer to the next read caught while
        #: polling, or to the end of a poll. Spinning is CPU time, so this is the CPU polling cost (the
        #: ``rocketmq_busy_poll_idle_seconds_total`` metric)
        self.idle_seconds = 0.0

    def kick(self) -> None:
        """A read happened: adapt the limit and keep the loop polling for ``limit`` from now."""
        max_limit = self.max_limit
        if max_limit <= 0.0:
            return
        now = self._clock()
        gap = now - self._last
        self._last = now
        if self._polling:
            self.idle_seconds += gap  # spun since the last activity
            return  # caught while polling: the limit is right
        if gap <= max_limit:
            if gap > self.limit:
                self.limit = min(max(self.limit * 2.0, GROW_START), max_limit)
        elif self.limit > 0.0:
            half = self.limit / 2.0
            self.limit = half if half >= GROW_START else 0.0
        if self.limit > 0.0 and now >= self._off_until:
            self._polling = True
            self.polls_started += 1
            loop = self._loop
            if loop is None:
                loop = self._loop = asyncio.get_running_loop()
            loop.call_soon(self._poll)

    def touch(self) -> None:
        """Answers went out (a connection's flush): the quiet period (and the polling) starts now."""
        self._last = self._clock()

    def _poll(self) -> None:
        now = self._clock()
        quiet = now - self._last
        if quiet < self.limit:
            assert self._loop is not None
            _sched_yield()  # a thread waiting for this core (the producer beside us) runs first
            if self._clock() - now > LOST_CORE:  # it kept the core for a slice: polling loses here
                self._polling = False
                self._off_until = self._clock() + COOLDOWN
                self.backoffs += 1
                return
            self._loop.call_soon(self._poll)
        else:
            self._polling = False
            self.idle_seconds += quiet

    @property
    def polling(self) -> bool:
        return self._polling
