"""The seam for replication (HA). Without replicas ``NoReplication`` answers every wait at once.

The HA service (``rocketq.replication``) plugs in with ``MessageStore.set_replication_hook``. Its master
side streams the commit log to replicas with ``MessageStore.get_commit_log_data(offset)`` (everything
written from ``offset`` to the end of that file, as a held view). For SYNC_MASTER it is first asked
``is_replica_ok(offset)`` (False: SLAVE_NOT_AVAILABLE at once), then answers
``add_replication_waiter(offset, cb)`` with ``cb(True)`` once a replica has acknowledged ``offset`` (or
``cb(False)`` after its timeout: FLUSH_SLAVE_TIMEOUT). A replica writes with ``MessageStore.append_replica``
(``rocketq.store.replica``).
"""

from __future__ import annotations

from typing import Protocol

from rocketq.store.results import FlushCallback


class ReplicationHook(Protocol):
    def is_replica_ok(self, offset: int) -> bool:
        """Whether a wait for ``offset`` may be registered (else SLAVE_NOT_AVAILABLE)."""
        ...

    def add_replication_waiter(self, offset: int, callback: FlushCallback) -> None:
        """Call ``callback(True)`` once ``offset`` is replicated, ``callback(False)`` on timeout."""
        ...


class NoReplication:
    """No replicas: every offset counts as replicated."""

    def is_replica_ok(self, offset: int) -> bool:
        return True

    def add_replication_waiter(self, offset: int, callback: FlushCallback) -> None:
        callback(True)
