"""The seam for replication (HA). Nothing replicates yet: ``NoReplication`` answers every wait at once.

A future HA service plugs in with ``MessageStore.set_replication_hook``. Its master side streams the commit
log to replicas with ``MessageStore.get_commit_log_data(offset)`` (everything written from ``offset`` to the
end of that file, as a held view) and, for SYNC_MASTER, answers ``add_replication_waiter(offset, cb)`` with
``cb(True)`` once a replica has acknowledged ``offset`` (or ``cb(False)`` after its timeout; the broker then
answers FLUSH_SLAVE_TIMEOUT).
"""

from __future__ import annotations

from typing import Protocol

from rocketq.store.results import FlushCallback


class ReplicationHook(Protocol):
    def add_replication_waiter(self, offset: int, callback: FlushCallback) -> None:
        """Call ``callback(True)`` once ``offset`` is replicated, ``callback(False)`` on timeout."""
        ...


class NoReplication:
    """No replicas: every offset counts as replicated."""

    def add_replication_waiter(self, offset: int, callback: FlushCallback) -> None:
        callback(True)
