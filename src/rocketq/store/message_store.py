"""``MessageStore``: the facade the broker uses (RocketMQ's ``DefaultMessageStore``).

Synchronous and thread-safe. Lifecycle: ``MessageStore(config)`` → ``load()`` (lock the directory, map the
files, recover) → ``start()`` (flush and cleanup threads) → ... → ``shutdown()`` (final flush, clean-exit
marker). Writes: ``put_message`` / ``put_plain_messages`` / ``put_messages`` append and dispatch (consume
queue, index) in the caller's thread and return at once (the write side is ``rocketq.store.append``); under
SYNC_FLUSH the caller then waits for durability with ``request_flush(end_offset, callback)`` (or uses the
blocking ``put_message_and_wait``).

What an owner (the asyncio broker) does:

* ``put_message``/``put_messages`` may be called from the event loop thread (they do not block on I/O beyond
  a page fault; under SYNC_FLUSH they do not wait for the disk). For SYNC_FLUSH, unless the message has
  ``WAIT=false``, answer the producer only after ``request_flush(result.append_result.end_offset, cb)``
  called ``cb(True)`` (``cb(False)`` → FLUSH_DISK_TIMEOUT), then ``add_replication_waiter`` (no HA yet: it
  answers True at once). Callbacks run on store threads: hop back with ``loop.call_soon_threadsafe``.
* ``arrival_listener(topic, queue_id, next_logic_offset, tags_code, store_timestamp, properties)`` is called
  in the writer's thread after each message reaches a consume queue (long-poll wake-up); keep it quick.
  ``properties`` is None for the messages of a batch and of ``put_plain_messages`` (not decoded there).
* ``GetMessageResult`` lends views of the mapped files: ``release()`` it once the response is written.
* Retention runs on the store's own thread every ``clean_resource_interval`` ms (0 = no thread; then call
  ``run_cleanup()`` yourself). DISK_FULL (writes answered SERVICE_NOT_AVAILABLE, reads go on) is owned by
  ``disk_guard`` (``rocketq.store.disk``): the used ratio from the cleanup pass, and the free-bytes headroom
  read at each commit-log roll and every ``disk_check_interval`` ms; it clears by itself when space returns.
  ``is_disk_full()`` tells it apart from a store that is shut down.
* Delayed messages (``DELAY`` > 0) are rewritten to SCHEDULE_TOPIC_XXXX by ``put_message``, as RocketMQ's
  CommitLog does; the schedule service must remove ``DELAY`` when it puts them back to their real topic.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence

from rocketq.protocol.message import Host, MessageRecord
from rocketq.protocol.topics import SCHEDULE_TOPIC, TRANS_OP_HALF_TOPIC
from rocketq.store.append import Appender, ArrivalListener, ArrivalsListener
from rocketq.store.checkpoint import StoreCheckpoint
from rocketq.store.cleanup import CleanupReport, CleanupService
from rocketq.store.commit_log import CommitLog
from rocketq.store.config import (
    CQ_STORE_UNIT_SIZE,
    Clock,
    DiskUsage,
    StoreConfig,
    disk_usage_ratio,
    parse_delay_levels,
    system_clock,
)
from rocketq.store.consume_queue import CQ_UNIT
from rocketq.store.consume_queue_table import ConsumeQueueTable
from rocketq.store.disk import DiskFree, DiskGuard, DiskGuardThread, disk_free_bytes
from rocketq.store.dispatcher import Dispatcher
from rocketq.store.errors import StoreLockedError, StoreNotAvailableError
from rocketq.store.flush import (
    CommitLogFlusher,
    FlushLogicsService,
    FlushRealTimeService,
    GroupCommitService,
    ServiceThread,
)
from rocketq.store.ha import NoReplication, ReplicationHook
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file import SelectMappedBufferResult
from rocketq.store.message import PlainMessage, StoreBatch, StoreMessage
from rocketq.store.reader import MessageReader, total_physical_memory
from rocketq.store.recovery import cut_tail, rebuild_queue_offsets, recover
from rocketq.store.replica import ReplicaAppender
from rocketq.store.results import (
    FlushCallback,
    GetMessageResult,
    MessageFilter,
    PutMessageResult,
    PutMessageStatus,
)
from rocketq.store.running_flags import WRITE_INDEX_FILE_ERROR, WRITE_LOGICS_QUEUE_ERROR, RunningFlags
from rocketq.store.runtime_info import disk_util_text, store_runtime_info
from rocketq.store.stats import StatsService, StoreStats
from rocketq.store.warm import PageWarmer

log = logging.getLogger(__name__)

#: queues cleanUnusedTopic never deletes, though no topic configuration names them (Java's list)
_NEVER_UNUSED = frozenset({SCHEDULE_TOPIC, TRANS_OP_HALF_TOPIC})

__all__ = ["ArrivalListener", "ArrivalsListener", "MessageStore"]


class _CleanupThread(ServiceThread):
    def __init__(self, store: MessageStore, interval_ms: int) -> None:
        super().__init__("rocketq-store-cleanup")
        self.store = store
        self.interval = interval_ms / 1000

    def run_once(self) -> None:
        self.wait_for_running(self.interval)
        if not self.is_stopped:
            self.store.run_cleanup()


class MessageStore:
    """The message store. See the module docstring for the lifecycle and the put/flush protocol."""

    def __init__(
        self,
        config: StoreConfig,
        *,
        clock: Clock = system_clock,
        disk_usage: DiskUsage = disk_usage_ratio,
        disk_free: DiskFree = disk_free_bytes,
    ) -> None:
        self.config = config
        self._clock = clock
        self.delay_table = parse_delay_levels(config.message_delay_level)
        self.max_delay_level = max(self.delay_table)
        self.flags = RunningFlags()
        #: owns DISK_FULL: the free-space headroom and (from the cleanup service) the used ratio
        self.disk_guard = DiskGuard(config, self.flags, disk_free)
        self.commit_log = CommitLog(config, clock, self.disk_guard)
        self.cq_table = ConsumeQueueTable(config.consume_queue_dir, config.mapped_file_size_consume_queue, clock)
        self.index: IndexService | None = IndexService(config, clock) if config.message_index_enable else None
        self.dispatcher = Dispatcher(self.cq_table, self.index, self.delay_table)
        self.stats_service = StatsService(clock())
        self.cleanup_service = CleanupService(
            config, self.commit_log, self.cq_table, self.index, self.disk_guard, clock, disk_usage
        )
        #: the used-ratio probe (injectable: tests fake a full disk with it)
        self.disk_usage = disk_usage
        self.checkpoint: StoreCheckpoint | None = None
        #: the write side: put_message, put_plain_messages, put_messages (``rocketq.store.append``)
        self.appender = Appender(config, self.commit_log, self.dispatcher, self.flags, self.stats_service, clock)
        self._replication: ReplicationHook = NoReplication()
        self._replica: ReplicaAppender | None = None  # made at the first replicated append
        self._flusher = CommitLogFlusher(self.commit_log.mfq, lambda: self.commit_log.last_store_timestamp)
        self._flush_service: FlushRealTimeService | GroupCommitService | None = None
        self._logics_service: FlushLogicsService | None = None
        self._cleanup_thread: _CleanupThread | None = None
        self._disk_thread: DiskGuardThread | None = None
        self._warmer: PageWarmer | None = None
        self._lock_fd: int | None = None
        self._loaded = False
        self._started = False
        self._shutdown = False
        self.reader = MessageReader(config, self.commit_log, self.cq_table, self.index, self.stats_service)
        self._cleanup_lock = threading.Lock()

    # ===================================================================================== lifecycle

    def load(self) -> bool:
        """Lock the directory, map the files and recover. False if files do not match the configuration.

        Raises ``StoreLockedError`` if another store holds the directory.
        """
        cfg = self.config
        os.makedirs(cfg.store_path_root_dir, exist_ok=True)
        self._lock_dir()
        last_exit_ok = not os.path.exists(cfg.abort_path)
        ok = self.commit_log.load() and self.cq_table.load() and (self.index is None or self.index.load())
        if not ok:
            self._close_files()
            self._unlock_dir()
            return False
        self.checkpoint = StoreCheckpoint(cfg.checkpoint_path)
        recover(
            self.commit_log, self.cq_table, self.index, self.dispatcher, self.checkpoint,
            last_exit_ok=last_exit_ok, check_crc=cfg.check_crc_on_recover,
        )
        if self.index is not None:
            self.index.write_pending()
        # From here until a clean shutdown, a restart must treat the store as crashed.
        with open(cfg.abort_path, "wb"):
            pass
        self._loaded = True
        self.appender.accepting = True
        log.info(
            "store.loaded root=%s clean=%s min=%d max=%d queues=%d",
            cfg.store_path_root_dir, last_exit_ok, self.get_min_phy_offset(), self.get_max_phy_offset(),
            len(self.cq_table),
        )
        return True

    def _lock_dir(self) -> None:
        fd = os.open(self.config.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreLockedError(f"store {self.config.store_path_root_dir} is in use") from exc
            raise
        self._lock_fd = fd

    def _unlock_dir(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def start(self) -> None:
        """Start the flush threads and (if ``clean_resource_interval`` > 0) the cleanup thread."""
        if not self._loaded:
            raise StoreNotAvailableError("load() the store before start()")
        if self._started:
            return
        cfg = self.config
        if cfg.is_sync_flush:
            self._flush_service = GroupCommitService(self._flusher, cfg.sync_flush_timeout)
        else:
            self._flush_service = FlushRealTimeService(
                self._flusher, cfg.flush_interval_commit_log, cfg.flush_commit_log_least_pages,
                cfg.flush_commit_log_thorough_interval,
            )
        self._logics_service = FlushLogicsService(
            self._flush_logics, cfg.flush_interval_consume_queue, cfg.flush_consume_queue_least_pages,
            cfg.flush_consume_queue_thorough_interval, tick=self.stats_service.tick,
        )
        self._flush_service.start()
        self._logics_service.start()
        if cfg.warm_ahead_bytes > 0:
            keep = cfg.commit_log_cached_bytes
            if keep < 0:
                keep = total_physical_memory() * cfg.access_message_in_memory_max_ratio // 100
            self._warmer = PageWarmer(self.commit_log.mfq, cfg.warm_ahead_bytes, cfg.warm_ahead_interval_ms, keep)
            self._warmer.start()
        if cfg.clean_resource_interval > 0:
            self._cleanup_thread = _CleanupThread(self, cfg.clean_resource_interval)
            self._cleanup_thread.start()
        self.disk_guard.check()  # a store opened on a full disk refuses writes from the first one
        self._disk_thread = DiskGuardThread(self.disk_guard)
        self._disk_thread.start()
        self._started = True

    def _stop_threads(self) -> None:
        for svc in (self._disk_thread, self._warmer, self._cleanup_thread, self._flush_service, self._logics_service):
            if svc is not None:
                svc.shutdown()
        self._cleanup_thread = self._flush_service = self._logics_service = self._warmer = self._disk_thread = None

    def shutdown(self) -> None:
        """Stop threads, flush everything, write the checkpoint, remove the abort marker, unlock."""
        self.appender.accepting = False
        if self._shutdown or not self._loaded:
            self._shutdown = True
            self._unlock_dir()
            return
        self._shutdown = True
        self._stop_threads()
        with self.commit_log.put_lock:
            self.commit_log.mfq.flush_all()
            self._flusher.flushed_store_timestamp = self.commit_log.last_store_timestamp
            self._flush_logics(0, holding_put_lock=True)
        self._close_files()
        if self.flags.is_writeable() or self.flags.is_disk_full():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.config.abort_path)
        self._unlock_dir()
        log.info("store.shutdown root=%s", self.config.store_path_root_dir)

    def abandon(self) -> None:
        """Release threads, files and the lock as a crash would: no final flush, the abort marker stays.

        For tests of recovery in one process (a real crash test kills a child process instead).
        """
        self._shutdown = True
        self.appender.accepting = False
        self._stop_threads()
        self._close_files()
        self._unlock_dir()

    def _close_files(self) -> None:
        self.commit_log.close()
        self.cq_table.close()
        if self.index is not None:
            self.index.close()
        if self.checkpoint is not None:
            self.checkpoint.close()

    def __enter__(self) -> MessageStore:
        if not self._loaded and not self.load():
            raise StoreNotAvailableError("store files do not match the configuration")
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _flush_logics(self, least_pages: int, *, holding_put_lock: bool = False) -> None:
        """Flush consume queues and index; on a thorough pass (0 pages) advance and write the checkpoint."""
        index = self.index
        lock = contextlib.nullcontext() if holding_put_lock or index is None else self.commit_log.put_lock
        with lock:
            if index is not None:
                try:
                    index.write_pending()  # the checkpoint must not cover index entries that are not in a file
                except OSError:
                    self.appender.logics_failed(WRITE_INDEX_FILE_ERROR, "index")
            ts = self.dispatcher.last_dispatched_store_timestamp  # read first: everything before it is written
        if self.flags.bits & (WRITE_LOGICS_QUEUE_ERROR | WRITE_INDEX_FILE_ERROR):
            # a unit or an index entry is missing: the checkpoint stays where it was, so the restart's
            # recovery (the abort marker stays too) dispatches those messages again
            ts = 0
        self.cq_table.flush(least_pages)
        if self.index is not None:
            self.index.drop_resident()  # every pass (the index is synced only on the thorough one)
        if least_pages == 0:
            if self.index is not None:
                self.index.flush()
            cp = self.checkpoint
            if cp is not None:
                if ts > 0:
                    cp.logics_msg_timestamp = ts
                    cp.index_msg_timestamp = ts
                if self._flusher.flushed_store_timestamp > 0:
                    cp.physic_msg_timestamp = self._flusher.flushed_store_timestamp
                cp.flush()

    # ===================================================================================== writing

    def is_disk_full(self) -> bool:
        return self.flags.is_disk_full()

    @property
    def arrival_listener(self) -> ArrivalListener | None:
        """Called after each stored message (not during recovery); must be quick and thread-safe."""
        return self.appender.arrival_listener

    @arrival_listener.setter
    def arrival_listener(self, listener: ArrivalListener | None) -> None:
        self.appender.arrival_listener = listener

    @property
    def arrivals_listener(self) -> ArrivalsListener | None:
        """Called once per run of plain messages, or per batch, with its arrivals, instead of ``arrival_listener``
        per message."""
        return self.appender.arrivals_listener

    @arrivals_listener.setter
    def arrivals_listener(self, listener: ArrivalsListener | None) -> None:
        self.appender.arrivals_listener = listener

    def put_message(self, msg: StoreMessage) -> PutMessageResult:
        """Append one message and dispatch it; returns at once (see ``request_flush`` for SYNC_FLUSH).

        A ``DELAY`` level > 0 rewrites it to SCHEDULE_TOPIC_XXXX first (see the module docstring).
        """
        return self.appender.put_message(msg)

    def put_plain_messages(
        self, messages: Sequence[PlainMessage], store_host: Host
    ) -> list[tuple[int, int, int] | PutMessageStatus]:
        """Append a run of plain messages in order and dispatch them: for each, (commit-log offset, queue offset,
        record size) or the status that refused it (nothing written for it).

        The records, consume-queue units and index keys are those ``put_message`` writes for each message on its
        own; what a run shares is done once — the writable check, the lock, the store timestamp (one reading of
        the clock), the index hand-over and the stats. The caller guarantees "plain": no ``DELAY`` property, no
        transaction bits in ``sys_flag``, properties already encoded (``CLUSTER`` included).
        """
        return self.appender.put_plain_messages(messages, store_host)

    def put_messages(self, batch: StoreBatch) -> PutMessageResult:
        """Append a batch (consecutive queue offsets, contiguous in one commit-log file) and dispatch it.

        The records are written by ``appendcodec`` straight from the SEND_BATCH_MESSAGE body (``batch.body``,
        or the encoding of ``batch.items``), with the batch's properties appended to each item's.
        """
        return self.appender.put_messages(batch)

    # -------------------------------------------------------------------------------- durability

    def request_flush(self, end_offset: int, callback: FlushCallback) -> None:
        """Call ``callback(True)`` once the commit log is durable through ``end_offset``.

        ``callback(False)`` if that takes more than ``sync_flush_timeout``. Under ASYNC_FLUSH the callback
        runs at once with True. The callback may run on this thread or a store thread.
        """
        svc = self._flush_service
        if not self.config.is_sync_flush or self.commit_log.mfq.flushed_where >= end_offset:
            callback(True)
        elif isinstance(svc, GroupCommitService):
            svc.put_request(end_offset, callback)
        else:
            callback(False)  # not started or already shut down

    def add_replication_waiter(self, offset: int, callback: FlushCallback) -> None:
        """``callback(True)`` once replicas have ``offset`` (immediately: no HA yet, see ``rocketq.store.ha``)."""
        self._replication.add_replication_waiter(offset, callback)

    def is_replica_ok(self, offset: int) -> bool:
        """Whether a replica can be waited for at ``offset`` (Java's ``isSlaveOK``: a slave is connected and
        does not lag by ``haSlaveFallbehindMax`` or more); False means SLAVE_NOT_AVAILABLE at once."""
        return self._replication.is_replica_ok(offset)

    def set_replication_hook(self, hook: ReplicationHook) -> None:
        self._replication = hook

    def append_replica(self, offset: int, data: bytes | memoryview) -> int:
        """A replica's write: the master's raw commit-log bytes at the master's ``offset`` (the end of this log,
        or anything while it is empty), dispatched to consume queues and index as the master's puts were;
        returns the messages dispatched (a message split by ``data`` waits for its rest). Raises
        ``ReplicaOffsetError`` (nothing written) when ``offset`` is not the end of the log."""
        self._check_readable()
        replica = self._replica
        if replica is None:
            replica = self._replica = ReplicaAppender(self.commit_log, self.dispatcher)
            replica.listener = self._replica_arrived
        n = replica.append(offset, data)
        self.dispatcher.last_dispatched_store_timestamp = self.commit_log.last_store_timestamp
        return n

    def _replica_arrived(self, topic: str, queue_id: int, next_offset: int, tags_code: int, store_ts: int) -> None:
        """A replicated message reached its consume queue: tell the arrival listener as a put does, so pulls held
        on a slave wake when the bytes arrive (Java 4.9's slave leaves them to the hold service's periodic check)."""
        listener = self.appender.arrival_listener
        if listener is not None:
            listener(topic, queue_id, next_offset, tags_code, store_ts, None)

    def _wait(self, register: Callable[[FlushCallback], None]) -> bool:
        done = threading.Event()
        outcome = [False]

        def cb(ok: bool) -> None:
            outcome[0] = ok
            done.set()

        register(cb)
        done.wait(self.config.sync_flush_timeout / 1000 + 1.0)
        return outcome[0]

    def _wait_durable(self, result: PutMessageResult, wait: bool) -> PutMessageResult:
        ar = result.append_result
        if not result.is_ok or ar is None or not self.config.is_sync_flush or not wait:
            return result
        end = ar.end_offset
        if not self._wait(lambda cb: self.request_flush(end, cb)):
            return PutMessageResult(PutMessageStatus.FLUSH_DISK_TIMEOUT, ar)
        if not self.is_replica_ok(end):
            return PutMessageResult(PutMessageStatus.SLAVE_NOT_AVAILABLE, ar)
        if not self._wait(lambda cb: self.add_replication_waiter(end, cb)):
            return PutMessageResult(PutMessageStatus.FLUSH_SLAVE_TIMEOUT, ar)
        return result

    def put_message_and_wait(self, msg: StoreMessage) -> PutMessageResult:
        """``put_message``, then (SYNC_FLUSH, unless ``WAIT=false``) block until flushed.

        Status FLUSH_DISK_TIMEOUT if the flush took longer than ``sync_flush_timeout``.
        """
        return self._wait_durable(self.put_message(msg), msg.wait_store_msg_ok)

    def put_messages_and_wait(self, batch: StoreBatch) -> PutMessageResult:
        return self._wait_durable(self.put_messages(batch), batch.wait_store_msg_ok)

    def drop_replica_tail(self) -> int:
        """Before a replica appends on its own (promoted to master): cut a message its master sent only in part.
        Returns the bytes dropped (0 when the log ends on a complete record)."""
        replica = self._replica
        return replica.drop_partial_tail() if replica is not None else 0

    def set_visible_limit(self, limit: Callable[[], int] | None) -> None:
        """Controller mode: consumers read only messages that end at or before ``limit()`` (the in-sync set's
        confirm offset, Java's dispatch stop at confirmOffset); None: everything stored."""
        self.reader.visible_limit = limit

    def is_visible(self, topic: str, queue_id: int, offset: int) -> bool:
        """Whether a consumer at ``offset`` of the queue would get a message now (see ``set_visible_limit``)."""
        return self.reader.is_visible(topic, queue_id, offset)

    def truncate_to(self, offset: int) -> int:
        """Cut the log at ``offset`` (a divergent tail an old master wrote that its successor never had): the
        commit log ends there, consume-queue units and index entries pointing at or past it go, and the queue
        offsets are recomputed, exactly as recovery cuts a damaged tail. Returns the bytes cut. The caller
        makes sure nothing appends meanwhile (a slave not following anybody)."""
        self._check_readable()
        cl = self.commit_log
        with cl.put_lock:
            end = cl.get_max_offset()
            if offset >= end:
                return 0
            cut_tail(cl, self.cq_table, self.index, offset)
            rebuild_queue_offsets(cl, self.cq_table)
            self._replica = None  # its reput position is re-read from the new end at the next append
            self._flush_logics(0, holding_put_lock=True)
        log.warning("store.truncated from=%d to=%d", end, offset)
        return end - offset

    # ===================================================================================== reading

    def _check_readable(self) -> None:
        if self._shutdown or not self._loaded:
            raise StoreNotAvailableError("message store is not loaded or has been shut down")

    def get_message(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None = None,
        *,
        counted: bool = True,
    ) -> GetMessageResult:
        """Read up to ``max_msg_nums`` messages of a queue from ``offset`` (RocketMQ's getMessage rules).

        The result holds views of the mapped commit log; ``release()`` it once the bytes are sent.
        ``counted=False`` keeps a broker service's read of its own queue out of the get statistics.
        """
        self._check_readable()
        return self.reader.get_message(topic, queue_id, offset, max_msg_nums, message_filter, counted=counted)

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.cq_table.find(topic, queue_id)
        return cq.max_offset_in_queue if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.cq_table.find(topic, queue_id)
        return cq.min_offset_in_queue if cq is not None else 0

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, offset: int) -> int:
        """Commit-log offset of the message at queue ``offset`` (0 if none)."""
        cq = self.cq_table.find(topic, queue_id)
        unit = cq.get_unit(offset) if cq is not None else None
        return unit[0] if unit is not None else 0

    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        """Store time of the message at queue ``offset``; -1 if there is none."""
        cq = self.cq_table.find(topic, queue_id)
        unit = cq.get_unit(offset) if cq is not None else None
        if unit is None:
            return -1
        return self.commit_log.pickup_store_timestamp(unit[0], unit[1])

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        """Store time of the oldest message still in the queue; -1 if there is none."""
        cq = self.cq_table.find(topic, queue_id)
        if cq is None:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, cq.min_offset_in_queue)

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """Queue offset of the message stored closest to ``timestamp`` (RocketMQ 4.9's binary search)."""
        return self.reader.get_offset_in_queue_by_time(topic, queue_id, timestamp)

    def bytes_to_flush(self) -> int:
        """Commit-log bytes written but not flushed yet."""
        return max(0, self.get_max_phy_offset() - self.commit_log.mfq.flushed_where)

    def get_earliest_store_time(self) -> int:
        """Store time of the oldest message in the commit log; -1 if there is none (Java's getEarliestMessageTime)."""
        first = self.commit_log.look_message(self.get_min_phy_offset())
        return first.store_timestamp if first is not None else -1

    def get_min_phy_offset(self) -> int:
        """Offset of the first commit-log byte still kept (0 for an empty store)."""
        return self.commit_log.get_min_offset()

    def get_max_phy_offset(self) -> int:
        return self.commit_log.get_max_offset()

    def look_message_by_offset(self, commit_log_offset: int) -> MessageRecord | None:
        self._check_readable()
        return self.commit_log.look_message(commit_log_offset)

    def select_one_message_by_offset(self, commit_log_offset: int) -> bytes | None:
        """The raw stored record at ``commit_log_offset`` (a copy), or None."""
        self._check_readable()
        return self.commit_log.select_one(commit_log_offset)

    def get_commit_log_data(self, offset: int) -> SelectMappedBufferResult | None:
        """Held view of everything written from ``offset`` to the end of its file (for replication)."""
        self._check_readable()
        return self.commit_log.get_data(offset)

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> list[MessageRecord]:
        """Messages of ``topic`` whose UNIQ_KEY or one of whose KEYS is ``key``, stored within [begin, end]."""
        self._check_readable()
        self.write_pending_index()
        return self.reader.query_message(topic, key, max_num, begin, end)

    def write_pending_index(self) -> None:
        """Write the index entries the append path queued (see ``IndexService``); queries do it first."""
        index = self.index
        if index is not None and index.pending_entries:
            with self.commit_log.put_lock:
                try:
                    index.write_pending()
                except OSError:  # a new index file could not be created: as in the flush thread
                    self.appender.logics_failed(WRITE_INDEX_FILE_ERROR, "index")

    # ============================================================================ topics and queues

    def get_queue_ids(self, topic: str) -> list[int]:
        return self.cq_table.queue_ids(topic)

    def topics(self) -> list[str]:
        return self.cq_table.topics()

    def iter_queues(self) -> Iterator[tuple[str, int]]:
        for cq in self.cq_table:
            yield cq.topic, cq.queue_id

    def delete_topics(self, topics: list[str] | set[str]) -> int:
        """Delete the consume queues of ``topics`` (their commit-log records expire normally)."""
        n = 0
        with self.commit_log.put_lock:
            for topic in topics:
                if self.cq_table.delete_topic(topic):
                    n += 1
                table = self.commit_log.topic_queue_table
                for key in [k for k in table if k[0] == topic]:
                    del table[key]
        return n

    def consume_queue_units(
        self, topic: str, queue_id: int, index: int, count: int
    ) -> tuple[int, int, list[tuple[int, int, int]] | None] | None:
        """QUERY_CONSUME_QUEUE: the queue's (min, max) offsets and up to ``count`` units (commit-log offset,
        size, tags code) from ``index`` within its file; units None when ``index`` is not in the queue,
        None when there is no such queue."""
        cq = self.cq_table.find(topic, queue_id)
        if cq is None:
            return None
        bounds = (cq.min_offset_in_queue, cq.max_offset_in_queue)
        buf = cq.get_index_buffer(index) if index >= 0 else None
        if buf is None:
            return (*bounds, None)
        try:
            n = min(buf.size // CQ_STORE_UNIT_SIZE, max(count, 0))
            units = [CQ_UNIT.unpack_from(buf.view, i * CQ_STORE_UNIT_SIZE) for i in range(n)]
        finally:
            buf.release()
        return (*bounds, units)

    def clean_unused_topics(self, keep: set[str]) -> list[str]:
        """Delete the consume queues of every topic not in ``keep`` (Java's cleanUnusedTopic; the delay-level
        and transaction-op queues are never unused). Returns the topics deleted."""
        unused = [t for t in self.cq_table.topics() if t not in keep and t not in _NEVER_UNUSED]
        self.delete_topics(unused)
        return unused

    def clean_expired_consume_queues(self) -> list[tuple[str, int]]:
        """Delete every consume queue whose messages have all left the commit log (Java's
        cleanExpiredConsumerQueue): its next offset starts again at 0. Returns the queues deleted."""
        gone: list[tuple[str, int]] = []
        with self.commit_log.put_lock:
            min_phys = self.commit_log.get_min_offset()
            for cq in list(self.cq_table):
                # an empty queue (-1) may have been created just now: kept, as Java keeps it
                if cq.topic == SCHEDULE_TOPIC or cq.max_physic_offset < 0 or cq.max_physic_offset >= min_phys:
                    continue
                if self.cq_table.delete_queue(cq.topic, cq.queue_id):
                    self.commit_log.topic_queue_table.pop((cq.topic, cq.queue_id), None)
                    gone.append((cq.topic, cq.queue_id))
        return gone

    # ============================================================================ maintenance, stats

    def run_cleanup(self) -> CleanupReport:
        """One retention pass (the cleanup thread calls it every ``clean_resource_interval`` ms)."""
        with self._cleanup_lock:
            return self.cleanup_service.run()

    def trigger_delete_files(self) -> None:
        self.cleanup_service.trigger_delete_files()

    def stats(self) -> StoreStats:
        return self.stats_service.snapshot()

    def runtime_info(self) -> dict[str, str]:
        """RocketMQ's store runtime-info keys (GET_BROKER_RUNTIME_INFO), and rocketq's disk keys."""
        return store_runtime_info(
            self.config, self._clock(), self.stats_service, self.commit_log, self.cleanup_service, self.disk_usage
        )

    def disk_util(self) -> str:
        """Java's ``CL: %5.2f CQ: %5.2f INDEX: %5.2f`` used ratios (the remark of a refused send)."""
        return disk_util_text(self.config, self.disk_usage)
