"""Owned background tasks: every task a client or the broker starts is tracked, logged if it fails, cancelled
on close.

A client's lifetime is ``start()`` … ``shutdown()`` rather than one ``async with`` block, so a ``TaskGroup``
does not fit; ``TaskSet`` gives the same guarantees (no orphan tasks, failures surface in the log).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class TaskSet:
    def __init__(self, logger: logging.Logger) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._log = logger
        self.closed = False

    def spawn(self, coro: Coroutine[Any, Any, T], name: str | None = None) -> asyncio.Task[T]:
        if self.closed:
            coro.close()
            raise RuntimeError("task set is closed")
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self._log.error("task.failed name=%s error=%r", task.get_name(), exc, exc_info=exc)

    def every(
        self, interval: Callable[[], float], fn: Callable[[], Awaitable[None]], name: str, initial_delay: float = 0.0
    ) -> asyncio.Task[None]:
        """Run ``fn`` after ``initial_delay`` and then every ``interval()`` seconds; failures are logged, not fatal."""

        async def loop() -> None:
            await asyncio.sleep(initial_delay)
            while True:
                try:
                    await fn()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    self._log.exception("scheduled.failed name=%s", name)
                await asyncio.sleep(interval())

        return self.spawn(loop(), name)

    def later(self, delay: float, fn: Callable[[], Awaitable[None]], name: str) -> asyncio.Task[None]:
        async def run() -> None:
            await asyncio.sleep(delay)
            await fn()

        return self.spawn(run(), name)

    async def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the running tasks to finish on their own."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)

    def __len__(self) -> int:
        return len(self._tasks)

    async def aclose(self, timeout: float = 5.0) -> None:
        self.closed = True
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            for t in pending:
                self._log.warning("task.stuck name=%s", t.get_name())
