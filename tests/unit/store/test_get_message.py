"""Reading: every GetMessageStatus with its nextBeginOffset (reference §3.2), limits, filters, time search."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rocketq.protocol.message import decode_properties, decode_record
from rocketq.store import GetMessageStatus, MessageStore, StoreConfig, StoreMessage
from rocketq.store.errors import StoreNotAvailableError
from rocketq.store.fast_hash import tags_code_of

MsgFactory = Callable[..., StoreMessage]
StoreFactory = Callable[..., MessageStore]


def _fill(store: MessageStore, msg: MsgFactory, n: int, topic: str = "T", queue_id: int = 0, **kw: Any) -> None:
    for i in range(n):
        assert store.put_message(msg(topic=topic, body=f"m{i}".encode(), queue_id=queue_id, **kw)).is_ok


def _bodies(result: Any) -> list[bytes]:
    return [decode_record(v).body for v in result.message_views]


def test_found_and_next_offset(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    _fill(store, msg, 25)
    r = store.get_message("T", 0, 3, 4)
    assert r.status is GetMessageStatus.FOUND
    assert _bodies(r) == [b"m3", b"m4", b"m5", b"m6"]
    assert r.queue_offsets == [3, 4, 5, 6]
    assert (r.next_begin_offset, r.min_offset, r.max_offset) == (7, 0, 25)
    assert r.buffer_total_size == sum(len(v) for v in r.message_views) and r.message_count == 4
    assert r.to_bytes() == b"".join(bytes(v) for v in r.message_views)
    r.release()


def test_read_stops_at_consume_queue_file_end(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()  # 10 units per consume-queue file
    _fill(store, msg, 25)
    r = store.get_message("T", 0, 7, 32)
    assert r.queue_offsets == [7, 8, 9] and r.next_begin_offset == 10
    r.release()
    r = store.get_message("T", 0, 20, 32)
    assert r.next_begin_offset == 25 and r.message_count == 5
    r.release()


@pytest.mark.parametrize(
    ("offset", "status", "next_offset"),
    [
        (9, GetMessageStatus.OFFSET_OVERFLOW_BADLY, 5),
        (5, GetMessageStatus.OFFSET_OVERFLOW_ONE, 5),
    ],
)
def test_overflow(open_store: StoreFactory, msg: MsgFactory, offset: int, status: Any, next_offset: int) -> None:
    store = open_store()
    _fill(store, msg, 5)
    r = store.get_message("T", 0, offset, 32)
    assert (r.status, r.next_begin_offset, r.min_offset, r.max_offset, r.message_count) == (
        status, next_offset, 0, 5, 0,
    )


def test_no_queue_and_empty_queue(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    r = store.get_message("Nope", 0, 7, 32)
    assert (r.status, r.next_begin_offset, r.min_offset, r.max_offset) == (
        GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, 0, 0, 0,
    )
    store.cq_table.find_or_create("Empty", 0)
    r = store.get_message("Empty", 0, 3, 32)
    assert (r.status, r.next_begin_offset) == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0)


def test_offset_too_small_after_retention(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    _fill(store, msg, 30)
    cq = store.cq_table.find("T", 0)
    assert cq is not None
    cq.min_logic_offset = 12 * 20
    r = store.get_message("T", 0, 3, 32)
    assert (r.status, r.next_begin_offset, r.min_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, 12, 12)


def test_offset_found_null(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    _fill(store, msg, 25)
    cq = store.cq_table.find("T", 0)
    assert cq is not None
    cq.mfq.delete_expired_by_offset(10**9, 20)  # drop the first two files, min offset left behind
    r = store.get_message("T", 0, 3, 32)
    assert (r.status, r.next_begin_offset) == (GetMessageStatus.OFFSET_FOUND_NULL, 10)


def test_message_was_removing(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    for i in range(20):  # about 4 per commit-log file
        assert store.put_message(msg(body=b"z" * 900 + bytes([i]))).is_ok
    store.commit_log.mfq.delete_expired_by_time(0, 0, 1000, True)  # all but the last commit-log file
    first_left = store.get_min_phy_offset()
    cq = store.cq_table.find("T", 0)
    assert cq is not None
    n_gone = sum(1 for i in range(20) if (u := cq.get_unit(i)) is not None and u[0] < first_left)
    assert 10 <= n_gone < 20
    r = store.get_message("T", 0, 0, 32)  # the first consume-queue file points only at deleted data
    assert (r.status, r.next_begin_offset, r.message_count) == (GetMessageStatus.MESSAGE_WAS_REMOVING, 10, 0)
    r = store.get_message("T", 0, 10, 32)
    assert r.status is GetMessageStatus.FOUND
    assert r.queue_offsets == list(range(n_gone, 20)) and r.next_begin_offset == 20
    r.release()


def test_transfer_limits(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config(mapped_file_size_consume_queue=2000, mapped_file_size_commit_log=64 * 1024,
                       max_transfer_count_on_message_in_memory=3, max_transfer_bytes_on_message_in_memory=400)
    store = open_store(cfg)
    _fill(store, msg, 10)
    r = store.get_message("T", 0, 0, 32)
    assert r.message_count == 3 and r.next_begin_offset == 3  # count limit
    r.release()
    for _ in range(5):
        store.put_message(msg(topic="Big", body=b"b" * 300))
    r = store.get_message("Big", 0, 0, 32)
    assert r.message_count == 1 and r.next_begin_offset == 1  # the first message always comes, then bytes limit
    r.release()
    r = store.get_message("T", 0, 0, 2)
    assert r.message_count == 2 and r.next_begin_offset == 2  # maxMsgNums
    r.release()


def test_in_disk_limits(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config(mapped_file_size_consume_queue=2000, mapped_file_size_commit_log=64 * 1024,
                       access_message_in_memory_max_ratio=0, max_transfer_count_on_message_in_disk=2)
    store = open_store(cfg)
    _fill(store, msg, 10)
    r = store.get_message("T", 0, 0, 32)
    assert r.message_count == 2 and r.suggest_pulling_from_slave
    r.release()


class TagFilter:
    def __init__(self, *tags: str) -> None:
        self.codes = {tags_code_of(t) for t in tags}
        self.commit_log_checks = 0

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return tags_code in self.codes

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        self.commit_log_checks += 1
        return True


class PropFilter:
    """A SQL92-like filter: reads properties from the raw record."""

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return True

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        rec = decode_record(record)
        return decode_properties("\x02".join(f"{k}\x01{v}" for k, v in rec.properties.items())).get("a") == "1"


def test_tag_filter(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    for i in range(8):
        store.put_message(msg(body=bytes([i]), properties={"TAGS": "A" if i % 2 else "B"}))
    f = TagFilter("A")
    r = store.get_message("T", 0, 0, 32, f)
    assert r.status is GetMessageStatus.FOUND and r.queue_offsets == [1, 3, 5, 7] and r.next_begin_offset == 8
    assert f.commit_log_checks == 4
    r.release()
    r = store.get_message("T", 0, 0, 32, TagFilter("C"))
    assert (r.status, r.next_begin_offset, r.message_count) == (GetMessageStatus.NO_MATCHED_MESSAGE, 8, 0)


def test_commit_log_filter(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    for i in range(6):
        store.put_message(msg(body=bytes([i]), properties={"a": str(i % 3)}))
    r = store.get_message("T", 0, 0, 32, PropFilter())
    assert r.queue_offsets == [1, 4]
    r.release()


def test_filter_scan_is_bounded(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config(mapped_file_size_consume_queue=20 * 100, mapped_file_size_commit_log=64 * 1024,
                       max_filter_message_count=100)  # bytes of consume queue, as in RocketMQ: 5 units
    store = open_store(cfg)
    _fill(store, msg, 30)
    r = store.get_message("T", 0, 0, 1, TagFilter("none"))
    assert (r.status, r.next_begin_offset) == (GetMessageStatus.NO_MATCHED_MESSAGE, 5)
    r = store.get_message("T", 0, 0, 10, TagFilter("none"))  # max(100, 10 * 20) bytes = 10 units
    assert r.next_begin_offset == 10


def test_offset_in_queue_by_time(open_store: StoreFactory, msg: MsgFactory, clock: Any) -> None:
    store = open_store()
    t0 = clock()
    for i in range(25):  # 3 consume-queue files
        store.put_message(msg(body=bytes([i])))
        clock.advance(10)
    assert store.get_offset_in_queue_by_time("T", 0, t0) == 0
    assert store.get_offset_in_queue_by_time("T", 0, t0 + 130) == 13
    assert store.get_offset_in_queue_by_time("T", 0, t0 + 133) == 13  # nearer to 130 than 140
    assert store.get_offset_in_queue_by_time("T", 0, t0 + 137) == 14
    assert store.get_offset_in_queue_by_time("T", 0, t0 - 1000) == 0
    assert store.get_offset_in_queue_by_time("T", 0, t0 + 10_000) == 24  # RocketMQ: the last message
    assert store.get_offset_in_queue_by_time("Nope", 0, t0) == 0
    assert store.get_earliest_message_time("T", 0) == t0
    assert store.get_message_store_timestamp("T", 0, 7) == t0 + 70
    assert store.get_commit_log_offset_in_queue("T", 0, 1) > 0
    assert store.get_earliest_message_time("Nope", 0) == -1


def test_queue_listing_and_delete_topics(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    _fill(store, msg, 2, topic="A", queue_id=0)
    _fill(store, msg, 2, topic="A", queue_id=3)
    _fill(store, msg, 1, topic="B", queue_id=1)
    assert store.get_queue_ids("A") == [0, 3] and store.topics() == ["A", "B"]
    assert sorted(store.iter_queues()) == [("A", 0), ("A", 3), ("B", 1)]
    assert store.delete_topics(["A", "C"]) == 1
    assert store.topics() == ["B"]
    assert store.get_message("A", 0, 0, 32).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    r = store.put_message(msg(topic="A"))
    assert r.append_result is not None and r.append_result.logics_offset == 0


def test_query_message_by_key(open_store: StoreFactory, msg: MsgFactory, clock: Any) -> None:
    store = open_store()
    t0 = clock()
    for i in range(20):
        store.put_message(msg(body=bytes([i]), properties={"UNIQ_KEY": f"U{i}", "KEYS": f"k{i % 4} shared"}))
        clock.advance(1000)
    store.put_message(msg(topic="Other", properties={"KEYS": "shared"}))
    assert [m.body for m in store.query_message("T", "U5", 32, 0, 2**62)] == [bytes([5])]
    assert [m.body for m in store.query_message("T", "k1", 32, 0, 2**62)] == [bytes([i]) for i in (1, 5, 9, 13, 17)]
    assert len(store.query_message("T", "shared", 32, 0, 2**62)) == 20
    assert len(store.query_message("T", "shared", 3, 0, 2**62)) == 3
    assert [m.body for m in store.query_message("T", "shared", 32, t0 + 5000, t0 + 7000)] == [
        bytes([5]), bytes([6]), bytes([7]),
    ]
    assert [m.topic for m in store.query_message("Other", "shared", 32, 0, 2**62)] == ["Other"]
    assert store.query_message("T", "missing", 32, 0, 2**62) == []


def test_get_commit_log_data(open_store: StoreFactory, msg: MsgFactory) -> None:
    store = open_store()
    _fill(store, msg, 3)
    res = store.get_commit_log_data(0)
    assert res is not None
    try:
        assert res.start_offset == 0 and res.size == store.get_max_phy_offset()
        assert [decode_record(res.view, 0).body][0] == b"m0"
    finally:
        res.release()
    assert store.get_commit_log_data(store.get_max_phy_offset()) is None


def test_reads_after_shutdown_raise(open_store: StoreFactory) -> None:
    store = open_store()
    store.shutdown()
    with pytest.raises(StoreNotAvailableError):
        store.get_message("T", 0, 0, 1)
