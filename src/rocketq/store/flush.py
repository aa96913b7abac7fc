"""Background flushing: the commit log (ASYNC_FLUSH or SYNC_FLUSH group commit) and the logics files.

Threads (all daemon, all stopped by ``shutdown()``):

* ``rocketq-store-flush-cl``: ASYNC_FLUSH — every ``flush_interval_commit_log`` ms flush the commit log if at
  least ``flush_commit_log_least_pages`` pages are dirty, or everything once
  ``flush_commit_log_thorough_interval`` ms have passed (RocketMQ's FlushRealTimeService).
* ``rocketq-store-group-commit`` + ``rocketq-store-flush-watchdog``: SYNC_FLUSH — requests queued while a
  flush runs are all served by the next single flush (RocketMQ's GroupCommitService). A request not served
  within ``sync_flush_timeout`` ms is answered False by the watchdog, even if the flush is stuck in the kernel.
* ``rocketq-store-flush-logics``: every ``flush_interval_consume_queue`` ms flush consume queues and index
  files (thoroughly every ``flush_consume_queue_thorough_interval`` ms), then write the checkpoint.

Callbacks run on the flush (or watchdog) thread and must not block; an asyncio owner should hop back to
its loop with ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable

from rocketq.store.mapped_file_queue import MappedFileQueue
from rocketq.store.results import FlushCallback

log = logging.getLogger(__name__)


def _now() -> float:
    return time.monotonic()


class ServiceThread(ABC):
    """A named daemon thread with a stop flag and a wake-up; ``run_once`` is called per wake-up or interval."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._cond = threading.Condition()
        self._stopped = False
        self._notified = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def wakeup(self) -> None:
        with self._cond:
            if not self._notified:
                self._notified = True
                self._cond.notify()

    def wait_for_running(self, interval: float) -> None:
        with self._cond:
            if not self._notified and not self._stopped:
                self._cond.wait(interval)
            self._notified = False

    @property
    def is_stopped(self) -> bool:
        return self._stopped

    def shutdown(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None

    def _run(self) -> None:
        try:
            while not self._stopped:
                try:
                    self.run_once()
                except Exception:
                    log.exception("%s.failed", self.name)
                    self.wait_for_running(0.1)
        finally:
            try:
                self.on_stop()
            except Exception:
                log.exception("%s.stop_failed", self.name)

    @abstractmethod
    def run_once(self) -> None:
        """One round of the service's work."""

    def on_stop(self) -> None:  # an optional hook; most services need no stop work
        return None


class CommitLogFlusher:
    """Shared by both flush modes: flush the commit-log files and note the checkpoint timestamp."""

    def __init__(self, mfq: MappedFileQueue, last_store_timestamp: Callable[[], int]) -> None:
        self.mfq = mfq
        self._last_store_timestamp = last_store_timestamp
        #: store time of the newest message known durable (for the checkpoint)
        self.flushed_store_timestamp = 0

    def flush(self, least_pages: int, *, until: int | None = None) -> int:
        ts = self._last_store_timestamp()  # read before the end: ts belongs to a message below ``end``
        end = self.mfq.get_max_offset() if until is None else until
        while self.mfq.flushed_where < end:
            before = self.mfq.flushed_where
            self.mfq.flush(least_pages)
            if self.mfq.flushed_where <= before:
                break
        if self.mfq.flushed_where >= end and until is None and ts > self.flushed_store_timestamp:
            self.flushed_store_timestamp = ts
        return self.mfq.flushed_where


class FlushRealTimeService(ServiceThread):
    """ASYNC_FLUSH: periodic flush of the commit log."""

    def __init__(
        self, flusher: CommitLogFlusher, interval_ms: int, least_pages: int, thorough_interval_ms: int
    ) -> None:
        super().__init__("rocketq-store-flush-cl")
        self.flusher = flusher
        self.interval = interval_ms / 1000
        self.least_pages = least_pages
        self.thorough_interval = thorough_interval_ms / 1000
        self._last_thorough = _now()

    def run_once(self) -> None:
        self.wait_for_running(self.interval)
        least = self.least_pages
        now = _now()
        if now >= self._last_thorough + self.thorough_interval:
            self._last_thorough = now
            least = 0
        self.flusher.flush(least)

    def on_stop(self) -> None:
        self.flusher.flush(0)


class _FlushRequest:
    __slots__ = ("callback", "deadline", "done", "end_offset")

    def __init__(self, end_offset: int, callback: FlushCallback, deadline: float) -> None:
        self.end_offset = end_offset
        self.callback = callback
        self.deadline = deadline
        self.done = False


class GroupCommitService(ServiceThread):
    """SYNC_FLUSH: one flush serves every request queued before it started."""

    def __init__(self, flusher: CommitLogFlusher, timeout_ms: int) -> None:
        super().__init__("rocketq-store-group-commit")
        self.flusher = flusher
        self.timeout = timeout_ms / 1000
        self._lock = threading.Lock()
        self._requests: list[_FlushRequest] = []
        #: every request not yet answered, oldest first (deadlines increase along it)
        self._inflight: deque[_FlushRequest] = deque()
        self._watchdog = _FlushWatchdog(self)
        #: flushes performed and requests served (to see group commit at work)
        self.flush_count = 0
        self.request_count = 0

    def start(self) -> None:
        super().start()
        self._watchdog.start()

    def shutdown(self) -> None:
        super().shutdown()
        self._watchdog.shutdown()

    def put_request(self, end_offset: int, callback: FlushCallback) -> None:
        req = _FlushRequest(end_offset, callback, _now() + self.timeout)
        with self._lock:
            idle_watchdog = not self._inflight  # deadlines only grow: a busy watchdog already waits for an earlier one
            self._requests.append(req)
            self._inflight.append(req)
        self.wakeup()
        if idle_watchdog:
            self._watchdog.wakeup()

    def _complete(self, req: _FlushRequest, ok: bool) -> None:
        with self._lock:
            if req.done:
                return
            req.done = True
        try:
            req.callback(ok)
        except Exception:
            log.exception("group_commit.callback_failed")

    def run_once(self) -> None:
        self.wait_for_running(0.01)
        self._serve()

    def _serve(self) -> None:
        with self._lock:
            batch, self._requests = self._requests, []
        if not batch:
            return
        target = max(r.end_offset for r in batch)
        flushed = self.flusher.flush(0)
        if flushed < target:  # a request past what was written when we looked: one more try
            flushed = self.flusher.flush(0)
        self.flush_count += 1
        self.request_count += len(batch)
        for r in batch:
            self._complete(r, flushed >= r.end_offset)
        with self._lock:
            while self._inflight and self._inflight[0].done:
                self._inflight.popleft()

    def expire(self) -> float | None:
        """Answer overdue requests with False; returns seconds until the next deadline (None: nothing pending)."""
        now = _now()
        while True:
            with self._lock:
                while self._inflight and self._inflight[0].done:
                    self._inflight.popleft()
                if not self._inflight:
                    return None
                head = self._inflight[0]
                if head.deadline > now:
                    return head.deadline - now
                self._inflight.popleft()
            log.warning("group_commit.timeout end_offset=%d", head.end_offset)
            self._complete(head, False)

    def on_stop(self) -> None:
        self._serve()
        with self._lock:
            rest = list(self._inflight)
            self._inflight.clear()
        for r in rest:
            self._complete(r, self.flusher.mfq.flushed_where >= r.end_offset)


class _FlushWatchdog(ServiceThread):
    def __init__(self, service: GroupCommitService) -> None:
        super().__init__("rocketq-store-flush-watchdog")
        self.service = service

    def run_once(self) -> None:
        wait = self.service.expire()
        self.wait_for_running(1.0 if wait is None else min(wait, 1.0))


class FlushLogicsService(ServiceThread):
    """Flush consume queues and index files, then the checkpoint (RocketMQ's FlushConsumeQueueService)."""

    def __init__(
        self,
        flush_logics: Callable[[int], None],
        interval_ms: int,
        least_pages: int,
        thorough_interval_ms: int,
        tick: Callable[[], None] | None = None,
    ) -> None:
        super().__init__("rocketq-store-flush-logics")
        self._flush_logics = flush_logics
        self.interval = interval_ms / 1000
        self.least_pages = least_pages
        self.thorough_interval = thorough_interval_ms / 1000
        self._last_thorough = _now()
        self._tick = tick

    def run_once(self) -> None:
        self.wait_for_running(self.interval)
        if self._tick is not None:
            self._tick()
        least = self.least_pages
        now = _now()
        if now >= self._last_thorough + self.thorough_interval:
            self._last_thorough = now
            least = 0
        self._flush_logics(least)
