"""The one persistence contract of the broker's managers (Java's ``ConfigManager``).

Every manager with a file — topics, subscription groups, consumer offsets, queue locks, sink watermarks,
delay-level and timer progress — is a ``ConfigManager``: ``snapshot()`` copies its state on the loop and
returns what builds the file's JSON, ``decode()`` reads it back, ``data_version`` counts its changes. Writes
are atomic, as RocketMQ's ``MixAll.string2File``: write ``.tmp``, fsync, keep ``.bak``, rename. They happen
on the broker's one ``BackgroundWriter`` thread, off the event loop (``persist_soon``; ``flushed()`` waits for
the write), except where the caller must be durable before it goes on (``persist()``: shutdown, and the sink
watermark's write-ahead intent). A file that exists but cannot be read, with no readable ``.bak``, stops
start-up with ``ConfigFileError`` naming it: starting empty would silently drop topics or offsets.

Entries (``check``, see ``entries.py``): a manager whose state holds an entry that cannot be written or read
back (a number beyond Java's range, say) leaves that entry out of the file, logs it once (manager, file,
entry, why) and writes the others, so one bad value never stops a file from being saved. On load the same
check runs: like Java's ``ConfigManager.load``, a file with a bad entry is passed over for its ``.bak``; if
that is bad or missing too, a ``fail_closed`` manager (topics, groups, offsets, ...) stops start-up with a
``ConfigFileError`` naming the file and the entry, while one that is not (queue locks: leases that expire
anyway) starts without the bad entries and logs them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from rocketq.broker.managers.entries import BadEntry
from rocketq.errors import ConfigError
from rocketq.protocol.bodies import DataVersion

log = logging.getLogger("rocketq.broker.managers.persist")


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


class ConfigFileError(ConfigError):
    """A config file that exists but cannot be read (nor its backup)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(str(path), reason)
        self.path = path


def read_json(path: Path) -> Any | None:
    """The file's JSON, falling back to ``.bak`` when the file is missing or damaged (None: neither exists).

    Raises ``ConfigFileError`` naming the file when it exists but neither it nor its backup can be read.
    """
    damaged: str | None = None
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            return orjson.loads(candidate.read_bytes())
        except FileNotFoundError:
            continue
        except (orjson.JSONDecodeError, OSError) as exc:
            log.error("persist.corrupt path=%s error=%s; trying the backup", candidate, exc)
            damaged = damaged or f"cannot be read ({exc}) and has no readable backup"
            continue
    if damaged is not None:
        raise ConfigFileError(path, damaged)
    return None


def _object_of(path: Path, obj: Any) -> dict[str, Any] | None:
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise ConfigFileError(path, f"holds a JSON {type(obj).__name__}, not an object")
    return obj


#: how many distinct dropped entries a manager remembers, so each is logged once and not on every write
_REPORTED_MAX = 1024


class ConfigManager(ABC):
    """A table with a JSON file: load, snapshot, atomic write off the loop, a data version."""

    #: a bad entry in the file (and its backup) stops start-up; False: the entry is skipped and logged
    fail_closed = True

    def __init__(self, path: Path, writer: BackgroundWriter | None = None) -> None:
        self.path = path
        #: the broker's writer thread; None writes synchronously (tools and unit tests)
        self.writer = writer
        self.data_version = DataVersion(int(time.time() * 1000), 0)
        self._write: asyncio.Future[None] | None = None
        self._reported: set[BadEntry] = set()

    @property
    def manager_name(self) -> str:
        return type(self).__name__

    @abstractmethod
    def snapshot(self) -> Callable[[], Any]:
        """Copy the state now (on the loop); returns what builds its JSON document (on the writer's thread)."""

    @abstractmethod
    def decode(self, obj: dict[str, Any]) -> None:
        """Replace the state with the file's document."""

    def check(self, doc: dict[str, Any]) -> list[BadEntry]:
        """Remove from ``doc`` (the file's document) every entry that cannot be written or read back, and say
        which. Runs on save (on the writer's thread) and on load; the default finds nothing."""
        return []

    def build(self) -> Callable[[], Any]:
        """``snapshot()``, its document cleared of bad entries: what every write of the file writes."""
        make = self.snapshot()
        return lambda: self.writable(make())

    def writable(self, doc: Any) -> Any:
        """``doc`` without the entries ``check`` finds fault with; each dropped entry is logged (once)."""
        if isinstance(doc, dict):
            for bad in self.check(doc):
                self._report(bad)
        return doc

    def _report(self, bad: BadEntry) -> None:
        if bad in self._reported:
            return
        if len(self._reported) >= _REPORTED_MAX:
            self._reported.clear()
        self._reported.add(bad)
        log.error("persist.entry_dropped manager=%s file=%s entry=%r reason=%s; the other entries are saved",
                  self.manager_name, self.path, bad.key, bad.reason)  # fmt: skip

    def load(self) -> None:
        """Read the file (or, when it is damaged, its ``.bak``) and ``decode`` it; see the module's notes."""
        problems: list[str] = []
        for candidate in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                obj = _object_of(candidate, orjson.loads(candidate.read_bytes()))
            except FileNotFoundError:
                continue
            except (orjson.JSONDecodeError, OSError, ConfigFileError) as exc:
                log.error("persist.corrupt path=%s error=%s; trying the backup", candidate, exc)
                problems.append(f"{candidate.name} cannot be read ({exc})")
                continue
            assert obj is not None
            bad = self.check(obj)
            if bad and self.fail_closed:
                for entry in bad:
                    log.error("persist.bad_entry manager=%s file=%s entry=%r reason=%s",
                              self.manager_name, candidate, entry.key, entry.reason)  # fmt: skip
                more = f" (and {len(bad) - 1} more bad entries)" if len(bad) > 1 else ""
                problems.append(f"{candidate.name}: entry {bad[0].key!r} {bad[0].reason}{more}")
                continue
            for entry in bad:
                log.warning("persist.entry_skipped manager=%s file=%s entry=%r reason=%s",
                            self.manager_name, candidate, entry.key, entry.reason)  # fmt: skip
            try:
                self.decode(obj)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ConfigFileError(candidate, f"does not hold what it should: {exc!r}") from exc
            if problems:
                log.warning("persist.loaded_backup path=%s (%s)", candidate, "; ".join(problems))
            return
        if problems:
            raise ConfigFileError(
                self.path, "; ".join(problems) + " — fix or remove the entry, or restore a good copy"
            )

    def encode(self) -> Any:
        return self.build()()

    def bump_version(self) -> None:
        self.data_version = DataVersion(int(time.time() * 1000), self.data_version.counter + 1)

    def persist(self) -> None:
        """Write now, synchronously (shutdown; a caller that must be durable before it goes on)."""
        if self.writer is not None and self.writer.busy(self.path):
            self.writer.drain()  # a background write of this file finishes first: it must not land after this
        write_json_atomic(self.path, self.encode())

    def persist_soon(self) -> asyncio.Future[None] | None:
        """Write on the writer's thread (synchronously without one); ``flushed()`` waits for it."""
        if self.writer is None:
            self.persist()
            return None
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (tools, tests): write now
            self.persist()
            return None
        self._write = fut = self.writer.submit(self.path, self.build())
        fut.add_done_callback(self._written)
        return fut

    def _written(self, fut: asyncio.Future[None]) -> None:
        if not fut.cancelled() and fut.exception() is not None:
            log.error("persist.failed path=%s error=%r", self.path, fut.exception())

    async def flushed(self) -> None:
        """Wait until the last write asked for is on disk (raises its error)."""
        write = self._write
        if write is not None:
            await asyncio.shield(write)


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


class PersistedLoopService(ConfigManager):
    """A broker service with a loop task and a small JSON state file (delay-level and timer progress).

    While running, dirty state is written at most once a second by the ``BackgroundWriter`` (snapshot taken on
    the loop, a failed write leaves the state dirty); ``stop()`` waits for that write and then writes the
    final state synchronously.
    """

    def __init__(self, path: Path, persister: BackgroundWriter, name: str) -> None:
        super().__init__(path, persister)
        self.persister = persister
        self._name = name
        self._task: asyncio.Task[None] | None = None
        self._dirty = False
        self._last_persist = 0.0

    @abstractmethod
    async def _loop(self) -> None:
        """The service's work, until cancelled."""

    def persist(self) -> None:
        write_json_atomic(self.path, self.encode())
        self._dirty = False
        self._last_persist = time.monotonic()

    def persist_if_due(self) -> None:
        if self._dirty and time.monotonic() - self._last_persist > 1.0 and not self.persister.busy(self.path):
            fut = self.persister.submit(self.path, self.build())
            self._dirty = False
            self._last_persist = time.monotonic()
            fut.add_done_callback(self._persisted)

    def _persisted(self, fut: asyncio.Future[None]) -> None:
        if fut.cancelled() or fut.exception() is not None:
            log.error("%s.persist_failed path=%s error=%r", self._name, self.path,
                      None if fut.cancelled() else fut.exception())
            self._dirty = True

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self.persister.drain()  # a background write of this file finishes before the final one
        self.persist()
