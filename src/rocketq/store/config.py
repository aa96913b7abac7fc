"""Store configuration: ``StoreConfig`` mirrors RocketMQ 4.9's ``MessageStoreConfig`` in snake_case.

Sizes are bytes, intervals are milliseconds (as in the Java config files), ``file_reserved_time`` is hours.
Only the keys this store acts on are here; the rest of MessageStoreConfig (HA, DLedger, transient store
pool, LMQ) is not implemented.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from rocketq.errors import ConfigError

#: Milliseconds since the epoch. Injected into the store so tests can drive time.
Clock = Callable[[], int]

#: Used-space ratio (0.0-1.0) of the file system holding a path; injectable for tests.
DiskUsage = Callable[[str], float]

CQ_STORE_UNIT_SIZE: Final = 20
DEFAULT_DELAY_LEVELS: Final = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
_DELAY_UNITS: Final = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def system_clock() -> int:
    return time.time_ns() // 1_000_000


def disk_usage_ratio(path: str) -> float:
    """Used fraction of the partition holding ``path`` (RocketMQ's getDiskPartitionSpaceUsedPercent)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    total = st.f_blocks * st.f_frsize
    if total <= 0:
        return -1.0
    free = st.f_bavail * st.f_frsize
    return (total - free) / total


class FlushDiskType(StrEnum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


def parse_delay_levels(spec: str) -> dict[int, int]:
    """``"1s 5s ... 2h"`` → ``{1: 1000, 2: 5000, ...}`` (level → delay in ms), as ScheduleMessageService does."""
    table: dict[int, int] = {}
    for level, token in enumerate(spec.split(), start=1):
        m = re.fullmatch(r"(\d+)([smhd])", token)
        if m is None:
            raise ConfigError("message_delay_level", f"bad level {token!r}")
        table[level] = int(m.group(1)) * _DELAY_UNITS[m.group(2)]
    if not table:
        raise ConfigError("message_delay_level", "no levels")
    return table


def parse_delete_when(spec: str) -> frozenset[int]:
    """``"04"`` or ``"04;05"`` → the hours of the day at which expired files may be deleted."""
    hours: set[int] = set()
    for part in spec.split(";"):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or not 0 <= int(part) <= 23:
            raise ConfigError("delete_when", f"bad hour {part!r}")
        hours.add(int(part))
    return frozenset(hours)


@dataclass(slots=True, kw_only=True)
class StoreConfig:
    """Knobs of the message store. Defaults are RocketMQ 4.9.8's."""

    store_path_root_dir: str = field(default_factory=lambda: os.path.join(os.path.expanduser("~"), "store"))
    #: defaults to ``<root>/commitlog``
    store_path_commit_log: str | None = None

    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * CQ_STORE_UNIT_SIZE
    #: posix_fallocate each new commit-log file (RocketMQ's warm-up, in spirit): appends then avoid
    #: allocating blocks page by page. Not RocketMQ config; files are sparse when off.
    preallocate_commit_log: bool = True
    #: pre-fault this many bytes of the commit log ahead of the writer on a thread of its own (0 = off);
    #: resident memory grows by at most this much. Not RocketMQ config.
    warm_ahead_bytes: int = 32 * 1024 * 1024
    warm_ahead_interval_ms: int = 10
    #: how much flushed commit log behind the write position stays in the page cache; older pages are evicted
    #: as the warmer populates new ones, so it reuses them (``rocketq.store.warm``). -1: the in-memory boundary
    #: (``access_message_in_memory_max_ratio`` % of RAM); 0: never evict (the kernel decides). Not RocketMQ config.
    commit_log_cached_bytes: int = -1

    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    flush_interval_commit_log: int = 500
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval: int = 10_000
    flush_interval_consume_queue: int = 1000
    flush_consume_queue_least_pages: int = 2
    flush_consume_queue_thorough_interval: int = 60_000
    sync_flush_timeout: int = 5000

    max_message_size: int = 4 * 1024 * 1024

    file_reserved_time: int = 72
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    #: above this used ratio of the commit-log partition writes are refused (RocketMQ: 0.90)
    disk_space_warning_level_ratio: float = 0.90
    #: above this ratio expired-or-not files are deleted at once (RocketMQ: 0.85)
    disk_space_clean_forcibly_ratio: float = 0.85
    clean_file_forcibly_enable: bool = True
    #: writes are refused while less than this is free on the store's partitions, and a commit-log file is
    #: created only if this much stays free after it; the reserve for the sparse consume-queue and index
    #: pages and the broker's config files (``rocketq.store.disk``). Not RocketMQ config.
    disk_min_free_bytes: int = 256 * 1024 * 1024
    #: how often the free space is re-read (ms); also re-read at each commit-log roll. Not RocketMQ config.
    disk_check_interval: int = 500
    #: 0 disables the store's own cleanup thread (the owner then calls ``run_cleanup()``)
    clean_resource_interval: int = 10_000
    delete_commit_log_files_interval: int = 100
    delete_consume_queue_files_interval: int = 100
    destroy_mapped_file_interval_forcibly: int = 120_000

    message_index_enable: bool = True
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    max_msgs_num_batch: int = 64

    message_delay_level: str = DEFAULT_DELAY_LEVELS
    #: RocketMQ's CommitLog rewrites DELAY>0 messages into SCHEDULE_TOPIC_XXXX; off leaves that to the caller
    schedule_rewrite_enable: bool = True

    check_crc_on_recover: bool = True

    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 64 * 1024
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    #: upper bound on CQ entries one ``get_message`` may scan (RocketMQ: max(16000, maxMsgNums * 20))
    max_filter_message_count: int = 16_000

    def __post_init__(self) -> None:
        try:
            self.flush_disk_type = FlushDiskType(self.flush_disk_type)
        except ValueError as exc:
            raise ConfigError("flush_disk_type", f"{self.flush_disk_type!r} is not ASYNC_FLUSH/SYNC_FLUSH") from exc
        if self.mapped_file_size_commit_log < 4096:
            raise ConfigError("mapped_file_size_commit_log", "must be at least 4096")
        if (
            self.mapped_file_size_consume_queue < CQ_STORE_UNIT_SIZE
            or self.mapped_file_size_consume_queue % CQ_STORE_UNIT_SIZE
        ):
            raise ConfigError("mapped_file_size_consume_queue", "must be a positive multiple of 20")
        if self.max_hash_slot_num <= 0 or self.max_index_num <= 1:
            raise ConfigError("max_index_num", "index sizes must be positive")
        if self.max_message_size <= 0:
            raise ConfigError("max_message_size", "must be positive")
        if self.disk_min_free_bytes < 0:
            raise ConfigError("disk_min_free_bytes", "must be >= 0")
        if self.disk_check_interval <= 0:
            raise ConfigError("disk_check_interval", "must be positive")
        if self.commit_log_cached_bytes < -1:
            raise ConfigError("commit_log_cached_bytes", "must be -1 (the in-memory boundary), 0 (never) or bytes")
        parse_delay_levels(self.message_delay_level)
        parse_delete_when(self.delete_when)

    # ------------------------------------------------------------------------------------------ paths

    @property
    def commit_log_dir(self) -> str:
        return self.store_path_commit_log or os.path.join(self.store_path_root_dir, "commitlog")

    @property
    def consume_queue_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def index_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "index")

    @property
    def checkpoint_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "checkpoint")

    @property
    def abort_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "abort")

    @property
    def lock_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "lock")

    @property
    def is_sync_flush(self) -> bool:
        return self.flush_disk_type is FlushDiskType.SYNC_FLUSH
