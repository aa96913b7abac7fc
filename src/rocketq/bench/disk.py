"""Raw disk baselines: what the store's disk does for a plain sequential writer, in the same run.

* sequential write: 1 MiB ``os.write`` calls into a new file, one ``fdatasync`` at the end (the ASYNC_FLUSH
  ceiling: the page cache absorbs the writes);
* write + fdatasync of 1 MiB chunks (the bandwidth of a flusher that syncs every MiB);
* 4 KiB write + fdatasync (one synchronous commit per message: what SYNC_FLUSH costs *without* group commit).
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass

from rocketq.bench.stats import LatencyRecorder, LatencySummary

__all__ = ["DiskResult", "measure_disk"]

_MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class DiskResult:
    directory: str
    seq_write_mb_per_s: float
    sync_1m_mb_per_s: float
    fdatasync_4k_per_s: float
    fdatasync_4k_latency: LatencySummary | None


def measure_disk(directory: str, *, size: int = 256 * _MiB, duration: float = 1.0) -> DiskResult:
    """Blocking (call it in a thread from async code). Writes at most ``size`` bytes into ``directory``."""
    os.makedirs(directory, exist_ok=True)
    chunk = os.urandom(_MiB)
    fd, path = tempfile.mkstemp(prefix="rocketq-disk-", dir=directory)
    try:
        t0 = time.perf_counter()
        for _ in range(max(1, size // _MiB)):
            os.write(fd, chunk)
        os.fdatasync(fd)
        seq = size / (time.perf_counter() - t0) / 1e6

        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        written = 0
        t0 = time.perf_counter()
        deadline = t0 + duration
        while time.perf_counter() < deadline and written < size:
            os.write(fd, chunk)
            os.fdatasync(fd)
            written += _MiB
        sync_1m = written / (time.perf_counter() - t0) / 1e6

        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        small = chunk[:4096]
        rec = LatencyRecorder()
        t0 = time.perf_counter()
        deadline = t0 + duration
        n = 0
        while True:
            start = time.perf_counter()
            if start >= deadline:
                break
            os.write(fd, small)
            os.fdatasync(fd)
            rec.record_since(start)
            n += 1
        per_s = n / (time.perf_counter() - t0)
    finally:
        os.close(fd)
        os.unlink(path)
    return DiskResult(directory, seq, sync_1m, per_s, rec.summary())
