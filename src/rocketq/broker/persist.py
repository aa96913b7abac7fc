"""Atomic JSON config files, as RocketMQ's ``MixAll.string2File``: write ``.tmp``, keep ``.bak``, rename.

Periodic persisters (consumer offsets, delay-level progress, timer progress) write through a
``BackgroundWriter`` so the ``fsync`` never stalls the event loop; one-off writes on admin changes stay
synchronous.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("rocketq.broker.persist")


def write_json_atomic(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if path.exists():
        bak = path.with_name(path.name + ".bak")
        try:
            os.replace(path, bak)
        except OSError:
            log.warning("persist.backup_failed path=%s", path)
    os.replace(tmp, path)


def read_json(path: Path) -> Any | None:
    """The file's JSON, falling back to ``.bak`` when the file is missing or damaged."""
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            return orjson.loads(candidate.read_bytes())
        except FileNotFoundError:
            continue
        except orjson.JSONDecodeError:
            log.error("persist.corrupt path=%s; trying the backup", candidate)
            continue
    return None


class BackgroundWriter:
    """Writes config snapshots with ``write_json_atomic`` on one worker thread, off the event loop.

    The caller takes the snapshot on the loop (a copy nobody else mutates) and hands over a function that
    turns it into the file's JSON; encoding, the write, the ``fsync`` and the renames happen on the thread.
    One thread for every file: writes never overlap (two writes of one file would share its ``.tmp``) and
    happen in submission order. ``busy(path)`` tells whether a write of ``path`` is still queued or running,
    so a periodic persister can skip a round instead of queueing snapshots. ``drain()`` blocks until every
    submitted write is done: call it before a final synchronous persist of the same files (shutdown).
    """

    def __init__(self, name: str = "rocketq-persist") -> None:
        self._name = name
        self._executor: ThreadPoolExecutor | None = None
        self._pending: dict[Path, concurrent.futures.Future[None]] = {}

    def busy(self, path: Path) -> bool:
        fut = self._pending.get(path)
        return fut is not None and not fut.done()

    def submit(self, path: Path, build: Callable[[], Any]) -> asyncio.Future[None]:
        """Queue one write of ``path`` with the JSON ``build()`` returns; the future is the write's outcome."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
        fut = self._executor.submit(_build_and_write, path, build)
        self._pending[path] = fut
        fut.add_done_callback(lambda f, path=path: self._forget(path, f))  # type: ignore[misc]
        return asyncio.wrap_future(fut)

    async def write(self, path: Path, build: Callable[[], Any]) -> None:
        """``submit`` and wait for it; cancelling the wait does not cancel the write (``drain`` waits for it)."""
        await asyncio.shield(self.submit(path, build))

    def _forget(self, path: Path, fut: concurrent.futures.Future[None]) -> None:
        if self._pending.get(path) is fut:
            del self._pending[path]

    def drain(self) -> None:
        """Block until every submitted write has finished (their errors were reported to their futures)."""
        pending = list(self._pending.values())
        if pending:
            concurrent.futures.wait(pending)

    def close(self) -> None:
        """``drain``, then stop the thread (a later ``submit`` starts a new one)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        self._pending.clear()


def _build_and_write(path: Path, build: Callable[[], Any]) -> None:
    write_json_atomic(path, build())
