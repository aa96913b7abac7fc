"""The store's part of GET_BROKER_RUNTIME_INFO (what ``mqadmin brokerStatus`` prints), and the disk probes.

Java's keys come from ``DefaultMessageStore.getRuntimeInfo`` and ``AdminBrokerProcessor.prepareRuntimeInfo``.
rocketq adds the disk-space keys (Java has no such keys; its DISK_FULL bit is only seen in a refused send):

* ``storeDiskFull``: ``true`` while writes are refused for a full disk (either rule of ``rocketq.store.disk``);
* ``storeDiskFreeBytes`` / ``storeDiskMinFreeBytes``: the free bytes last read and the headroom kept;
* ``storeForcedCleanFiles`` / ``storeForcedCleanBytes`` / ``storeForcedCleanLastRatio`` /
  ``storeForcedCleanLastTimeStamp``: commit-log files deleted before their retention time because the disk
  was above ``diskMaxUsedSpaceRatio`` (since start-up; the ratio and time of the last such pass).
"""

from __future__ import annotations

import os

from rocketq.store.cleanup import CleanupService
from rocketq.store.commit_log import CommitLog
from rocketq.store.config import DiskUsage, StoreConfig
from rocketq.store.stats import StatsService, human_bytes

#: Java's figure for remainTransientStoreBufferNumbs when there is no transient store pool (rocketq never has one)
_NO_TRANSIENT_POOL = str(2**31 - 1)


def disk_capacity(path: str) -> tuple[int, int] | None:
    """(total, usable) bytes of the partition holding ``path``; None if it cannot be read."""
    try:
        disk = os.statvfs(path)
    except OSError:
        return None
    return disk.f_blocks * disk.f_frsize, disk.f_bavail * disk.f_frsize


def disk_util_text(config: StoreConfig, disk_usage: DiskUsage) -> str:
    """Java's SendMessageProcessor.diskUtil: the used ratios of the commit-log, consume-queue and index paths."""
    # a directory not created yet reads -1, as in Java
    cl, cq = disk_usage(config.commit_log_dir), disk_usage(config.consume_queue_dir)
    index = disk_usage(config.index_dir)
    return f"CL: {cl:5.2f} CQ: {cq:5.2f} INDEX: {index:5.2f}"


def store_runtime_info(
    config: StoreConfig,
    now: int,
    stats: StatsService,
    commit_log: CommitLog,
    cleanup: CleanupService,
    disk_usage: DiskUsage,
) -> dict[str, str]:
    """The keys (``MessageStore.runtime_info``), from the store's parts."""
    info = stats.runtime_info(now)
    cfg = config
    usage = disk_usage
    ratio = str(usage(cfg.commit_log_dir))
    info["commitLogDiskRatio"] = ratio
    info[f"commitLogDiskRatio_{cfg.commit_log_dir}"] = ratio  # Java: one key per commit-log path
    info["consumeQueueDiskRatio"] = str(usage(cfg.store_path_root_dir))
    min_offset, max_offset = commit_log.get_min_offset(), commit_log.get_max_offset()
    info["commitLogMinOffset"] = str(min_offset)
    info["commitLogMaxOffset"] = str(max_offset)
    flushed = commit_log.mfq.flushed_where
    info["commitLogFlushedOffset"] = str(flushed)
    info["remainHowManyDataToFlush"] = human_bytes(max(max_offset - flushed, 0))
    info["earliestMessageTimeStamp"] = str(
        commit_log.pickup_store_timestamp(min_offset, 0) if max_offset > min_offset else -1
    )
    info["dispatchBehindBytes"] = "0"
    info["pageCacheLockTimeMills"] = "0"
    info["remainTransientStoreBufferNumbs"] = _NO_TRANSIENT_POOL
    capacity = disk_capacity(cfg.store_path_root_dir)
    if capacity is not None:
        total, free = capacity
        info["commitLogDirCapacity"] = f"Total : {human_bytes(total)}, Free : {human_bytes(free)}."
    guard = cleanup.guard
    info["storeRunningFlags"] = str(guard.flags.bits)
    info["storeDiskFull"] = "true" if guard.flags.is_disk_full() else "false"
    info["storeDiskFreeBytes"] = str(guard.read_free())
    info["storeDiskMinFreeBytes"] = str(cfg.disk_min_free_bytes)
    forced = cleanup.forced
    info["storeForcedCleanFiles"] = str(forced.files)
    info["storeForcedCleanBytes"] = str(forced.bytes)
    info["storeForcedCleanLastRatio"] = f"{forced.last_ratio:.4f}"
    info["storeForcedCleanLastTimeStamp"] = str(forced.last_timestamp)
    return info
