"""A replica's store (``MessageStore.append_replica``): the master's raw bytes, offered as the HA master sends
them (ranges that never cross a file and may split a message), give a byte-identical commit log, the same
consume-queue units and index files, and the same queue-offset table; the reput waits at a split message."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.unit.store.test_dispatch import _fill, _index_bytes, _units

from rocketq.store import MessageStore, StoreConfig, StoreMessage
from rocketq.store.replica import ReplicaOffsetError

StoreFactory = Callable[..., MessageStore]


def _stream(master: MessageStore, replica: MessageStore, start: int, batch: int) -> int:
    """Copy the master's bytes from ``start`` in ranges of at most ``batch`` (within a file, as HA does)."""
    offset = start
    for _ in range(100_000):
        res = master.get_commit_log_data(offset)
        if res is None:
            return offset
        try:
            body = bytes(res.view[:batch])
        finally:
            res.release()
        replica.append_replica(offset, body)
        offset += len(body)
    raise AssertionError("the stream did not end")


def _files(d: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(Path(d).iterdir())}


def _cq_files(cfg: StoreConfig) -> dict[str, bytes]:
    root = Path(cfg.consume_queue_dir)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("batch", [777, 32 * 1024])
def test_a_replica_fed_the_masters_bytes_is_byte_identical(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], clock: Any, tmp_path: Path, batch: int
) -> None:
    master_cfg = store_config(store_path_root_dir=str(tmp_path / "master"))
    replica_cfg = store_config(store_path_root_dir=str(tmp_path / "replica"))
    master, replica = open_store(master_cfg), open_store(replica_cfg)
    _fill(master, clock)
    assert master.get_max_phy_offset() > 3 * 4096
    end = _stream(master, replica, 0, batch)
    assert end == master.get_max_phy_offset() == replica.get_max_phy_offset()
    assert _units(replica) == _units(master)
    assert replica.commit_log.topic_queue_table == master.commit_log.topic_queue_table
    hits = replica.query_message("A", "shared", 32, 0, 2**62)
    assert [m.body for m in hits] == [m.body for m in master.query_message("A", "shared", 32, 0, 2**62)] != []
    master.shutdown()
    replica.shutdown()
    assert _files(replica_cfg.commit_log_dir) == _files(master_cfg.commit_log_dir)
    assert _cq_files(replica_cfg) == _cq_files(master_cfg) != {}
    assert _index_bytes(replica_cfg) == _index_bytes(master_cfg) != []


def test_a_split_message_is_dispatched_when_its_rest_arrives(
    open_store: StoreFactory, tmp_path: Path, store_config: Callable[..., StoreConfig]
) -> None:
    master = open_store(store_config(store_path_root_dir=str(tmp_path / "m")))
    replica = open_store(store_config(store_path_root_dir=str(tmp_path / "r")))
    r = master.put_message(StoreMessage(topic="T", queue_id=0, body=b"x" * 200, properties={"KEYS": "k"}))
    assert r.append_result is not None
    size = r.append_result.wrote_bytes
    res = master.get_commit_log_data(0)
    assert res is not None
    data = bytes(res.view)
    res.release()
    assert replica.append_replica(0, data[:100]) == 0
    assert replica.get_max_phy_offset() == 100
    assert replica.get_max_offset_in_queue("T", 0) == 0  # not visible before its last byte
    assert replica.append_replica(100, data[100:size]) == 1
    assert replica.get_max_offset_in_queue("T", 0) == 1
    got = replica.get_message("T", 0, 0, 1)
    try:
        assert got.message_count == 1
    finally:
        got.release()


def test_bytes_at_another_offset_than_the_end_are_refused(open_store: StoreFactory) -> None:
    replica = open_store()
    with pytest.raises(ReplicaOffsetError):  # not a file start: the offsets inside the file would be lost
        replica.append_replica(4096 * 3 + 100, b"abc")
    assert replica.get_max_phy_offset() == 0
    replica.append_replica(4096 * 3, b"")  # an empty replica starts where the master's stream does
    assert replica.get_max_phy_offset() == 4096 * 3
    with pytest.raises(ReplicaOffsetError):
        replica.append_replica(4096 * 3 + 8, b"abc")
    assert replica.get_max_phy_offset() == 4096 * 3


def test_a_reopened_replica_resumes_at_its_own_end(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], clock: Any, tmp_path: Path
) -> None:
    master_cfg = store_config(store_path_root_dir=str(tmp_path / "master"))
    replica_cfg = store_config(store_path_root_dir=str(tmp_path / "replica"))
    master, replica = open_store(master_cfg), open_store(replica_cfg)
    _fill(master, clock)
    half = master.get_max_phy_offset() // 2
    offset = 0
    while offset < half:  # stop in the middle of some message
        res = master.get_commit_log_data(offset)
        assert res is not None
        body = bytes(res.view[: min(500, half - offset)])
        res.release()
        replica.append_replica(offset, body)
        offset += len(body)
    replica.shutdown()
    replica = open_store(replica_cfg)  # recovery drops the torn tail: the replica asks again from its end
    resume = replica.get_max_phy_offset()
    assert 0 < resume <= half
    assert _stream(master, replica, resume, 1000) == master.get_max_phy_offset()
    assert _units(replica) == _units(master)
    master.shutdown()
    replica.shutdown()
    assert _files(replica_cfg.commit_log_dir) == _files(master_cfg.commit_log_dir)


def test_a_promoted_replica_drops_a_split_message_and_appends_after_the_last_whole_one(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], tmp_path: Path
) -> None:
    master = open_store(store_config(store_path_root_dir=str(tmp_path / "m")))
    replica_cfg = store_config(store_path_root_dir=str(tmp_path / "r"))
    replica = open_store(replica_cfg)
    for i in range(3):
        assert master.put_message(StoreMessage(topic="T", queue_id=0, body=b"%d" % i * 100)).is_ok
    res = master.get_commit_log_data(0)
    assert res is not None
    data = bytes(res.view)
    res.release()
    cut = len(data) - 40  # the third message arrives in part
    replica.append_replica(0, data[:cut])
    assert replica.get_max_offset_in_queue("T", 0) == 2
    third = master.get_commit_log_offset_in_queue("T", 0, 2)
    assert 0 < third < cut
    assert replica.drop_replica_tail() == cut - third
    assert replica.get_max_phy_offset() == third
    assert replica.drop_replica_tail() == 0
    put = replica.put_message(StoreMessage(topic="T", queue_id=0, body=b"local"))
    assert put.append_result is not None and put.append_result.wrote_offset == third
    assert put.append_result.logics_offset == 2  # the queue goes on where the replicated messages ended
    replica.shutdown()
    replica = open_store(replica_cfg)  # and the log recovers whole
    assert replica.get_max_offset_in_queue("T", 0) == 3
    rec = replica.look_message_by_offset(third)
    assert rec is not None and rec.body == b"local"
