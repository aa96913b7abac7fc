"""The two doors of ``Dispatcher`` build the same data: what the master dispatches as it appends (single puts,
runs, batches) is what a replay of its commit log builds — recovery's today, a slave's reput of replicated
bytes next — consume-queue units and index files byte for byte, and the arrivals a replay reports are the
ones the master's listener heard."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rocketq.protocol.message import (
    SYSFLAG_TX_COMMIT,
    SYSFLAG_TX_PREPARED,
    SYSFLAG_TX_ROLLBACK,
    BatchItem,
    encode_properties,
)
from rocketq.store import SCHEDULE_TOPIC, MessageStore, StoreBatch, StoreConfig, StoreMessage
from rocketq.store.dispatcher import Dispatcher
from rocketq.store.mapped_file import MappedFile
from rocketq.store.message import PlainMessage
from rocketq.store.record import RecordInfo

StoreFactory = Callable[..., MessageStore]
STORE_HOST = ("10.0.0.2", 10911)
Arrival = tuple[str, int, int, int, int]


def _plain(topic: str, queue_id: int, i: int, **props: str) -> PlainMessage:
    p = {"UNIQ_KEY": f"P{i}", **props, "CLUSTER": "C"}
    return (
        topic, queue_id, b"p%d" % i * 20, encode_properties(p).encode(), 0, 0, 1000 + i,
        ("::1", 7000) if i % 3 == 0 else ("10.0.0.1", 5000), 0, p.get("TAGS"), p["UNIQ_KEY"], p.get("KEYS"),
    )  # fmt: skip


def _fill(store: MessageStore, clock: Any) -> None:
    """Every way the master appends, with tags, keys, delays and transactions, over several files."""

    def single(i: int, **kw: Any) -> None:
        props = {"UNIQ_KEY": f"S{i}", **kw.pop("properties", {})}
        msg = StoreMessage(
            topic=kw.pop("topic", "A"), body=b"s%d" % i * 30, properties=props, born_host=("10.0.0.1", 5000),
            store_host=STORE_HOST, **kw,
        )  # fmt: skip
        assert store.put_message(msg).is_ok

    for i in range(30):
        clock.advance(7)
        if i % 5 == 0:
            single(i, queue_id=i % 2, properties={"TAGS": f"t{i % 3}", "KEYS": f"k{i} shared"})
        elif i % 5 == 1:
            single(i, topic="Real", queue_id=1, properties={"DELAY": str(1 + i % 4), "TAGS": "late"})
        elif i % 5 == 2:
            half = store.put_message(
                StoreMessage(topic="A", body=b"half", sys_flag=SYSFLAG_TX_PREPARED, properties={"UNIQ_KEY": f"H{i}"})
            )
            assert half.append_result is not None
            end = SYSFLAG_TX_COMMIT if i % 2 else SYSFLAG_TX_ROLLBACK
            single(i, sys_flag=end, prepared_transaction_offset=half.append_result.wrote_offset)
        elif i % 5 == 3:
            run = [_plain("A" if j % 2 else "B", j % 3, i * 10 + j, TAGS="r", KEYS=f"rk{j}") for j in range(4)]
            assert all(isinstance(r, tuple) for r in store.put_plain_messages(run, STORE_HOST))
        else:
            items = [BatchItem(0, b"b%d" % j * 25, {"UNIQ_KEY": f"B{i}.{j}", "TAGS": "bt", "KEYS": "bk"})
                     for j in range(3)]  # fmt: skip
            batch = StoreBatch(topic="B", items=items, queue_id=2, born_host=("10.0.0.1", 5000), store_host=STORE_HOST)
            assert store.put_messages(batch).is_ok


def _units(store: MessageStore) -> dict[tuple[str, int], list[tuple[int, int, int] | None]]:
    return {
        (cq.topic, cq.queue_id): [cq.get_unit(i) for i in range(cq.max_offset_in_queue)] for cq in store.cq_table
    }


def _index_bytes(config: StoreConfig) -> list[bytes]:
    return [p.read_bytes() for p in sorted(Path(config.index_dir).iterdir())]


def test_a_replay_of_the_commit_log_builds_what_the_master_dispatched(
    open_store: StoreFactory,
    store_config: Callable[..., StoreConfig],
    clock: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    master_cfg = store_config(store_path_root_dir=str(tmp_path / "master"))
    master = open_store(master_cfg)
    heard: list[Arrival] = []
    master.arrival_listener = lambda topic, qid, next_offset, tags, ts, props: heard.append(
        (topic, qid, next_offset, tags, ts)
    )
    _fill(master, clock)
    assert master.get_max_phy_offset() > 3 * 4096  # several commit-log files
    assert master.get_max_offset_in_queue(SCHEDULE_TOPIC, 1) > 0
    master.shutdown()

    # a second store with the master's commit log only: loading it replays every record through dispatch_record
    replica_cfg = store_config(store_path_root_dir=str(tmp_path / "replica"))
    shutil.copytree(master_cfg.commit_log_dir, replica_cfg.commit_log_dir)
    replayed: list[Arrival] = []
    dispatch_record = Dispatcher.dispatch_record

    def recording(self: Dispatcher, info: RecordInfo, mf: MappedFile) -> int | None:
        tags = dispatch_record(self, info, mf)
        if tags is not None:
            arrival = (self.topic_of(info.topic), info.queue_id, info.queue_offset + 1, tags, info.store_timestamp)
            replayed.append(arrival)
        return tags

    monkeypatch.setattr(Dispatcher, "dispatch_record", recording)
    replica = open_store(replica_cfg)
    replica.shutdown()  # writes the pending index entries
    monkeypatch.undo()

    assert len(heard) > 50 and {a[0] for a in heard} == {"A", "B", SCHEDULE_TOPIC}
    assert replayed == heard
    master, replica = open_store(master_cfg), open_store(replica_cfg)
    assert _units(replica) == _units(master)
    assert _index_bytes(replica_cfg) == _index_bytes(master_cfg) != []
    assert [m.body for m in replica.query_message("A", "shared", 32, 0, 2**62)] != []


def test_a_record_already_dispatched_is_not_dispatched_again(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], clock: Any
) -> None:
    store = open_store()
    _fill(store, clock)
    units = _units(store)
    store.write_pending_index()
    indexed = _index_bytes(store.config)
    again: list[int | None] = []
    store.commit_log.scan(0, True, lambda info, mf: again.append(store.dispatcher.dispatch_record(info, mf)))
    assert again and set(again) == {None}  # nothing written: every unit is there already
    assert _units(store) == units
    store.write_pending_index()
    assert _index_bytes(store.config) == indexed
