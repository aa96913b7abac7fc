"""``put_plain_messages``: a run of plain messages is stored exactly as ``put_message`` stores each on its own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rocketq.protocol.message import BatchItem, encode_properties
from rocketq.store import (
    MessageStore,
    PutMessageStatus,
    StoreBatch,
    StoreConfig,
    StoreMessage,
    _plainrun_py,
    plainrun,
)
from rocketq.store.fast_hash import tags_code_of
from rocketq.store.message import PlainMessage

StoreFactory = Callable[..., MessageStore]
STORE_HOST = ("10.0.0.2", 10911)
TWINS = {"py": _plainrun_py.write_plain_run}
if plainrun.compiled is not None:
    TWINS["c"] = plainrun.compiled.write_plain_run


@pytest.fixture(autouse=True, params=sorted(TWINS))
def plain_run_twin(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs with each twin of ``write_plain_run`` under ``put_plain_messages``."""
    monkeypatch.setattr("rocketq.store.append.write_plain_run", TWINS[request.param])
    return str(request.param)


def _messages() -> list[StoreMessage]:
    """Enough ~600-byte messages to roll the 4 KiB test files, over two topics and three queues, with tags, keys
    and an IPv6 born host."""
    out = []
    for i in range(20):
        props = {"UNIQ_KEY": f"U{i:031d}", "WAIT": "true"}
        if i % 3 == 0:
            props["TAGS"] = f"tag{i % 2}"
        if i % 4 == 0:
            props["KEYS"] = f"k{i} shared"
        props["CLUSTER"] = "DefaultCluster"
        out.append(
            StoreMessage(
                topic="TA" if i % 5 else "TB", body=bytes([i]) * (500 + i), queue_id=i % 3, flag=i,
                properties=props, born_timestamp=1000 + i,
                born_host=("::1", 6000) if i == 7 else ("10.0.0.1", 5000), store_host=STORE_HOST,
                reconsume_times=i % 2,
            )
        )  # fmt: skip
    return out


def _plain(m: StoreMessage) -> PlainMessage:
    p = m.properties
    return (
        m.topic, m.queue_id, m.body, encode_properties(p).encode(), m.flag, m.sys_flag, m.born_timestamp,
        m.born_host, m.reconsume_times, p.get("TAGS"), p.get("UNIQ_KEY"), p.get("KEYS"),
    )  # fmt: skip


def _two_stores(open_store: StoreFactory, store_config: Callable[..., StoreConfig], tmp_path: Path) -> tuple[
    MessageStore, MessageStore
]:
    one = open_store(store_config(store_path_root_dir=str(tmp_path / "one-by-one")))
    run = open_store(store_config(store_path_root_dir=str(tmp_path / "run")))
    return one, run


def test_a_run_stores_what_puts_one_by_one_store(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], tmp_path: Path
) -> None:
    one, run = _two_stores(open_store, store_config, tmp_path)
    messages = _messages()
    singles = [one.put_message(m).append_result for m in messages]
    results = run.put_plain_messages([_plain(m) for m in messages[:11]], STORE_HOST)
    results += run.put_plain_messages([_plain(m) for m in messages[11:]], STORE_HOST)  # a second run goes on
    assert [(a.wrote_offset, a.logics_offset, a.wrote_bytes) for a in singles if a] == results
    assert len({r[0] // 4096 for r in results if isinstance(r, tuple)}) > 2  # rolled over files
    # the same commit log, byte for byte (store times come from the same fake clock)
    assert one.get_max_phy_offset() == run.get_max_phy_offset()
    for a in singles:
        assert a is not None
        assert one.select_one_message_by_offset(a.wrote_offset) == run.select_one_message_by_offset(a.wrote_offset)
    # the same consume-queue units (tags codes included) and index keys
    all_units = []
    for topic, queue_id in {(m.topic, m.queue_id) for m in messages}:
        cq_one, cq_run = one.cq_table.find(topic, queue_id), run.cq_table.find(topic, queue_id)
        assert cq_one is not None and cq_run is not None
        units = [cq_one.get_unit(i) for i in range(cq_one.max_offset_in_queue)]
        assert units == [cq_run.get_unit(i) for i in range(cq_run.max_offset_in_queue)]
        all_units += units
    assert {u[2] for u in all_units if u} == {0, tags_code_of("tag0"), tags_code_of("tag1")}
    for topic, key in [("TA", "shared"), ("TB", "shared"), ("TA", f"U{1:031d}")]:
        found_one = [r.queue_offset for r in one.query_message(topic, key, 32, 0, 2**62)]
        found_run = [r.queue_offset for r in run.query_message(topic, key, 32, 0, 2**62)]
        assert found_one == found_run and found_one
    assert one.stats_service.put_times == run.stats_service.put_times == len(messages)


def test_a_refused_message_leaves_the_rest_of_the_run_stored(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig]
) -> None:
    store = open_store(store_config(max_message_size=1000))
    good = _plain(_messages()[1])
    too_big = (*good[:2], b"x" * 1001, *good[3:])
    long_props = (*good[:3], b"p" * 40_000, *good[4:])
    too_big_for_a_file = (*good[:2], b"x" * 999, b"q" * 3500, *good[4:])
    results = store.put_plain_messages([good, too_big, long_props, too_big_for_a_file, good], STORE_HOST)
    assert results[1:4] == [
        PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, PutMessageStatus.MESSAGE_ILLEGAL
    ]  # fmt: skip
    first, last = results[0], results[4]
    assert isinstance(first, tuple) and isinstance(last, tuple)
    assert (first[1], last[1]) == (0, 1)  # consecutive queue offsets: nothing was written for the refused
    assert store.stats_service.put_failed == 3 and store.stats_service.put_times == 2


def test_a_run_tells_the_arrival_listener_of_each_message(open_store: StoreFactory, clock: Any) -> None:
    store = open_store()
    calls: list[tuple[Any, ...]] = []
    store.arrival_listener = lambda *a: calls.append(a)
    a, b = _plain(_messages()[3]), _plain(_messages()[4])  # TAGS tag1 on queue 0; no tags, queue 1
    store.put_plain_messages([a, b, a], STORE_HOST)
    assert calls == [
        ("TA", 0, 1, tags_code_of("tag1"), clock(), None),  # properties are not decoded on this path
        ("TA", 1, 1, 0, clock(), None),
        ("TA", 0, 2, tags_code_of("tag1"), clock(), None),
    ]


def test_a_run_after_shutdown_is_refused_whole(open_store: StoreFactory) -> None:
    store = open_store()
    store.shutdown()
    message = _plain(_messages()[1])
    assert store.put_plain_messages([message, message], STORE_HOST) == [PutMessageStatus.SERVICE_NOT_AVAILABLE] * 2


def test_a_run_tells_the_arrivals_listener_once(open_store: StoreFactory, clock: Any) -> None:
    store = open_store()
    runs: list[tuple[Any, ...]] = []
    singles: list[tuple[Any, ...]] = []
    store.arrivals_listener = lambda arrivals, ts: runs.append((list(arrivals), ts))
    store.arrival_listener = lambda *a: singles.append(a)
    a, b = _plain(_messages()[3]), _plain(_messages()[4])
    store.put_plain_messages([a, b, a], STORE_HOST)
    tag1 = tags_code_of("tag1")
    assert runs == [([("TA", 0, 1, tag1), ("TA", 1, 1, 0), ("TA", 0, 2, tag1)], clock())]
    assert singles == []  # the run's listener replaces the per-message one for runs
    store.put_message(_messages()[3])  # a single put still goes to the per-message listener, with properties
    assert len(singles) == 1 and singles[0][:3] == ("TA", 0, 3) and singles[0][5] is not None


def test_a_batch_tells_the_arrivals_listener_once(open_store: StoreFactory, clock: Any) -> None:
    store = open_store()
    runs: list[tuple[Any, ...]] = []
    singles: list[tuple[Any, ...]] = []
    items = [BatchItem(0, b"b%d" % j, {"UNIQ_KEY": f"B{j}", "TAGS": "bt"}) for j in range(3)]
    batch = StoreBatch(topic="TB", items=items, queue_id=2, born_host=("10.0.0.1", 5000), store_host=STORE_HOST)
    store.arrival_listener = lambda *a: singles.append(a)
    assert store.put_messages(batch).is_ok  # without the run's listener: each message to the per-message one
    bt = tags_code_of("bt")
    assert singles == [("TB", 2, n, bt, clock(), None) for n in (1, 2, 3)]
    store.arrivals_listener = lambda arrivals, ts: runs.append((list(arrivals), ts))
    assert store.put_messages(batch).is_ok
    assert runs == [([("TB", 2, 4, bt), ("TB", 2, 5, bt), ("TB", 2, 6, bt)], clock())]
    assert len(singles) == 3
