"""When a stored put may be answered: after its group-commit flush (SYNC_FLUSH), then after a slave has its
bytes (SYNC_MASTER) — Java's ``CommitLog.handleDiskFlush`` followed by ``handleHA``.

Every put path (single sends, batches, plain runs, sink commits) asks this one place, so the flush wait and
the replication wait are written once. ``wait(end_offset, done)`` calls ``done(code)`` on the event loop with
the answer's code: SUCCESS, FLUSH_DISK_TIMEOUT (the flush took longer than ``syncFlushTimeout``) or
FLUSH_SLAVE_TIMEOUT (no slave acknowledged in time) or SLAVE_NOT_AVAILABLE (no slave connected, or it lags
by ``haSlaveFallbehindMax`` or more).

The store calls back from its flush thread once per request. Those completions go into a thread-safe deque and
reach the loop through one ``call_soon_threadsafe`` per batch (the first completion of a batch schedules the
drain, the rest find it pending), so one flush serving N requests costs one hop, not N.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from functools import partial

from rocketq.broker.role import BrokerRoleState
from rocketq.codes import ResponseCode
from rocketq.store import MessageStore

log = logging.getLogger(__name__)

#: ``done(code)``: the put may be answered with ``code``
AckDone = Callable[[int], None]

_SUCCESS = int(ResponseCode.SUCCESS)
_FLUSH_DISK_TIMEOUT = int(ResponseCode.FLUSH_DISK_TIMEOUT)
_FLUSH_SLAVE_TIMEOUT = int(ResponseCode.FLUSH_SLAVE_TIMEOUT)
_SLAVE_NOT_AVAILABLE = int(ResponseCode.SLAVE_NOT_AVAILABLE)


def _not_awaited(ok: bool) -> None:
    """Flush callback of a ``WAIT=false`` put: nobody waits for it."""


class PutAck:
    def __init__(self, store: MessageStore, role: BrokerRoleState, *, sync_flush: bool) -> None:
        self._store = store
        self._role = role
        self.sync_flush = sync_flush
        self._loop: asyncio.AbstractEventLoop | None = None
        # completions (done, code) appended by store threads, answered on the loop in one hop per batch
        self._completed: deque[tuple[AckDone, int]] = deque()
        self._drain_pending = False
        #: hops from the flush thread to the loop, and the answers they carried (group commit at work)
        self.flush_hops = 0
        self.flush_replies = 0
        #: every stored put may be answered at once (ASYNC_FLUSH on a master that waits for nobody); a plain
        #: attribute, worked out again when the role changes, since every send reads it
        self.immediate = False
        self._derive()
        role.on_change(lambda before, after: self._derive())

    def _derive(self) -> None:
        self.immediate = not self.sync_flush and not self._role.waits_for_slave

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()

    def wait(self, end_offset: int, done: AckDone, *, wait_store: bool = True) -> bool:
        """Arrange for ``done(code)`` once the put ending at ``end_offset`` may be answered.

        Returns False when it may be answered now (``done`` is not called): nothing to wait for, or
        ``wait_store`` False (the message's ``WAIT=false``: the flush is requested, not awaited, as Java does).
        """
        if self.immediate:
            return False
        if not wait_store:
            if self.sync_flush:
                self._store.request_flush(end_offset, _not_awaited)
            return False
        if self.sync_flush:
            if self._role.waits_for_slave:
                self._store.request_flush(end_offset, lambda ok: self._flushed(end_offset, done, ok))
            else:  # the common SYNC_FLUSH case: the flush is the only wait
                self._store.request_flush(end_offset, partial(self._flushed_only, done))
        else:
            self._await_replica(end_offset, done)
        return True

    def _await_replica(self, end_offset: int, done: AckDone) -> None:
        """Java's ``submitReplicaRequest``: no usable slave answers SLAVE_NOT_AVAILABLE without waiting."""
        if self._store.is_replica_ok(end_offset):
            self._store.add_replication_waiter(end_offset, lambda ok: self._replicated(done, ok))
        else:
            self._complete(done, _SLAVE_NOT_AVAILABLE)

    def _flushed(self, end_offset: int, done: AckDone, ok: bool) -> None:  # a store thread
        if not ok:
            self._complete(done, _FLUSH_DISK_TIMEOUT)
        elif self._role.waits_for_slave:
            self._await_replica(end_offset, done)
        else:
            self._complete(done, _SUCCESS)

    def _flushed_only(self, done: AckDone, ok: bool) -> None:  # a store thread
        self._complete(done, _SUCCESS if ok else _FLUSH_DISK_TIMEOUT)

    def _replicated(self, done: AckDone, ok: bool) -> None:  # any thread
        self._complete(done, _SUCCESS if ok else _FLUSH_SLAVE_TIMEOUT)

    def _complete(self, done: AckDone, code: int) -> None:
        self._completed.append((done, code))
        if not self._drain_pending:
            self._drain_pending = True
            loop = self._loop
            assert loop is not None, "PutAck.start() was not called"
            loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        """Answer every completed wait (one hop from the store thread for the whole batch)."""
        # Cleared before draining: a completion appended after this point schedules its own hop, and one
        # appended before it is drained below (a spare hop finds the deque empty; nothing is ever stranded).
        self._drain_pending = False
        self.flush_hops += 1
        completed = self._completed
        replies = 0
        while completed:
            done, code = completed.popleft()
            replies += 1
            try:
                done(code)
            except Exception:  # one failing answer must not strand the others
                log.exception("put_ack.answer_failed code=%s", code)
        self.flush_replies += replies
