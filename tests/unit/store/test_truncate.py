"""``MessageStore.truncate_to``: a replica whose log runs past a point (an old master's divergent tail) is cut
there and then holds what a replica that never had the tail holds: commit log, consume queues, queue-offset
table, index answers; both then append the same bytes and stay identical."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.unit.store.test_dispatch import _fill, _index_bytes, _units
from tests.unit.store.test_replica_append import _cq_files, _files, _stream

from rocketq.store import MessageStore, StoreConfig

StoreFactory = Callable[..., MessageStore]


def _copy(master: MessageStore, replica: MessageStore, start: int, stop: int) -> None:
    offset = start
    while offset < stop:
        res = master.get_commit_log_data(offset)
        assert res is not None
        body = bytes(res.view[: min(700, stop - offset)])
        res.release()
        replica.append_replica(offset, body)
        offset += len(body)


def test_a_cut_replica_equals_one_that_never_had_the_tail(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], clock: Any, tmp_path: Path
) -> None:
    master = open_store(store_config(store_path_root_dir=str(tmp_path / "m")))
    _fill(master, clock)
    units = _units(master)[("A", 0)]
    cut_unit = units[len(units) // 2]
    assert cut_unit is not None
    point = cut_unit[0]  # the start of a message in the middle of the log (several files before the end)
    assert 4096 < point < master.get_max_phy_offset() - 4096
    full_cfg = store_config(store_path_root_dir=str(tmp_path / "full"))
    short_cfg = store_config(store_path_root_dir=str(tmp_path / "short"))
    full, short = open_store(full_cfg), open_store(short_cfg)
    _stream(master, full, 0, 1000)
    _copy(master, short, 0, point)
    assert full.get_max_offset_in_queue("A", 0) == len(units)

    assert full.truncate_to(point) == master.get_max_phy_offset() - point
    assert full.truncate_to(point) == 0  # nothing past the point any more
    assert full.get_max_phy_offset() == short.get_max_phy_offset() == point
    assert _units(full) == _units(short)
    assert full.get_max_offset_in_queue("A", 0) == len(units) // 2
    assert full.commit_log.topic_queue_table == short.commit_log.topic_queue_table
    keyed = [m.body for m in short.query_message("A", "shared", 64, 0, 2**62)]
    assert [m.body for m in full.query_message("A", "shared", 64, 0, 2**62)] == keyed != []

    # both follow the master again from the point and end identical to it
    _copy(master, full, point, master.get_max_phy_offset())
    _copy(master, short, point, master.get_max_phy_offset())
    assert _units(full) == _units(short) == _units(master)
    for store in (master, full, short):
        store.shutdown()
    assert _files(full_cfg.commit_log_dir) == _files(short_cfg.commit_log_dir)
    assert _cq_files(full_cfg) == _cq_files(short_cfg)
    assert _index_bytes(full_cfg) == _index_bytes(short_cfg)  # the header's hash-slot count included
