"""Queue locks for orderly consumption (RebalanceLockManager): one client per group and queue, with a lease.

Unlike Java, the table is persisted (``config/queueLocks.json``, wall-clock lease times): after a broker
restart a queue stays with its holder until the lease runs out, so a rebalance racing the restart cannot
let two consumers of one group consume the same queue at once.

With a ``writer`` (the broker's ``BackgroundWriter``) a change is written and fsynced on the writer's thread,
not on the event loop; ``take_write()`` hands the request processor that write, and it answers only once the
write is done, so a granted lock is on disk before the client hears of it (as with a synchronous write).

A lock entry of the file that cannot be read back is skipped with a log line at start-up (not
``fail_closed``): a lease lasts a minute, and refusing to start over one would be worse than losing it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketq.broker.managers.entries import FLOAT, INT32, STR, BadEntry, fields_error, prune_list, show
from rocketq.broker.managers.persist import BackgroundWriter, ConfigManager
from rocketq.protocol.bodies import MessageQueue

LOCK_FIELDS = {"group": STR, "topic": STR, "brokerName": STR, "queueId": INT32, "clientId": STR, "lastUpdate": FLOAT}


def _lock_error(entry: object) -> str | None:
    return fields_error(entry, LOCK_FIELDS, required=tuple(LOCK_FIELDS))


def _lock_name(entry: object) -> str:
    if isinstance(entry, dict):
        return f"{show(entry.get('group'))} {show(entry.get('topic'))} queue {show(entry.get('queueId'))}"
    return show(entry)


@dataclass(slots=True)
class _Lock:
    client_id: str
    last_update: float


class QueueLockManager(ConfigManager):
    fail_closed = False

    def __init__(
        self, lease: float = 60.0, *, clock: Callable[[], float] = time.time, path: Path | None = None,
        writer: BackgroundWriter | None = None,
    ) -> None:  # fmt: skip
        super().__init__(path or Path(), writer)
        self._persistent = path is not None
        self.lease = lease
        self.clock = clock
        self._locks: dict[str, dict[MessageQueue, _Lock]] = {}

    # ------------------------------------------------------------------------------------ persistence

    def load(self) -> None:
        if self._persistent:
            super().load()

    def decode(self, obj: dict[str, Any]) -> None:
        now = self.clock()
        for entry in obj.get("locks", []):
            mq = MessageQueue(entry["topic"], entry["brokerName"], int(entry["queueId"]))
            lock = _Lock(str(entry["clientId"]), float(entry["lastUpdate"]))
            if now - lock.last_update <= self.lease:
                self._locks.setdefault(str(entry["group"]), {})[mq] = lock

    def snapshot(self) -> Callable[[], Any]:
        now = self.clock()
        entries = [
            {"group": g, **mq.to_json(), "clientId": lock.client_id, "lastUpdate": lock.last_update}
            for g, table in self._locks.items()
            for mq, lock in table.items()
            if now - lock.last_update <= self.lease
        ]
        return lambda: {"locks": entries}

    def check(self, doc: dict[str, Any]) -> list[BadEntry]:
        return prune_list(doc, "locks", _lock_error, _lock_name)

    def _persist(self) -> None:
        if self._persistent:
            self.bump_version()
            self.persist_soon()

    def take_write(self) -> asyncio.Future[None] | None:
        """The background write the last change started (None: nothing to wait for)."""
        write, self._write = self._write, None
        return write

    # ----------------------------------------------------------------------------------------- locks

    def try_lock_batch(self, group: str, mqs: list[MessageQueue], client_id: str) -> list[MessageQueue]:
        """Lock (or renew) every queue that is free, expired or already ours; returns the ones we hold."""
        now = self.clock()
        table = self._locks.setdefault(group, {})
        locked = []
        for mq in mqs:
            lock = table.get(mq)
            if lock is None or lock.client_id == client_id or now - lock.last_update > self.lease:
                table[mq] = _Lock(client_id, now)
                locked.append(mq)
        if locked:
            self._persist()
        return locked

    def unlock_batch(self, group: str, mqs: list[MessageQueue], client_id: str) -> None:
        table = self._locks.get(group)
        if not table:
            return
        changed = False
        for mq in mqs:
            lock = table.get(mq)
            if lock is not None and lock.client_id == client_id:
                del table[mq]
                changed = True
        if changed:
            self._persist()

    def is_locked_by(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        lock = self._locks.get(group, {}).get(mq)
        return lock is not None and lock.client_id == client_id and self.clock() - lock.last_update <= self.lease

    def holder(self, group: str, mq: MessageQueue) -> str | None:
        lock = self._locks.get(group, {}).get(mq)
        if lock is None or self.clock() - lock.last_update > self.lease:
            return None
        return lock.client_id
