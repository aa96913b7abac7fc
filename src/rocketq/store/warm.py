"""``rocketq-store-warm``: pre-faults the commit log's pages ahead of the writer.

The first write into a page of a shared file mapping takes a page fault inside the append; measured here on
ext4 with a preallocated file, 2-4 µs per 1 KiB message, more than encoding and copying the message. The same
pages populated in bulk (``MADV_POPULATE_WRITE``) cost ~0.3 µs per KiB, and on this thread, with the GIL
released, they cost the writer nothing. RocketMQ warms whole files at creation (``warmMapedFileEnable``);
warming a window ahead keeps the resident set bounded (flushed pages are dropped behind the writer).

Recycling (``keep_behind``): on a virtual machine a page the guest has not touched lately is first backed by the
host when it is populated, and that costs ~2.5 µs per KiB here (virtio-balloon reports free guest memory back
to the host); a page the guest freed a moment ago costs ~0.25. So before populating N bytes ahead, the warmer
evicts N bytes of flushed commit log from the page cache that lie more than ``keep_behind`` bytes behind the
write position, and the kernel hands those pages straight back. A long-running broker reaches the same state
when the page cache fills and the kernel reclaims the oldest pages; this makes the cost bounded from the start
and keeps the commit log's page cache at about ``keep_behind``. Only clean (flushed) pages are evicted; readers
further behind than that read from the disk, which RocketMQ already counts as "not in memory" beyond
``accessMessageInMemoryMaxRatio`` % of RAM, the default here.
"""

from __future__ import annotations

import logging

from rocketq.store.appendcodec import populate_write
from rocketq.store.flush import ServiceThread
from rocketq.store.mapped_file_queue import MappedFileQueue

log = logging.getLogger(__name__)

_CHUNK = 4 * 1024 * 1024  # one madvise call; short enough to notice shutdown between calls
_FOLIO = 2 * 1024 * 1024  # the page cache's largest folio on x86-64 (a PMD): eviction ranges align to it


class PageWarmer(ServiceThread):
    def __init__(self, mfq: MappedFileQueue, ahead_bytes: int, interval_ms: int, keep_behind: int = 0) -> None:
        super().__init__("rocketq-store-warm")
        self.mfq = mfq
        self.ahead = ahead_bytes
        self.interval = interval_ms / 1000.0
        #: evict flushed commit log this far behind the write position before populating (0 = never)
        self.keep_behind = keep_behind
        #: bytes populated / evicted so far (figures for tests and stats)
        self.populated = 0
        self.evicted = 0
        #: the log offset evicting has reached; None until the first round (it starts at the window's edge:
        #: what a restart left behind is not cached anyway)
        self._evicted_to: int | None = None

    def run_once(self) -> None:
        self.wait_for_running(self.interval)
        if self.is_stopped:
            return
        mf = self.mfq.last()
        if mf is None:
            return
        start = max(mf.warmed_position, mf.wrote_position)
        target = min(mf.wrote_position + self.ahead, mf.file_size)
        if target - start < min(_CHUNK, self.ahead // 4) and target < mf.file_size:
            return  # well ahead already: wait for the writer to use some of it
        if start >= target or not mf.hold():
            return
        try:
            while start < target and not self.is_stopped:
                n = min(_CHUNK, target - start)
                if self.keep_behind > 0:
                    self.evict_behind(n)
                try:
                    supported = populate_write(mf.mm, start, n)
                except OSError as exc:
                    # pages without blocks behind them (a sparse file on a full disk): this file is not
                    # warmed further; the disk guard, not this thread, decides whether writes go on
                    log.warning("store.warm_failed file=%s at=%d: %s; not warming this file", mf.file_name, start, exc)
                    mf.warmed_position = mf.file_size
                    return
                if not supported:
                    log.info("store.warm_unsupported: the kernel lacks MADV_POPULATE_WRITE; warming stops")
                    self.shutdown_later()
                    return
                start += n
                mf.warmed_position = start
                self.populated += n
        finally:
            mf.release()

    def evict_behind(self, budget: int) -> int:
        """Evict about ``budget`` bytes (whole 2 MiB folios) of flushed commit log older than ``keep_behind``;
        returns the bytes evicted.

        The page cache holds a file in folios of up to 2 MiB, naturally aligned, and the kernel evicts only the
        folios a range covers whole: ranges unaligned to them left half of the pages cached (mincore, measured).
        So every range here starts and ends on a 2 MiB boundary of its file, or at the file's end.
        """
        limit = min(self.mfq.flushed_where, self.mfq.get_max_offset() - self.keep_behind)
        if self._evicted_to is None:
            start = max(self.mfq.get_min_offset(), limit)
            self._evicted_to = start - start % _FOLIO
        done = 0
        pos = max(self._evicted_to, self.mfq.get_min_offset())  # files deleted meanwhile took their pages along
        while done < budget and pos < limit:
            mf = self.mfq.find_by_offset(pos)
            if mf is None or not mf.hold():
                break
            try:
                lo = pos - mf.file_from_offset
                hi = min(lo + max(budget - done, _FOLIO), limit - mf.file_from_offset)
                if hi < mf.file_size:
                    hi -= hi % _FOLIO
                else:
                    hi = mf.file_size
                if hi <= lo:
                    break  # less than a folio behind the window yet
                mf.drop_cached(lo, hi)
            finally:
                mf.release()
            done += hi - lo
            pos = mf.file_from_offset + hi
        self._evicted_to = pos
        self.evicted += done
        return done

    def shutdown_later(self) -> None:
        with self._cond:
            self._stopped = True
