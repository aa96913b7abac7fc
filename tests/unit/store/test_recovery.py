"""Restart and crash recovery: clean restarts, torn tails, damaged consume queues and index, locking."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import pytest

from rocketq.protocol.message import decode_record
from rocketq.store import GetMessageStatus, MessageStore, StoreConfig, StoreLockedError, StoreMessage
from rocketq.store.consume_queue import CQ_UNIT

MsgFactory = Callable[..., StoreMessage]
StoreFactory = Callable[..., MessageStore]


def _put_n(store: MessageStore, msg: MsgFactory, n: int, start: int = 0, size: int = 300) -> list[int]:
    offsets = []
    for i in range(start, start + n):
        r = store.put_message(
            msg(body=bytes([i % 256]) * size, queue_id=i % 2, properties={"UNIQ_KEY": f"U{i}", "KEYS": f"k{i}"})
        )
        assert r.is_ok and r.append_result is not None
        offsets.append(r.append_result.wrote_offset)
    return offsets


def _check_all(store: MessageStore, n: int, size: int = 300) -> None:
    """Every message 0..n-1 readable through its queue and its key, and nothing more."""
    seen: dict[int, bytes] = {}
    for qid in (0, 1):
        got = store.get_message("T", qid, 0, 1000)
        offset = 0
        while got.status is GetMessageStatus.FOUND:
            for v in got.message_views:
                rec = decode_record(v)
                seen[int(rec.properties["UNIQ_KEY"][1:])] = rec.body
            offset = got.next_begin_offset
            got.release()
            got = store.get_message("T", qid, offset, 1000)
        assert offset == store.get_max_offset_in_queue("T", qid)
    assert sorted(seen) == list(range(n))
    for i, body in seen.items():
        assert body == bytes([i % 256]) * size
    for i in (0, n // 2, n - 1):
        found = store.query_message("T", f"U{i}", 32, 0, 2**62)
        assert [m.body for m in found] == [bytes([i % 256]) * size]
        assert [m.properties["UNIQ_KEY"] for m in store.query_message("T", f"k{i}", 32, 0, 2**62)] == [f"U{i}"]


def test_abort_marker_and_lock(open_store: StoreFactory, store_config: Callable[..., StoreConfig]) -> None:
    cfg = store_config()
    store = open_store(cfg)
    assert os.path.exists(cfg.abort_path)
    with pytest.raises(StoreLockedError):
        MessageStore(cfg).load()
    store.shutdown()
    assert not os.path.exists(cfg.abort_path)
    again = open_store(cfg)
    assert os.path.exists(cfg.abort_path)
    again.shutdown()


def test_clean_restart(open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory) -> None:
    cfg = store_config()
    store = open_store(cfg)
    _put_n(store, msg, 40)
    max_phy = store.get_max_phy_offset()
    store.shutdown()
    store = open_store(cfg)
    assert store.get_max_phy_offset() == max_phy
    _check_all(store, 40)
    r = store.put_message(msg(queue_id=0))
    assert r.append_result is not None and r.append_result.logics_offset == 20
    assert r.append_result.wrote_offset >= max_phy


def test_crash_restart_rebuilds_from_log(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config()
    store = open_store(cfg)
    _put_n(store, msg, 40)
    store.abandon()
    # the consume queues and the index are derived data: lose them entirely
    for cq in store.cq_table:
        for mf in cq.mfq.mapped_files:
            os.unlink(mf.path)
    for f in os.listdir(cfg.index_dir):
        os.unlink(os.path.join(cfg.index_dir, f))
    store = open_store(cfg)
    _check_all(store, 40)


def test_torn_tail_is_truncated_and_zeroed(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config()
    store = open_store(cfg)
    offsets = _put_n(store, msg, 10)
    end = store.get_max_phy_offset()
    mf = store.commit_log.mfq.last()
    assert mf is not None
    path, last_start = mf.path, offsets[-1]
    store.abandon()
    # damage the body of the last record (as a torn write would) and leave junk after it
    with open(path, "r+b") as f:
        f.seek(last_start % 4096 + 200)
        f.write(b"\xff" * 20)
        f.seek(end % 4096)
        f.write(b"junk" * 10)
    store = open_store(cfg)
    assert store.get_max_phy_offset() == last_start
    _check_all(store, 9)
    with open(path, "rb") as f:
        f.seek(last_start % 4096)
        assert f.read(4096 - last_start % 4096) == bytes(4096 - last_start % 4096)
    r = store.put_message(msg(queue_id=9 % 2))
    assert r.append_result is not None and r.append_result.wrote_offset == last_start
    assert r.append_result.logics_offset == 4  # the lost message's queue offset is reused


def test_record_without_totalsize_is_not_visible(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    """A kill between writing a record's bytes and its TOTALSIZE leaves an invisible record."""
    cfg = store_config()
    store = open_store(cfg)
    offsets = _put_n(store, msg, 6)
    mf = store.commit_log.mfq.last()
    assert mf is not None
    mf.mm[offsets[-1] % 4096 : offsets[-1] % 4096 + 4] = bytes(4)
    store.abandon()
    store = open_store(cfg)
    assert store.get_max_phy_offset() == offsets[-1]
    _check_all(store, 5)


def test_consume_queue_pointing_past_the_log_is_truncated(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config()
    store = open_store(cfg)
    offsets = _put_n(store, msg, 12)
    cl_last = store.commit_log.mfq.last()
    assert cl_last is not None
    # the last two records vanish from the commit log (lost pages), but the queues and index have them
    start = offsets[-2] - cl_last.file_from_offset
    cl_last.mm[start:] = bytes(4096 - start)
    store.abandon()
    store = open_store(cfg)
    assert store.get_max_phy_offset() == offsets[-2]
    _check_all(store, 10)
    assert store.get_max_offset_in_queue("T", 0) == 5 and store.get_max_offset_in_queue("T", 1) == 5


def test_garbled_consume_queue_tail_is_rebuilt(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config()
    store = open_store(cfg)
    _put_n(store, msg, 30)
    cq = store.cq_table.find("T", 0)
    assert cq is not None
    last = cq.mfq.last()
    assert last is not None
    last.mm[0 : last.wrote_position] = bytes(last.wrote_position)  # zero the newest units of queue 0
    store.abandon()
    store = open_store(cfg)
    _check_all(store, 30)


def test_consume_queue_with_a_hole_is_refilled(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cfg = store_config()
    store = open_store(cfg)
    _put_n(store, msg, 10)
    clock.advance(60_000)
    _put_n(store, msg, 10, start=10)
    # a checkpoint saying everything up to message 19 was flushed: recovery starts late (last file only)
    cp = store.checkpoint
    assert cp is not None
    cp.physic_msg_timestamp = cp.logics_msg_timestamp = cp.index_msg_timestamp = clock() + 10_000
    cp.flush()
    cq = store.cq_table.find("T", 1)
    assert cq is not None
    mf = cq.mfq.mapped_files[0]
    mf.mm[40:200] = bytes(160)  # queue 1 lost everything from its third unit
    store.abandon()
    with caplog.at_level(logging.WARNING, logger="rocketq.store"):
        store = open_store(cfg)
    assert "recovery.refill" in caplog.text and "recovery.abnormal from=0 " not in caplog.text
    _check_all(store, 20)


def test_index_entries_past_the_log_are_dropped(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config()
    store = open_store(cfg)
    offsets = _put_n(store, msg, 8)
    cl_last = store.commit_log.mfq.last()
    assert cl_last is not None
    start = offsets[-1] - cl_last.file_from_offset
    cl_last.mm[start:] = bytes(4096 - start)
    store.abandon()
    store = open_store(cfg)
    assert store.query_message("T", "U7", 32, 0, 2**62) == []
    assert store.index is not None and store.index.last_indexed_phys == offsets[-2]
    r = store.put_message(msg(properties={"UNIQ_KEY": "U7"}))
    assert r.append_result is not None and r.append_result.wrote_offset == offsets[-1]
    assert [m.commit_log_offset for m in store.query_message("T", "U7", 32, 0, 2**62)] == [offsets[-1]]


def test_torn_index_entry_and_slot(tmp_path: Any) -> None:
    from rocketq.store.index_file import IndexFile

    f = IndexFile(str(tmp_path / "idx"), 4, 16)
    for i in range(5):
        f.put_key(i % 2, 100 * (i + 1), 1000)
    # a crash after the entry and the slot of a sixth key, before the header: entry 6 and slot 0 -> 6
    base = 40 + 16
    import struct

    struct.pack_into(">iqii", f.mf.mm, base + 6 * 20, 0, 600, 0, 5)
    struct.pack_into(">i", f.mf.mm, 40, 6)
    out: list[int] = []
    f.select_phy_offsets(0, 10, 0, 10**6, out)
    assert out == [500, 300, 100]  # the dangling slot falls back along the chain
    f.truncate(10**9)  # nothing valid is past the end, but the torn entry goes
    assert f.mf.mm[base + 6 * 20 : base + 7 * 20] == bytes(20)
    assert struct.unpack_from(">i", f.mf.mm, 40)[0] == 5
    f.truncate(300)  # entries for messages at 300 and later go; slots fall back
    out = []
    f.select_phy_offsets(0, 10, 0, 10**6, out)
    assert out == [100]
    out = []
    f.select_phy_offsets(1, 10, 0, 10**6, out)
    assert out == [200]
    assert f.index_count == 3 and f.end_phy_offset == 200
    f.close()


def test_truncated_consume_queue_units_binary_search(tmp_path: Any) -> None:
    from rocketq.store.consume_queue import ConsumeQueue

    cq = ConsumeQueue("T", 0, str(tmp_path), 200)
    for i in range(25):
        cq.put(100 * i, 50, 0, i)
    cq.truncate_dirty(1250)  # units 13.. point at or past 1250
    assert cq.max_offset_in_queue == 13 and cq.max_physic_offset == 1250
    assert len(cq.mfq.mapped_files) == 2
    cq.truncate_dirty(0)
    assert cq.max_offset_in_queue == 0 and len(cq.mfq.mapped_files) == 1
    cq.close()


def test_consume_queue_recover_finds_end(tmp_path: Any) -> None:
    from rocketq.store.consume_queue import ConsumeQueue

    cq = ConsumeQueue("T", 0, str(tmp_path), 200)
    for i in range(23):
        cq.put(100 * i, 50, 7, i)
    cq.close()
    again = ConsumeQueue("T", 0, str(tmp_path), 200)
    assert again.load()
    again.recover()
    assert again.max_offset_in_queue == 23 and again.max_physic_offset == 2250
    assert again.get_unit(22) == (2200, 50, 7)
    last = again.mfq.last()
    assert last is not None and CQ_UNIT.unpack_from(last.mm, 60) == (0, 0, 0)
    again.close()


def test_all_commit_log_files_gone_drops_logics(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config()
    store = open_store(cfg)
    _put_n(store, msg, 5)
    store.shutdown()
    for name in os.listdir(cfg.commit_log_dir):
        os.unlink(os.path.join(cfg.commit_log_dir, name))
    store = open_store(cfg)
    assert store.get_max_offset_in_queue("T", 0) == 0
    assert store.query_message("T", "U1", 32, 0, 2**62) == []
    r = store.put_message(msg())
    assert r.append_result is not None and r.append_result.logics_offset == 0


def test_wrong_file_size_fails_load(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config()
    store = open_store(cfg)
    _put_n(store, msg, 3)
    store.shutdown()
    other = MessageStore(store_config(mapped_file_size_commit_log=8192))
    assert not other.load()
    other.shutdown()
    store = open_store(cfg)  # the directory lock was released by the failed load
    _check_all(store, 3)


def test_clean_restart_validates_past_the_queues(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    from rocketq.protocol.message import SYSFLAG_TX_PREPARED

    cfg = store_config()
    store = open_store(cfg)
    _put_n(store, msg, 5)
    half = store.put_message(msg(body=b"half", sys_flag=SYSFLAG_TX_PREPARED, properties={"UNIQ_KEY": "H"}))
    assert half.append_result is not None
    end = store.get_max_phy_offset()
    store.shutdown()
    store = open_store(cfg)
    assert store.get_max_phy_offset() == end  # the prepared record after the last queued one is kept
    rec = store.look_message_by_offset(half.append_result.wrote_offset)
    assert rec is not None and rec.body == b"half"
    assert [m.body for m in store.query_message("T", "H", 4, 0, 2**62)] == [b"half"]
    _check_all(store, 5)


def test_clean_restart_with_junk_after_the_end(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cfg = store_config()
    store = open_store(cfg)
    _put_n(store, msg, 5)
    end = store.get_max_phy_offset()
    path = store.commit_log.mfq.mapped_files[-1].path
    store.shutdown()
    with open(path, "r+b") as f:
        f.seek(end % 4096)
        f.write(b"\x00\x00\x01\x00junkjunk")
    with caplog.at_level(logging.WARNING, logger="rocketq.store"):
        store = open_store(cfg)
    assert "untrusted_queue_end" in caplog.text
    assert store.get_max_phy_offset() == end
    _check_all(store, 5)
    with open(path, "rb") as f:
        f.seek(end % 4096)
        assert f.read(12) == bytes(12)


def test_index_file_created_just_before_a_crash(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config()
    store = open_store(cfg)
    _put_n(store, msg, 6)
    store.abandon()
    # a crash right after the file got its name and size, before its header was written
    with open(os.path.join(cfg.index_dir, "99991231235959999"), "wb") as f:
        f.truncate(40 + 64 * 4 + 128 * 20)
    with open(os.path.join(cfg.index_dir, "99991231235959998.tmp"), "wb"):
        pass
    store = open_store(cfg)
    assert store.index is not None
    last = store.index.files[-1]
    assert last.file_name == "99991231235959999" and last.end_phy_offset == store.index.files[-2].end_phy_offset
    assert not os.path.exists(os.path.join(cfg.index_dir, "99991231235959998.tmp"))
    _check_all(store, 6)
    _put_n(store, msg, 2, start=6)
    _check_all(store, 8)
    assert [m.properties["UNIQ_KEY"] for m in store.query_message("T", "U7", 32, 0, 2**62)] == ["U7"]
