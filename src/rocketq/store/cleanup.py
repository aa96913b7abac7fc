"""Retention: delete old commit-log files, then the consume-queue and index files that only point below the
new first commit-log byte; watch disk usage (RocketMQ's CleanCommitLogService + CleanConsumeQueueService).

Per ``run()``, with ``r`` = used ratio of the commit-log partition (``disk_usage`` is injectable):

* files last written more than ``file_reserved_time`` hours ago are deleted (oldest first, never the file
  being written, at most 10 per run) when the hour is one of ``delete_when``, or ``r`` exceeds
  ``disk_max_used_space_ratio`` %, or ``trigger_delete_files()`` was called (20 runs);
* ``r`` > ``disk_space_clean_forcibly_ratio``: files are deleted even if not expired;
* ``r`` > ``disk_space_warning_level_ratio``: the store is marked DISK_FULL and refuses writes
  (SERVICE_NOT_AVAILABLE) until ``r`` drops back under the clean-forcibly ratio; reads keep working
  (``DiskGuard`` owns the flag: its free-bytes headroom also sets it).

Files deleted before their retention time (the forced clean-up: their messages are gone whether consumed
or not) are logged as a WARNING with the counts and counted in ``ForcedCleanup`` (broker runtime info).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from rocketq.store.commit_log import CommitLog
from rocketq.store.config import Clock, DiskUsage, StoreConfig, parse_delete_when
from rocketq.store.consume_queue_table import ConsumeQueueTable
from rocketq.store.disk import DiskGuard
from rocketq.store.index_service import IndexService

log = logging.getLogger(__name__)

MANUAL_DELETE_FILE_SEVERAL_TIMES = 20


@dataclass(frozen=True, slots=True)
class CleanupReport:
    commit_log_files_deleted: int
    consume_queue_files_deleted: int
    index_files_deleted: int
    disk_used_ratio: float
    clean_immediately: bool
    disk_full: bool


@dataclass(slots=True)
class ForcedCleanup:
    """Commit-log files deleted before their retention time for space, since start-up."""

    files: int = 0
    bytes: int = 0
    #: used ratio of the commit-log partition at the last such deletion, and its time (ms; 0 = never)
    last_ratio: float = 0.0
    last_timestamp: int = 0


class CleanupService:
    def __init__(
        self,
        config: StoreConfig,
        commit_log: CommitLog,
        cq_table: ConsumeQueueTable,
        index: IndexService | None,
        guard: DiskGuard,
        clock: Clock,
        disk_usage: DiskUsage,
    ) -> None:
        self.config = config
        self.commit_log = commit_log
        self.cq_table = cq_table
        self.index = index
        self.guard = guard
        self.flags = guard.flags
        self.forced = ForcedCleanup()
        self._clock = clock
        self._disk_usage = disk_usage
        self._delete_hours = parse_delete_when(config.delete_when)
        self.manual_delete_times = 0
        self.last_physical_min_offset = 0

    def trigger_delete_files(self) -> None:
        """Admin request (TRIGGER_DELETE_FILES): delete expired files on the next runs regardless of the hour."""
        self.manual_delete_times = MANUAL_DELETE_FILE_SEVERAL_TIMES

    def is_time_to_delete(self) -> bool:
        return time.localtime(self._clock() / 1000).tm_hour in self._delete_hours

    def check_space(self) -> tuple[bool, bool, float]:
        """(space says delete, delete even unexpired files, used ratio); updates the DISK_FULL flag."""
        cfg = self.config
        ratio = self._disk_usage(cfg.commit_log_dir)
        clean_immediately = False
        if ratio > cfg.disk_space_warning_level_ratio:
            self.guard.set_ratio_full(True, ratio)
            clean_immediately = True
        elif ratio > cfg.disk_space_clean_forcibly_ratio:
            clean_immediately = True
        else:
            self.guard.set_ratio_full(False, ratio)
        space = ratio < 0 or ratio > cfg.disk_max_used_space_ratio / 100
        if cfg.consume_queue_dir != cfg.commit_log_dir:
            logics = self._disk_usage(cfg.store_path_root_dir)
            if logics > cfg.disk_space_clean_forcibly_ratio:
                clean_immediately = True
            space = space or logics < 0 or logics > cfg.disk_max_used_space_ratio / 100
        return space, clean_immediately, ratio

    def _forced(self, files: int, ratio: float, now: int) -> None:
        cfg = self.config
        size = self.commit_log.file_size
        f = self.forced
        f.files += files
        f.bytes += files * size
        f.last_ratio, f.last_timestamp = ratio, now
        log.warning(
            "store.forced_cleanup: DELETED %d commit-log files (%d bytes) before their retention of %d h, "
            "consumed or not: disk used %.1f%% > diskMaxUsedSpaceRatio %d%% (clean-forcibly above %.0f%%); "
            "%d files, %d bytes so far",
            files, files * size, cfg.file_reserved_time, ratio * 100, cfg.disk_max_used_space_ratio,
            cfg.disk_space_clean_forcibly_ratio * 100, f.files, f.bytes,
        )

    def run(self) -> CleanupReport:
        cfg = self.config
        space, clean_immediately, ratio = self.check_space()
        manual = self.manual_delete_times > 0
        cl_deleted = 0
        if self.is_time_to_delete() or space or manual:
            if manual:
                self.manual_delete_times -= 1
            clean_at_once = cfg.clean_file_forcibly_enable and clean_immediately
            expired_ms = cfg.file_reserved_time * 3_600_000
            before = self.commit_log.mfq.mapped_files
            now = self._clock()
            cl_deleted = self.commit_log.delete_expired_files(
                expired_ms,
                cfg.delete_commit_log_files_interval,
                cfg.destroy_mapped_file_interval_forcibly,
                clean_at_once,
            )
            if cl_deleted:
                log.info("cleanup.commit_log deleted=%d ratio=%.3f at_once=%s", cl_deleted, ratio, clean_at_once)
                # deletion goes from the front: the first files of the list taken before are the ones gone
                early = sum(1 for mf in before[:cl_deleted] if now < mf.last_modified_ms + expired_ms)
                if early:
                    self._forced(early, ratio, now)
        self.commit_log.mfq.retry_pending_destroy(cfg.destroy_mapped_file_interval_forcibly)

        cq_deleted = idx_deleted = 0
        min_offset = self.commit_log.get_min_offset()
        if min_offset > self.last_physical_min_offset:
            self.last_physical_min_offset = min_offset
            cq_deleted = self.cq_table.delete_expired(min_offset)
            if self.index is not None:
                idx_deleted = self.index.delete_expired(min_offset)
        self.cq_table.retry_pending_destroy(cfg.destroy_mapped_file_interval_forcibly)
        if self.index is not None:
            self.index.retry_pending_destroy(cfg.destroy_mapped_file_interval_forcibly)
        return CleanupReport(cl_deleted, cq_deleted, idx_deleted, ratio, clean_immediately, self.flags.is_disk_full())
