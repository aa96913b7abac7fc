"""Flushed pages leave the process's resident set (RSS stays flat however much is written), data intact."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rocketq.store.mapped_file import MappedFile

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")


def _rss_kb(path: Path) -> int:
    total, current = 0, None
    with open("/proc/self/smaps", encoding="ascii", errors="replace") as f:
        for line in f:
            first = line.split(" ", 1)[0]
            if "-" in first and not first.endswith(":"):
                current = line.split()[-1] if len(line.split()) >= 6 else None
            elif line.startswith("Rss:") and current == str(path):
                total += int(line.split()[1])
    return total


def test_flush_drops_the_flushed_pages_and_keeps_the_data(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000"
    mf = MappedFile(str(path), 1 << 20, keep_fd=True)
    try:
        data = os.urandom(512 * 1024 + 100)
        assert mf.append(data)
        assert _rss_kb(path) >= 512
        mf.flush(0)
        assert _rss_kb(path) <= 8  # at most the partial last page
        assert bytes(mf.mm[: len(data)]) == data  # faulted back in from the page cache
    finally:
        mf.close()


def test_dropping_unflushed_pages_keeps_them_too(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000"
    mf = MappedFile(str(path), 1 << 20)
    try:
        data = os.urandom(256 * 1024)
        mf.append(data)
        mf.drop_resident(0, len(data))  # dirty, never synced
        assert _rss_kb(path) == 0
        assert bytes(mf.mm[: len(data)]) == data
        mf.flush(0)
        assert path.read_bytes()[: len(data)] == data
    finally:
        mf.close()


def test_index_drops_written_entries_then_the_whole_full_file(tmp_path: Path) -> None:
    from rocketq.store.index_file import IndexFile

    path = tmp_path / "20260101000000000"
    index = IndexFile(str(path), hash_slot_num=4096, index_num=2000)  # 16 KiB of slots, 40 KB of entries
    try:
        for i in range(1999):  # the first entry slot is reserved: 1999 fill the file
            assert index.put_key(i * 7919, 1000 + i, 1_700_000_000_000 + i)
        slots_and_entries = _rss_kb(path)
        assert slots_and_entries > 16
        assert index.is_write_full
        index.drop_resident()
        assert _rss_kb(path) == 0
        index.drop_resident()  # once dropped whole, nothing more to do
        assert index.is_write_full and not index.put_key(1, 1, 1)
    finally:
        index.close()
