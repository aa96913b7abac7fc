"""A directory of consecutive fixed-size mapped files forming one logical log (RocketMQ's ``MappedFileQueue``).

File *k* starts at byte ``k * mapped_file_size`` of the log and is named by that offset (20 digits). Only
the last file is written; files are deleted from the front. The list of files is replaced, never mutated
in place, so readers can use a snapshot without a lock.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import struct
import threading
import time
from typing import Protocol

from rocketq.store.config import Clock, system_clock
from rocketq.store.errors import is_no_space
from rocketq.store.mapped_file import MappedFile, offset_to_file_name


class SpaceGuard(Protocol):
    """What a queue asks before and after creating a file (``rocketq.store.disk.DiskGuard``)."""

    def reserve_for_roll(self, size: int) -> None:
        """Raise OSError (ENOSPC) unless a file of ``size`` bytes may be created."""

    def allocation_failed(self, size: int, free: int = -1) -> None:
        """A file of ``size`` bytes could not be reserved for lack of space."""

log = logging.getLogger(__name__)

#: at most this many files are deleted per cleanup pass (RocketMQ's DELETE_FILES_BATCH_MAX)
DELETE_FILES_BATCH_MAX = 10

_I64 = struct.Struct(">q")


class MappedFileQueue:
    def __init__(
        self,
        store_path: str,
        mapped_file_size: int,
        *,
        keep_fd: bool = False,
        preallocate: bool = False,
        clock: Clock = system_clock,
        guard: SpaceGuard | None = None,
    ) -> None:
        self.store_path = store_path
        #: checks the headroom before each new file and hears of allocations that found the disk full
        self.guard = guard
        self._preallocate = preallocate
        self.mapped_file_size = mapped_file_size
        self._keep_fd = keep_fd
        self._clock = clock
        #: the files in offset order; replaced, never changed in place, so readers take it without the lock
        #: (a plain attribute, not a property: the append path reads it for every message)
        self.mapped_files: list[MappedFile] = []
        self._lock = threading.Lock()
        self._pending_destroy: list[MappedFile] = []
        #: log offset up to which data is durable
        self.flushed_where = 0

    # ------------------------------------------------------------------------------------ lifecycle

    def load(self) -> bool:
        """Map every file of the directory, all marked full; recovery sets the real write position."""
        if not os.path.isdir(self.store_path):
            return True
        entries = os.listdir(self.store_path)
        for n in entries:
            if n.endswith(".tmp"):  # a creation cut short by a crash
                os.unlink(os.path.join(self.store_path, n))
        names = sorted(n for n in entries if len(n) == 20 and n.isdigit())
        files: list[MappedFile] = []
        for i, name in enumerate(names):
            path = os.path.join(self.store_path, name)
            size = os.path.getsize(path)
            if size == 0 and i == len(names) - 1:
                log.warning("mapped_file.empty_removed path=%s", path)
                os.unlink(path)
                continue
            if size != self.mapped_file_size:
                log.error(
                    "mapped_file.load_failed path=%s size=%d expected=%d (check mapped file size config)",
                    path, size, self.mapped_file_size,
                )
                for mf in files:
                    mf.close()
                return False
            mf = MappedFile(path, self.mapped_file_size, keep_fd=self._keep_fd)
            mf.set_positions(self.mapped_file_size)
            files.append(mf)
        for prev, cur in itertools.pairwise(files):
            if cur.file_from_offset != prev.file_from_offset + self.mapped_file_size:
                log.warning("mapped_file.gap dir=%s after=%s next=%s", self.store_path, prev.file_name, cur.file_name)
        self.mapped_files = files
        return True

    def close(self) -> None:
        for mf in self.mapped_files:
            mf.close()
        self.mapped_files = []

    def destroy(self) -> None:
        """Delete every file and the directory."""
        now = self._clock()
        with self._lock:
            files, self.mapped_files = self.mapped_files, []
            self.flushed_where = 0
        for mf in files:
            if not mf.destroy(1000, now):
                self._pending_destroy.append(mf)
        shutil.rmtree(self.store_path, ignore_errors=True)

    # -------------------------------------------------------------------------------------- lookup

    def first(self) -> MappedFile | None:
        files = self.mapped_files
        return files[0] if files else None

    def last(self) -> MappedFile | None:
        files = self.mapped_files
        return files[-1] if files else None

    def get_min_offset(self) -> int:
        """Offset of the first byte still kept; -1 when there are no files."""
        files = self.mapped_files
        return files[0].file_from_offset if files else -1

    def get_max_offset(self) -> int:
        """Offset one past the last byte written (0 when empty)."""
        files = self.mapped_files
        if not files:
            return 0
        last = files[-1]
        return last.file_from_offset + last.wrote_position

    def find_by_offset(self, offset: int, return_first_on_not_found: bool = False) -> MappedFile | None:
        files = self.mapped_files
        if not files:
            return None
        first = files[0]
        idx = offset // self.mapped_file_size - first.file_from_offset // self.mapped_file_size
        if 0 <= idx < len(files):
            mf = files[idx]
            if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                return mf
        return first if return_first_on_not_found else None

    def roll_next_file(self, offset: int) -> int:
        return offset + self.mapped_file_size - offset % self.mapped_file_size

    # ------------------------------------------------------------------------------------- writing

    def last_for_write(self, start_offset: int = 0) -> MappedFile:
        """The file to append to, creating the first or the next one when needed."""
        files = self.mapped_files
        last = files[-1] if files else None
        if last is not None and not last.is_full():
            return last
        if last is None:
            create_offset = start_offset - start_offset % self.mapped_file_size
        else:
            create_offset = last.file_from_offset + self.mapped_file_size
        return self._create(create_offset)

    def _create(self, offset: int) -> MappedFile:
        """Create, size and map the file starting at ``offset``; raises OSError (nothing left behind) when the
        headroom check refuses it or the disk cannot hold it."""
        size = self.mapped_file_size
        guard = self.guard
        if guard is not None:
            guard.reserve_for_roll(size)  # DiskFullError: refused before any byte is taken
        try:
            path = self._allocate(offset)
        except OSError as exc:
            if guard is not None and is_no_space(exc):
                guard.allocation_failed(size)
            log.error("mapped_file.create_failed dir=%s offset=%d size=%d: %s", self.store_path, offset, size, exc)
            raise
        mf = MappedFile(path, size, file_from_offset=offset, keep_fd=self._keep_fd, now_ms=self._clock())
        with self._lock:
            if not self.mapped_files:
                mf.first_create_in_queue = True
            self.mapped_files = [*self.mapped_files, mf]
        return mf

    def _allocate(self, offset: int) -> str:
        """The sized file under its real name. It is sized under a temporary name first (a crash must not
        leave a short file under the real name), which is removed again when sizing fails."""
        os.makedirs(self.store_path, exist_ok=True)
        path = os.path.join(self.store_path, offset_to_file_name(offset))
        tmp = path + ".tmp"
        # missing on some platforms (macOS): files are then sparse, guarded by the headroom alone
        fallocate = getattr(os, "posix_fallocate", None) if self._preallocate else None
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            try:
                os.ftruncate(fd, self.mapped_file_size)
                if fallocate is not None:
                    # Reserve the blocks now (about 1 ms per GiB on ext4): first-touch page faults on a sparse
                    # file cost ~3 us per KiB appended, on an allocated one ~0.4 us. And a sparse file on a full
                    # disk is a SIGBUS at the append that touches a page without a block: an error here is not.
                    fallocate(fd, 0, self.mapped_file_size)
            finally:
                os.close(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        os.rename(tmp, path)
        return path

    def flush(self, least_pages: int) -> bool:
        """Flush the file holding ``flushed_where``; True when nothing new was flushed."""
        mf = self.find_by_offset(self.flushed_where, self.flushed_where == 0)
        if mf is None:
            return True
        where = mf.file_from_offset + mf.flush(least_pages)
        unchanged = where == self.flushed_where
        self.flushed_where = where
        return unchanged

    def flush_all(self) -> None:
        """Flush until everything written is durable (several files if the writer has rolled)."""
        while True:
            before = self.flushed_where
            self.flush(0)
            if self.flushed_where <= before:
                return

    # ---------------------------------------------------------------------------------- truncation

    def truncate_dirty_files(self, offset: int) -> None:
        """Drop everything at or after ``offset``: zero the tail of its file, delete the files after it."""
        now = self._clock()
        keep: list[MappedFile] = []
        for mf in self.mapped_files:
            if mf.file_from_offset + self.mapped_file_size <= offset:
                keep.append(mf)
            elif mf.file_from_offset <= offset:
                pos = offset - mf.file_from_offset
                mf.set_positions(pos)
                mf.zero_from(pos)
                keep.append(mf)
            else:
                log.info("mapped_file.truncate_delete path=%s", mf.path)
                if not mf.destroy(1000, now):
                    self._pending_destroy.append(mf)
        with self._lock:
            self.mapped_files = keep
        self.flushed_where = min(self.flushed_where, offset)

    def delete_last_file(self) -> None:
        with self._lock:
            if not self.mapped_files:
                return
            mf = self.mapped_files[-1]
            self.mapped_files = self.mapped_files[:-1]
        if not mf.destroy(1000, self._clock()):
            self._pending_destroy.append(mf)

    # ------------------------------------------------------------------------------------ deletion

    def _remove_front(self, victims: list[MappedFile]) -> None:
        gone = {id(v) for v in victims}
        with self._lock:
            self.mapped_files = [mf for mf in self.mapped_files if id(mf) not in gone]

    def delete_expired_by_time(
        self,
        expired_ms: int,
        delete_interval_ms: int,
        interval_forcibly_ms: int,
        clean_immediately: bool,
    ) -> int:
        """Delete leading files last written more than ``expired_ms`` ago (all but the last file)."""
        files = self.mapped_files[:-1]
        deleted: list[MappedFile] = []
        for mf in files:
            now = self._clock()
            if not (now >= mf.last_modified_ms + expired_ms or clean_immediately):
                break  # never delete from the middle
            if deleted and delete_interval_ms > 0:
                time.sleep(delete_interval_ms / 1000)
            if not mf.destroy(interval_forcibly_ms, now):
                self._pending_destroy.append(mf)
            deleted.append(mf)
            if len(deleted) >= DELETE_FILES_BATCH_MAX:
                break
        if deleted:
            self._remove_front(deleted)
        return len(deleted)

    def delete_expired_by_offset(self, offset: int, unit_size: int) -> int:
        """Delete leading files whose last unit points below commit-log ``offset`` (consume queues)."""
        files = self.mapped_files[:-1]
        deleted: list[MappedFile] = []
        now = self._clock()
        for mf in files:
            res = mf.select(self.mapped_file_size - unit_size)
            if res is not None:
                try:
                    (max_phys,) = _I64.unpack_from(res.view, 0)
                finally:
                    res.release()
                destroy = max_phys < offset
            else:
                destroy = not mf.is_available
            if not destroy:
                break
            if not mf.destroy(60_000, now):
                self._pending_destroy.append(mf)
            deleted.append(mf)
        if deleted:
            self._remove_front(deleted)
        return len(deleted)

    def retry_pending_destroy(self, interval_forcibly_ms: int) -> int:
        """Retry unmapping deleted files whose views were still out; returns how many remain."""
        now = self._clock()
        self._pending_destroy = [mf for mf in self._pending_destroy if not mf.destroy(interval_forcibly_ms, now)]
        return len(self._pending_destroy)

    @property
    def pending_destroy_count(self) -> int:
        return len(self._pending_destroy)
