"""Appending: statuses, queue offsets, file roll-over with blank records, batches, transactions, delay."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rocketq.protocol.message import (
    BLANK_MAGIC,
    SYSFLAG_TX_COMMIT,
    SYSFLAG_TX_PREPARED,
    SYSFLAG_TX_ROLLBACK,
    BatchItem,
    decode_record,
    make_offset_msg_id,
)
from rocketq.store import (
    SCHEDULE_TOPIC,
    GetMessageStatus,
    MessageStore,
    PutMessageStatus,
    StoreBatch,
    StoreConfig,
    StoreMessage,
)
from rocketq.store.fast_hash import tags_code_of

MsgFactory = Callable[..., StoreMessage]
StoreFactory = Callable[..., MessageStore]


def test_put_returns_offsets_and_msg_id(open_store: StoreFactory, msg: MsgFactory, clock: Any) -> None:
    store = open_store()
    r1 = store.put_message(msg(body=b"a"))
    r2 = store.put_message(msg(body=b"b"))
    r3 = store.put_message(msg(body=b"c", queue_id=1))
    assert r1.is_ok and r2.is_ok and r3.is_ok
    a1, a2, a3 = r1.append_result, r2.append_result, r3.append_result
    assert a1 is not None and a2 is not None and a3 is not None
    assert (a1.wrote_offset, a1.logics_offset, a1.msg_num) == (0, 0, 1)
    assert a2.wrote_offset == a1.wrote_bytes and a2.logics_offset == 1
    assert a3.logics_offset == 0
    assert a1.store_timestamp == clock()
    assert a2.msg_id == make_offset_msg_id(("10.0.0.2", 10911), a2.wrote_offset)
    assert a2.end_offset == a2.wrote_offset + a2.wrote_bytes
    rec = store.look_message_by_offset(a2.wrote_offset)
    assert rec is not None and rec.body == b"b" and rec.queue_offset == 1 and rec.store_timestamp == clock()
    raw = store.select_one_message_by_offset(a2.wrote_offset)
    assert raw is not None and len(raw) == a2.wrote_bytes and decode_record(raw).body == b"b"
    assert store.look_message_by_offset(a3.end_offset) is None
    assert store.get_max_phy_offset() == a3.end_offset


def test_roll_over_writes_blank(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    body = b"x" * 1000
    results = [store.put_message(msg(body=body + bytes([i]))) for i in range(9)]
    assert all(r.is_ok for r in results)
    offsets = [r.append_result.wrote_offset for r in results if r.append_result]
    files = store.commit_log.mfq.mapped_files
    assert len(files) >= 3
    for off, r in zip(offsets, results, strict=True):
        assert r.append_result is not None
        assert off // 4096 == (r.append_result.end_offset - 1) // 4096  # never spans files
    first = files[0]
    last_end = max(o + r.append_result.wrote_bytes for o, r in zip(offsets, results, strict=True)
                   if r.append_result and o < 4096)
    blank = first.mm[last_end : last_end + 8]
    assert int.from_bytes(blank[:4], "big") == 4096 - last_end
    assert int.from_bytes(blank[4:], "big") == BLANK_MAGIC
    got = store.get_message("T", 0, 0, 32)
    assert got.status is GetMessageStatus.FOUND and got.message_count == 9
    assert [decode_record(v).body for v in got.message_views] == [body + bytes([i]) for i in range(9)]
    got.release()


def test_illegal_messages(open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory) -> None:
    store = open_store(store_config(max_message_size=100))
    assert store.put_message(msg(body=b"x" * 101)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(msg(topic="t" * 128)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(msg(topic="a/b")).status is PutMessageStatus.MESSAGE_ILLEGAL
    big = {"K": "v" * 40_000}
    assert store.put_message(msg(properties=big)).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert store.put_message(msg(topic="t" * 127)).is_ok
    assert store.stats().put_message_failed_times == 4


def test_record_too_big_for_a_file(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()  # 4 KiB files, 4 MiB max body
    assert store.put_message(msg(body=b"x" * 4000)).status is PutMessageStatus.MESSAGE_ILLEGAL


@pytest.mark.parametrize("tx", [SYSFLAG_TX_PREPARED, SYSFLAG_TX_ROLLBACK])
def test_prepared_and_rollback_get_no_queue_offset(open_store: StoreFactory, msg: MsgFactory, tx: int) -> None:
    store = open_store()
    assert store.put_message(msg(body=b"n1")).is_ok
    r = store.put_message(msg(body=b"half", sys_flag=tx))
    assert r.is_ok and r.append_result is not None and r.append_result.logics_offset == 0
    r2 = store.put_message(msg(body=b"n2"))
    assert r2.append_result is not None and r2.append_result.logics_offset == 1
    assert store.get_max_offset_in_queue("T", 0) == 2
    rec = store.look_message_by_offset(r.append_result.wrote_offset)
    assert rec is not None and rec.queue_offset == 0 and rec.sys_flag & 0xC == tx
    got = store.get_message("T", 0, 0, 32)
    assert [decode_record(v).body for v in got.message_views] == [b"n1", b"n2"]
    got.release()


def test_commit_message_is_queued(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    r = store.put_message(msg(body=b"c", sys_flag=SYSFLAG_TX_COMMIT, prepared_transaction_offset=123))
    assert r.append_result is not None and r.append_result.logics_offset == 0
    assert store.get_max_offset_in_queue("T", 0) == 1


def test_batch(open_store: StoreFactory) -> None:
    store = open_store()
    store.put_message(StoreMessage(topic="B", body=b"first", queue_id=2))
    items = [BatchItem(flag=i, body=f"m{i}".encode(), properties={"UNIQ_KEY": f"K{i}", "TAGS": "t"}) for i in range(5)]
    batch = StoreBatch(topic="B", items=items, queue_id=2, born_host=("1.2.3.4", 9), store_host=("5.6.7.8", 10911),
                       properties={"WAIT": "true"})
    r = store.put_messages(batch)
    assert r.is_ok and r.append_result is not None
    ar = r.append_result
    assert ar.msg_num == 5 and ar.logics_offset == 1
    assert ar.record_offsets is not None and len(ar.record_offsets) == 5
    assert ar.msg_id.split(",") == [make_offset_msg_id(("5.6.7.8", 10911), o) for o in ar.record_offsets]
    got = store.get_message("B", 2, 1, 32)
    recs = [decode_record(v) for v in got.message_views]
    got.release()
    assert [x.body for x in recs] == [f"m{i}".encode() for i in range(5)]
    assert [x.queue_offset for x in recs] == [1, 2, 3, 4, 5]
    assert [x.flag for x in recs] == list(range(5))
    assert recs[0].properties == {"UNIQ_KEY": "K0", "TAGS": "t", "WAIT": "true"}
    assert len({x.store_timestamp for x in recs}) == 1
    assert [x.commit_log_offset for x in recs] == list(ar.record_offsets)
    assert [m.body for m in store.query_message("B", "K3", 10, 0, 2**62)] == [b"m3"]
    assert store.get_max_offset_in_queue("B", 2) == 6


def test_batch_rolls_as_a_whole(open_store: StoreFactory) -> None:
    store = open_store()
    items = [BatchItem(flag=0, body=b"y" * 900, properties={}) for _ in range(3)]
    for _ in range(3):
        r = store.put_messages(StoreBatch(topic="B", items=items))
        assert r.is_ok and r.append_result is not None
        start, end = r.append_result.wrote_offset, r.append_result.end_offset
        assert start // 4096 == (end - 1) // 4096
    assert store.get_max_offset_in_queue("B", 0) == 9


def test_illegal_batches(open_store: StoreFactory) -> None:
    store = open_store()
    items = [BatchItem(flag=0, body=b"y", properties={})]
    assert store.put_messages(StoreBatch(topic="B", items=[])).status is PutMessageStatus.MESSAGE_ILLEGAL
    tx = StoreBatch(topic="B", items=items, sys_flag=SYSFLAG_TX_PREPARED)
    assert store.put_messages(tx).status is PutMessageStatus.MESSAGE_ILLEGAL
    delayed = StoreBatch(topic="B", items=items, properties={"DELAY": "2"})
    assert store.put_messages(delayed).status is PutMessageStatus.MESSAGE_ILLEGAL
    huge = [BatchItem(flag=0, body=b"y" * 1500, properties={}) for _ in range(3)]
    assert store.put_messages(StoreBatch(topic="B", items=huge)).status is PutMessageStatus.MESSAGE_ILLEGAL


def test_tags_code_in_consume_queue(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    store.put_message(msg(properties={"TAGS": "TagA"}))
    store.put_message(msg(properties={"TAGS": "TagA"}, tags_code=42))  # the broker's value wins
    store.put_message(msg(properties={}))
    cq = store.cq_table.find("T", 0)
    assert cq is not None
    assert [cq.get_unit(i)[2] for i in range(3)] == [tags_code_of("TagA"), 42, 0]  # type: ignore[index]


def test_delay_is_rewritten_to_schedule_topic(open_store: StoreFactory, msg: MsgFactory, clock: Any) -> None:
    store = open_store()
    r = store.put_message(msg(topic="Real", queue_id=3, properties={"DELAY": "3", "TAGS": "x"}))
    assert r.is_ok and r.append_result is not None
    rec = store.look_message_by_offset(r.append_result.wrote_offset)
    assert rec is not None and rec.topic == SCHEDULE_TOPIC and rec.queue_id == 2
    assert rec.properties["REAL_TOPIC"] == "Real" and rec.properties["REAL_QID"] == "3"
    cq = store.cq_table.find(SCHEDULE_TOPIC, 2)
    assert cq is not None and cq.get_unit(0)[2] == clock() + 10_000  # type: ignore[index]
    r = store.put_message(msg(topic="Real", properties={"DELAY": "99"}))  # clamped to level 18 (2 h)
    assert r.append_result is not None
    rec = store.look_message_by_offset(r.append_result.wrote_offset)
    assert rec is not None and rec.queue_id == 17 and rec.properties["DELAY"] == "18"
    cq = store.cq_table.find(SCHEDULE_TOPIC, 17)
    assert cq is not None and cq.get_unit(0)[2] == clock() + 7_200_000  # type: ignore[index]
    assert store.get_max_offset_in_queue("Real", 3) == 0


def test_delay_not_rewritten_when_disabled_or_already_scheduled(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any
) -> None:
    store = open_store(store_config(schedule_rewrite_enable=False))
    store.put_message(msg(topic="Real", properties={"DELAY": "1"}))
    assert store.get_max_offset_in_queue("Real", 0) == 1
    store.put_message(msg(topic=SCHEDULE_TOPIC, queue_id=0, properties={"DELAY": "1", "REAL_TOPIC": "Real"}))
    cq = store.cq_table.find(SCHEDULE_TOPIC, 0)
    assert cq is not None and cq.get_unit(0)[2] == clock() + 1000  # type: ignore[index]


def test_arrival_listener(open_store: StoreFactory, msg: MsgFactory, clock: Any) -> None:
    store = open_store()
    calls: list[tuple[Any, ...]] = []
    store.arrival_listener = lambda *a: calls.append(a)
    store.put_message(msg(properties={"TAGS": "a"}, queue_id=1))
    store.put_message(msg(sys_flag=SYSFLAG_TX_PREPARED))
    store.put_messages(StoreBatch(topic="B", items=[BatchItem(0, b"1", {}), BatchItem(0, b"2", {"TAGS": "z"})]))
    assert calls == [
        ("T", 1, 1, tags_code_of("a"), clock(), {"TAGS": "a"}),
        ("B", 0, 1, 0, clock(), None),  # batch messages are never decoded on the append path
        ("B", 0, 2, tags_code_of("z"), clock(), None),
    ]


def test_properties_str_is_used_verbatim(open_store: StoreFactory) -> None:
    store = open_store()
    r = store.put_message(StoreMessage(topic="T", body=b"b", properties={"TAGS": "a"}, properties_str="TAGS\x01a"))
    assert r.append_result is not None
    raw = store.select_one_message_by_offset(r.append_result.wrote_offset)
    assert raw is not None and raw.endswith(b"\x00\x06TAGS\x01a")


def test_put_after_shutdown(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    store.shutdown()
    assert store.put_message(msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
