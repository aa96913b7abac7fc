"""Index entries queued by the append path: written before queries, by the flush thread, and rebuilt after a crash."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rocketq.store import MessageStore, StoreConfig, StoreMessage
from rocketq.store.index_service import PENDING_WRITE_THRESHOLD

StoreFactory = Callable[..., MessageStore]
MsgFactory = Callable[..., StoreMessage]


def _index_count(store: MessageStore) -> int:
    assert store.index is not None
    return sum(f.index_count for f in store.index.files)


def test_appends_queue_entries_and_a_query_writes_them_first(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    store = open_store(store_config(flush_interval_consume_queue=60_000))
    for i in range(5):
        assert store.put_message(msg(body=bytes([i]), properties={"UNIQ_KEY": f"U{i}", "KEYS": f"k{i} both"})).is_ok
    assert store.index is not None and store.index.pending_entries == 15
    assert _index_count(store) == 0
    assert [m.body for m in store.query_message("T", "U3", 8, 0, 2**62)] == [bytes([3])]
    assert store.index.pending_entries == 0
    assert len(store.query_message("T", "both", 8, 0, 2**62)) == 5


def test_enough_queued_entries_are_written_without_a_query(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    store = open_store(store_config(flush_interval_consume_queue=60_000, max_index_num=4096, max_hash_slot_num=512))
    n = PENDING_WRITE_THRESHOLD  # one key (two queued values) each: twice what triggers a write
    for i in range(n):
        assert store.put_message(msg(body=i.to_bytes(4, "big"), properties={"UNIQ_KEY": f"U{i}"})).is_ok
    assert store.index is not None
    assert store.index.pending_entries < PENDING_WRITE_THRESHOLD // 2
    assert _index_count(store) > 0


def test_the_flush_thread_writes_queued_entries(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    store = open_store(store_config(flush_interval_consume_queue=20))
    assert store.put_message(msg(properties={"UNIQ_KEY": "only"})).is_ok
    assert store.index is not None
    deadline = time.monotonic() + 10
    while store.index.pending_entries and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.index.pending_entries == 0
    assert _index_count(store) >= 1


def test_entries_queued_at_a_crash_are_rebuilt_by_recovery(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any
) -> None:
    cfg = store_config(flush_interval_consume_queue=60_000)
    store = open_store(cfg)
    for i in range(6):
        assert store.put_message(msg(body=bytes([i]), properties={"UNIQ_KEY": f"U{i}"})).is_ok
        clock.advance(1000)
    assert store.index is not None and store.index.pending_entries == 6
    store.abandon()  # as kill -9: nothing written beyond what the page cache has
    again = open_store(cfg)
    for i in range(6):
        assert [m.body for m in again.query_message("T", f"U{i}", 4, 0, 2**62)] == [bytes([i])]


def test_shutdown_writes_queued_entries(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config(flush_interval_consume_queue=60_000)
    store = open_store(cfg)
    assert store.put_message(msg(properties={"UNIQ_KEY": "kept"})).is_ok
    store.shutdown()
    again = open_store(cfg)
    assert _index_count(again) >= 1
    assert len(again.query_message("T", "kept", 4, 0, 2**62)) == 1


def test_queued_entries_count_as_pending_until_they_are_in_a_file(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    """The flush thread's write and a query race: the query must wait for the write, not skip it.

    ``write_pending_index`` takes the put lock only while entries are pending; the queue used to be emptied
    before the write, so a query beside the flush thread's write found 0 pending, skipped the lock and read
    an index file the key was not in yet (and the flush-thread test saw 0 pending with 0 entries written).
    """
    store = open_store(store_config(flush_interval_consume_queue=60_000))
    assert store.put_message(msg(properties={"UNIQ_KEY": "racing"})).is_ok
    index = store.index
    assert index is not None
    seen_pending: list[int] = []
    started, release = threading.Event(), threading.Event()
    real_put = index._put_entries

    def slow_put(entries: list[int], store_timestamp: int) -> None:
        seen_pending.append(index.pending_entries)
        started.set()
        release.wait(10)
        real_put(entries, store_timestamp)

    index._put_entries = slow_put  # type: ignore[method-assign]
    writer = threading.Thread(target=store.write_pending_index)
    writer.start()
    found: list[int] = []
    try:
        assert started.wait(10)
        reader = threading.Thread(target=lambda: found.append(len(store.query_message("T", "racing", 4, 0, 2**62))))
        reader.start()
        reader.join(0.5)  # it blocks on the put lock until the write is done (or, before the fix, returns 0)
    finally:
        release.set()
        writer.join(10)
    reader.join(10)
    assert seen_pending == [1]
    assert found == [1]
    assert index.pending_entries == 0
