from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from rocketq.store.mapped_file import MappedFile
from rocketq.store.mapped_file_queue import MappedFileQueue
from rocketq.store.reference import ReferenceResource


def test_create_is_sparse_and_named_by_offset(tmp_path: Path) -> None:
    mf = MappedFile(str(tmp_path / "00000000000000004096"), 4096)
    assert mf.file_from_offset == 4096 and mf.file_size == 4096
    assert os.path.getsize(mf.path) == 4096
    assert mf.append(b"abc") and mf.wrote_position == 3
    assert not mf.append(b"x" * 4094)
    assert mf.remaining == 4093
    mf.close()


def test_select_holds_and_release(tmp_path: Path) -> None:
    mf = MappedFile(str(tmp_path / "00000000000000000000"), 4096)
    mf.append(b"0123456789")
    assert mf.select(10) is None  # nothing written there yet
    assert mf.select(5, 6) is None  # past the write position
    res = mf.select(2, 3)
    assert res is not None and bytes(res.view) == b"234" and res.start_offset == 2
    assert mf.ref_count == 2
    res.release()
    res.release()  # idempotent
    assert mf.ref_count == 1
    mf.close()


def test_destroy_is_deferred_while_views_are_out(tmp_path: Path) -> None:
    mf = MappedFile(str(tmp_path / "00000000000000000000"), 4096)
    mf.append(b"hello")
    res = mf.select(0)
    assert res is not None
    sub = res.view[1:3]  # a reader's own slice keeps the mapping exported too
    assert not mf.destroy(120_000, 0)
    assert not os.path.exists(mf.path)  # unlinked at once
    assert mf.select(0) is None  # no new holders
    assert bytes(res.view) == b"hello"  # the held view still reads
    res.release()
    assert not mf.destroy(120_000, 1)  # views dropped by the store, but ``sub`` still exports a buffer
    del sub
    assert mf.destroy(120_000, 2)
    assert mf.is_cleanup_over


def test_forcible_destroy_after_interval(tmp_path: Path) -> None:
    mf = MappedFile(str(tmp_path / "00000000000000000000"), 4096)
    mf.append(b"x")
    assert mf.hold()  # a holder that never releases (its view is already gone)
    assert not mf.destroy(1000, 0)
    assert not mf.destroy(1000, 999)
    assert mf.destroy(1000, 1000)


def test_reference_resource_counts() -> None:
    cleaned = []

    class R(ReferenceResource):
        def _cleanup(self) -> bool:
            cleaned.append(1)
            return True

    r = R()
    assert r.hold()
    r.shutdown(10_000, 0)
    assert not r.is_available and not cleaned and not r.hold()
    r.release()
    assert cleaned == [1] and r.is_cleanup_over


def test_flush_least_pages(tmp_path: Path) -> None:
    mf = MappedFile(str(tmp_path / "00000000000000000000"), 64 * 1024)
    mf.append(b"x" * 5000)
    assert mf.flush(4) == 0  # one page dirty: not enough
    mf.append(b"y" * 12_000)
    assert mf.flush(4) == 17_000
    mf.append(b"z")
    assert mf.flush(0) == 17_001
    mf.close()


def test_zero_from_clears_tail(tmp_path: Path) -> None:
    mf = MappedFile(str(tmp_path / "00000000000000000000"), 1 << 20)
    mf.mm[0:10] = b"A" * 10
    mf.mm[500_000:500_010] = b"B" * 10
    mf.zero_from(5)
    assert mf.mm[0:5] == b"AAAAA" and mf.mm[5:10] == bytes(5)
    assert mf.mm[500_000:500_010] == bytes(10)
    mf.close()


def test_reopen_rejects_bigger_file(tmp_path: Path) -> None:
    p = tmp_path / "00000000000000000000"
    p.write_bytes(b"x" * 5000)
    with pytest.raises(ValueError):
        MappedFile(str(p), 4096)


# ------------------------------------------------------------------------------------ MappedFileQueue


def _fill(q: MappedFileQueue, n_bytes: int, chunk: int = 1000) -> None:
    for _ in range(n_bytes // chunk):
        mf = q.last_for_write()
        if mf.remaining < chunk:
            mf.wrote_position = mf.file_size
            mf = q.last_for_write()
        assert mf.append(b"r" * chunk)


def test_queue_rolls_and_finds(tmp_path: Path) -> None:
    q = MappedFileQueue(str(tmp_path / "q"), 4096)
    _fill(q, 10_000)
    names = [mf.file_name for mf in q.mapped_files]
    assert names == ["00000000000000000000", "00000000000000004096", "00000000000000008192"]
    assert q.find_by_offset(4095) is q.mapped_files[0]
    assert q.find_by_offset(4096) is q.mapped_files[1]
    assert q.find_by_offset(9000) is q.mapped_files[2]
    assert q.find_by_offset(20_000) is None
    assert q.find_by_offset(20_000, True) is q.mapped_files[0]
    assert q.get_min_offset() == 0 and q.get_max_offset() == 8192 + 2000
    assert q.roll_next_file(5000) == 8192
    q.flush_all()
    assert q.flushed_where == q.get_max_offset()
    q.close()


def test_queue_load_checks_sizes(tmp_path: Path) -> None:
    d = tmp_path / "q"
    q = MappedFileQueue(str(d), 4096)
    _fill(q, 6000)
    q.close()
    again = MappedFileQueue(str(d), 4096)
    assert again.load()
    assert [mf.wrote_position for mf in again.mapped_files] == [4096, 4096]  # recovery sets the real end
    again.close()
    assert not MappedFileQueue(str(d), 8192).load()


def test_truncate_dirty_files(tmp_path: Path) -> None:
    q = MappedFileQueue(str(tmp_path / "q"), 4096)
    _fill(q, 10_000)
    q.truncate_dirty_files(5000)
    assert [mf.file_name for mf in q.mapped_files] == ["00000000000000000000", "00000000000000004096"]
    last = q.mapped_files[-1]
    assert last.wrote_position == 5000 - 4096
    assert last.mm[904:1000] == bytes(96)
    assert not os.path.exists(tmp_path / "q" / "00000000000000008192")
    q.close()


def test_delete_expired_by_time(tmp_path: Path, clock: Any) -> None:
    q = MappedFileQueue(str(tmp_path / "q"), 4096, clock=clock)
    _fill(q, 10_000)
    for mf in q.mapped_files:
        mf.last_modified_ms = clock()
    assert q.delete_expired_by_time(3_600_000, 0, 1000, False) == 0
    clock.advance(3_600_000)
    assert q.delete_expired_by_time(3_600_000, 0, 1000, False) == 2  # never the last file
    assert [mf.file_name for mf in q.mapped_files] == ["00000000000000008192"]
    assert q.get_min_offset() == 8192
    q.close()


def test_delete_expired_by_time_stops_at_young_file(tmp_path: Path, clock: Any) -> None:
    q = MappedFileQueue(str(tmp_path / "q"), 4096, clock=clock)
    _fill(q, 13_000)
    files = q.mapped_files
    files[0].last_modified_ms = clock() - 10_000
    files[1].last_modified_ms = clock()
    files[2].last_modified_ms = clock() - 10_000
    assert q.delete_expired_by_time(5000, 0, 1000, False) == 1
    assert q.delete_expired_by_time(5000, 0, 1000, True) == 2  # clean at once: age ignored
    assert len(q.mapped_files) == 1
    q.close()
