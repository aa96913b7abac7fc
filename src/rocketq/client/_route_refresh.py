"""Route refresh triggered by a broker connection failure (rocketq; Java clients wait for their 30 s poll).

When a connection to a broker cannot be made, or one is lost, every topic whose route names that address is
fetched again from the name server, so producers drop a broker group whose master is gone (Java's publish
rule) and consumers move to its slave within about a second. Per topic the refreshes are debounced: the first
runs at once, failures reported during the next ``interval`` seconds fold into one more refresh at its end.
A refresh that finds the route unchanged is tried once more after ``interval`` (the name server may not have
seen the broker's connection close yet when the client did).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

Refresh = Callable[[str], Awaitable[object]]
Spawn = Callable[[Coroutine[Any, Any, None], str], object]


class FailureRefresh:
    def __init__(self, refresh: Refresh, spawn: Spawn, interval: float = 1.0) -> None:
        self._refresh = refresh
        self._spawn = spawn
        self.interval = interval
        self._last: dict[str, float] = {}
        self._scheduled: set[str] = set()
        #: refreshes started (tests read it)
        self.count = 0

    def trigger(self, topics: list[str], *, follow_up: bool = True) -> None:
        now = time.monotonic()
        for topic in topics:
            if topic in self._scheduled:
                continue  # a refresh is already coming; it will see the name server's newest route
            delay = max(0.0, self._last.get(topic, -1e9) + self.interval - now)
            self._scheduled.add(topic)
            self._spawn(self._run(topic, delay, follow_up), f"route-refresh-{topic}")

    async def _run(self, topic: str, delay: float, follow_up: bool) -> None:
        try:
            if delay > 0:
                await asyncio.sleep(delay)
        finally:
            self._scheduled.discard(topic)
        self._last[topic] = time.monotonic()
        self.count += 1
        try:
            changed = await self._refresh(topic)
            log.info("route.refresh_on_failure topic=%s changed=%s", topic, changed)
        except Exception as exc:  # the name server may be unreachable too; the periodic poll goes on
            log.warning("route.refresh_on_failure_failed topic=%s error=%s", topic, exc)
            changed = False
        if not changed and follow_up:
            self.trigger([topic], follow_up=False)  # once more, one interval later
