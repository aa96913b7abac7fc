"""A wake-up for a broker service's loop that any thread may give (the store's arrival listener runs in the
thread that wrote the message), so services wait for work instead of polling for it."""

from __future__ import annotations

import asyncio
import contextlib
import threading


class WakeSignal:
    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0

    def bind(self) -> None:
        """Attach to the running loop (the service's start)."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._event = asyncio.Event()

    def set(self) -> None:
        loop = self._loop
        if loop is None or self._event.is_set():
            return
        if threading.get_ident() == self._thread:
            self._event.set()
        else:
            loop.call_soon_threadsafe(self._event.set)

    def clear(self) -> None:
        """Before looking for work: a wake-up given while looking ends the next wait at once."""
        self._event.clear()

    async def wait(self, timeout: float | None) -> None:
        """Until woken, or ``timeout`` seconds (None: no limit)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)
