"""Queue locks for orderly consumption (RebalanceLockManager): one client per group and queue, with a lease."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rocketq.protocol.bodies import MessageQueue


@dataclass(slots=True)
class _Lock:
    client_id: str
    last_update: float


class QueueLockManager:
    def __init__(self, lease: float = 60.0, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.lease = lease
        self.clock = clock
        self._locks: dict[str, dict[MessageQueue, _Lock]] = {}

    def _held_by(self, group: str, mq: MessageQueue, client_id: str, now: float) -> bool:
        lock = self._locks.get(group, {}).get(mq)
        return lock is not None and lock.client_id == client_id and now - lock.last_update <= self.lease

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
        return locked

    def unlock_batch(self, group: str, mqs: list[MessageQueue], client_id: str) -> None:
        table = self._locks.get(group)
        if not table:
            return
        for mq in mqs:
            lock = table.get(mq)
            if lock is not None and lock.client_id == client_id:
                del table[mq]

    def is_locked_by(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        return self._held_by(group, mq, client_id, self.clock())

    def holder(self, group: str, mq: MessageQueue) -> str | None:
        lock = self._locks.get(group, {}).get(mq)
        if lock is None or self.clock() - lock.last_update > self.lease:
            return None
        return lock.client_id
