"""The epoch file (format, CRC, .bak) and the truncation point of a divergent tail."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from rocketq.replication.controller.epoch import (
    OPEN_END,
    EpochCache,
    EpochEntry,
    EpochFile,
    EpochFileError,
    decode_epoch_file,
    encode_epoch_file,
    epoch_cache_body,
    truncation_offset,
)


def cache(*pairs: tuple[int, int]) -> EpochCache:
    c = EpochCache()
    for epoch, start in pairs:
        assert c.append(epoch, start)
    return c


def test_entries_end_where_the_next_starts_and_only_grow() -> None:
    c = cache((1, 0), (2, 100), (4, 100))
    assert [(e.epoch, e.start_offset, e.end_offset) for e in c.entries] == [
        (1, 0, 100),
        (2, 100, 100),
        (4, 100, OPEN_END),
    ]
    assert not c.append(4, 200) and not c.append(3, 300) and not c.append(5, 50)
    assert c.last_epoch == 4


def test_the_old_master_is_cut_where_the_new_master_took_over() -> None:
    # A led epoch 1 and wrote to 150; B had 120 of it, was elected at epoch 2 and wrote on to 200.
    assert truncation_offset(cache((1, 0)), 150, cache((1, 0), (2, 120)), 200) == 120


def test_a_slave_behind_on_the_same_history_keeps_everything() -> None:
    assert truncation_offset(cache((1, 0), (2, 120)), 130, cache((1, 0), (2, 120)), 200) == 130


def test_an_epoch_the_master_never_had_is_skipped() -> None:
    # A led epoch 2 from 100 (nobody else saw it); B led epoch 3 from 100: they agree on epoch 1 up to 100.
    assert truncation_offset(cache((1, 0), (2, 100)), 180, cache((1, 0), (3, 100)), 300) == 100


def test_the_same_epoch_at_another_start_offset_is_not_agreement() -> None:
    assert truncation_offset(cache((1, 0), (2, 90)), 180, cache((1, 0), (2, 100)), 300) == 90


def test_the_smaller_end_wins_on_the_newest_shared_epoch() -> None:
    assert truncation_offset(cache((1, 0), (2, 100)), 500, cache((1, 0), (2, 100)), 300) == 300


def test_no_shared_epoch_is_no_point_and_an_empty_slave_starts_at_zero() -> None:
    assert truncation_offset(cache((2, 0)), 50, cache((1, 0), (3, 10)), 90) is None
    assert truncation_offset(EpochCache(), 0, cache((1, 0)), 90) == 0


def test_truncate_suffix_and_prefix() -> None:
    c = cache((1, 0), (2, 100), (3, 200))
    c.truncate_suffix(150)
    assert [(e.epoch, e.end_offset) for e in c.entries] == [(1, 100), (2, 150)]
    c = cache((1, 0), (2, 100), (3, 200))
    c.truncate_suffix(100)  # an epoch starting exactly at the cut is gone
    assert [(e.epoch, e.end_offset) for e in c.entries] == [(1, 100)]
    c = cache((1, 0), (2, 100), (3, 200))
    c.truncate_prefix(150)
    assert [e.epoch for e in c.entries] == [2, 3]


def test_file_format_is_count_crc_then_lines() -> None:
    text = encode_epoch_file([EpochEntry(1, 0), EpochEntry(2, 4096)])
    lines = "1-0\n2-4096\n"
    assert text == f"2\n{zlib.crc32(lines.encode()) & 0x7FFFFFFF}\n{lines}"
    assert [(e.epoch, e.start_offset) for e in decode_epoch_file(text)] == [(1, 0), (2, 4096)]
    assert [e.epoch for e in decode_epoch_file("1\n0\n7-9\n")] == [7]  # CRC 0: not checked


@pytest.mark.parametrize("bad", ["", "1\n", "x\n0\n", "2\n0\n1-0\n", "1\n0\n10\n", "1\n0\na-b\n", "1\n123\n1-0\n"])
def test_bad_files_are_refused(bad: str) -> None:
    with pytest.raises(EpochFileError):
        decode_epoch_file(bad)


def test_the_file_is_saved_with_a_backup_read_when_the_main_copy_is_damaged(tmp_path: Path) -> None:
    f = EpochFile(tmp_path)
    assert f.load().entries == []
    f.save(cache((1, 0), (2, 77)))
    assert f.backup.read_text() == f.path.read_text()
    f.path.write_text("2\n1\n1-0\n2-77\n")  # wrong CRC
    assert [(e.epoch, e.start_offset) for e in f.load().entries] == [(1, 0), (2, 77)]
    f.backup.write_text("garbage")
    with pytest.raises(EpochFileError):
        f.load()
    with pytest.raises(EpochFileError):
        EpochCache([EpochEntry(2, 0), EpochEntry(1, 5)])


def test_epoch_cache_body_ends_the_last_epoch_at_the_max_offset() -> None:
    c = cache((1, 0), (3, 500))
    body = json.loads(epoch_cache_body("C", "broker-a", 2, c, 900))
    assert body == {
        "clusterName": "C", "brokerName": "broker-a", "brokerId": 2, "maxOffset": 900,
        "epochList": [
            {"epoch": 1, "startOffset": 0, "endOffset": 500},
            {"epoch": 3, "startOffset": 500, "endOffset": 900},
        ],
    }  # fmt: skip
    assert c.entries[-1].end_offset == OPEN_END  # the cache itself is left alone
