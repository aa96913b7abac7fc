"""Disk space: the headroom the store keeps free and the one place that decides DISK_FULL.

Appends into a mapped file cannot report a full disk: a page that has no block behind it faults with SIGBUS
and the process dies. So the store never writes into a page it has not reserved:

* commit-log files are reserved whole (``posix_fallocate``) when created; a failed reservation is an error
  (the new file is removed and the append is refused), never a sparse file (``MappedFileQueue._create``);
* before a commit-log file is created, ``DiskGuard.reserve_for_roll`` checks that ``disk_min_free_bytes``
  would still be free afterwards;
* consume-queue and index files stay sparse (as in RocketMQ): their pages, and the broker's own config files,
  are what the headroom is for. ``DiskGuardThread`` re-reads the free space every ``disk_check_interval`` ms
  and refuses writes while less than the headroom is free, before the sparse files can run out of blocks.

Two conditions set the store's DISK_FULL flag (writes answered SERVICE_NOT_AVAILABLE, reads go on): the used
ratio above ``disk_space_warning_level_ratio`` (RocketMQ's rule, decided by the cleanup service) and the
free bytes below the headroom (decided here). The flag clears by itself once neither holds.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from rocketq.store.config import StoreConfig
from rocketq.store.errors import DiskFullError
from rocketq.store.flush import ServiceThread
from rocketq.store.running_flags import DISK_FULL, RunningFlags

log = logging.getLogger(__name__)

#: bytes an unprivileged writer may still use on the partition holding a path; -1 when unknown
DiskFree = Callable[[str], int]


def existing_dir(path: str) -> str:
    """``path`` or its nearest existing ancestor (the commit-log directory appears with its first file)."""
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if not parent or parent == path:
            break
        path = parent
    return path


def disk_free_bytes(path: str) -> int:
    """Free bytes for ordinary users (``f_bavail``, what Java's ``File.getUsableSpace`` reports); -1 if unknown."""
    try:
        st = os.statvfs(existing_dir(path))
    except OSError:
        return -1
    return st.f_bavail * st.f_frsize


class DiskGuard:
    """Owns the DISK_FULL flag; thread-safe (appender, cleanup thread and disk thread all call it)."""

    def __init__(self, config: StoreConfig, flags: RunningFlags, disk_free: DiskFree = disk_free_bytes) -> None:
        self.config = config
        self.flags = flags
        #: the free-space probe (injectable: a test fakes a small disk with it)
        self.disk_free = disk_free
        self._lock = threading.Lock()
        self._ratio_full = False
        self._space_full = False
        #: size of the commit-log file a refused roll wanted: clearing then needs room for it as well
        self._blocked_roll = 0
        #: the last reading (lowest over the store's directories); -1 before the first or when unknown
        self.free_bytes = -1
        #: how many times writes were switched off for lack of free bytes (a figure for status and tests)
        self.space_full_events = 0

    def _paths(self) -> set[str]:
        cfg = self.config
        return {cfg.commit_log_dir, cfg.store_path_root_dir}

    def read_free(self) -> int:
        """The free bytes of the tightest of the store's directories (-1 if none can be read)."""
        readings = [f for f in (self.disk_free(p) for p in self._paths()) if f >= 0]
        free = min(readings) if readings else -1
        self.free_bytes = free
        return free

    # ------------------------------------------------------------------------------------- decisions

    def check(self) -> bool:
        """Re-read the free space and update the flag (the disk thread calls this); True if writes may go on."""
        free = self.read_free()
        need = self.config.disk_min_free_bytes + self._blocked_roll
        self._set_space_full(0 <= free < need, free, need)
        return not self.flags.is_disk_full()

    def reserve_for_roll(self, size: int) -> None:
        """Before a commit-log file of ``size`` bytes is created: raise ``DiskFullError`` unless the headroom
        is still free after it."""
        free = self.read_free()
        need = self.config.disk_min_free_bytes + size
        if 0 <= free < need:
            self.allocation_failed(size, free)
            raise DiskFullError(f"{free} bytes free, a new commit-log file needs {size} + {need - size} headroom")
        self._blocked_roll = 0

    def allocation_failed(self, size: int, free: int = -1) -> None:
        """A commit-log file could not be reserved for lack of space: refuse writes until room returns."""
        self._blocked_roll = size
        need = self.config.disk_min_free_bytes + size
        self._set_space_full(True, free if free >= 0 else self.read_free(), need)

    def set_ratio_full(self, full: bool, ratio: float) -> None:
        """RocketMQ's rule, from the cleanup service: full above the warning level, clear below clean-forcibly."""
        with self._lock:
            if full == self._ratio_full:
                return
            self._ratio_full = full
            self._apply()
        if full:
            limit = self.config.disk_space_warning_level_ratio
            log.error("store.disk_full used=%.3f > %.2f: writes refused", ratio, limit)
        else:
            log.info("store.disk_ratio_ok used=%.3f: the used ratio no longer refuses writes", ratio)

    def _set_space_full(self, full: bool, free: int, need: int) -> None:
        with self._lock:
            if full == self._space_full:
                return
            self._space_full = full
            if full:
                self.space_full_events += 1
            self._apply()
        if full:
            log.error(
                "store.disk_full free=%d need=%d (diskMinFreeBytes=%d): writes refused until space returns",
                free, need, self.config.disk_min_free_bytes,
            )
        else:
            log.warning("store.disk_space_ok free=%d need=%d: writes accepted again", free, need)

    def _apply(self) -> None:
        if self._ratio_full or self._space_full:
            self.flags.set(DISK_FULL)
        else:
            self.flags.clear(DISK_FULL)

    @property
    def space_full(self) -> bool:
        return self._space_full


class DiskGuardThread(ServiceThread):
    """``rocketq-store-disk``: ``DiskGuard.check`` every ``disk_check_interval`` ms (one statvfs per directory)."""

    def __init__(self, guard: DiskGuard) -> None:
        super().__init__("rocketq-store-disk")
        self.guard = guard

    def run_once(self) -> None:
        self.wait_for_running(max(self.guard.config.disk_check_interval, 10) / 1000)
        if not self.is_stopped:
            self.guard.check()
