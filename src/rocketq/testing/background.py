"""An ``EmbeddedCluster`` on its own event loop in a daemon thread, for blocking code and any test style.

Clients reach it over TCP, so a synchronous test, an asyncio test on another loop and a separate process
(a Spark executor, a subprocess under test) all use it alike.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from rocketq.testing.cluster import EmbeddedCluster

T = TypeVar("T")


class BackgroundCluster:
    """``with BackgroundCluster(dir, **EmbeddedCluster_kwargs) as c: ... c.namesrv_addr``."""

    def __init__(self, base_dir: str | Path | None = None, **kwargs: Any) -> None:
        self.cluster = EmbeddedCluster(base_dir, **kwargs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def namesrv_addr(self) -> str:
        return self.cluster.namesrv_addr

    @property
    def broker_addr(self) -> str:
        return self.cluster.broker_addr

    def call(self, fn: Callable[[], Awaitable[T]], timeout: float = 60.0) -> T:
        """Run ``fn()`` on the cluster's loop and wait for it: ``c.call(lambda: c.cluster.restart_broker())``.

        The servers belong to that loop; awaiting their methods from another loop would break them.
        """
        if self._loop is None:
            raise RuntimeError("cluster not started")

        async def main() -> T:
            return await fn()

        return asyncio.run_coroutine_threadsafe(main(), self._loop).result(timeout)

    def start(self) -> BackgroundCluster:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="rocketq-cluster", daemon=True)
        self._thread.start()
        try:
            self.call(self.cluster.start)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            self.call(self.cluster.stop)
        finally:
            self._loop = self._thread = None
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)
            if not thread.is_alive():  # closing a loop that still runs raises; the daemon thread dies with us
                loop.close()

    def __enter__(self) -> BackgroundCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
