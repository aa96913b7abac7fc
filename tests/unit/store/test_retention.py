"""Retention with a fake clock, and disk-full handling with an injected disk-usage function."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from rocketq.protocol.message import decode_record
from rocketq.store import GetMessageStatus, MessageStore, PutMessageStatus, StoreConfig, StoreMessage

MsgFactory = Callable[..., StoreMessage]
StoreFactory = Callable[..., MessageStore]
HOUR = 3_600_000


class Disk:
    def __init__(self, ratio: float = 0.1) -> None:
        self.ratio = ratio

    def __call__(self, path: str) -> float:
        return self.ratio


def _fill(store: MessageStore, msg: MsgFactory, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        r = store.put_message(msg(body=bytes([i]) * 300, properties={"UNIQ_KEY": f"U{i}"}))
        assert r.is_ok
    store.write_pending_index()  # the append path queues index entries; retention acts on written files


def _hour(clock: Any, plus: int) -> str:
    return f"{(time.localtime(clock() / 1000).tm_hour + plus) % 24:02d}"


def test_expired_files_deleted_at_delete_hour(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any
) -> None:
    cfg = store_config(file_reserved_time=1, delete_when=f"{_hour(clock, 2)};{_hour(clock, 5)}", max_index_num=8)
    store = open_store(cfg, disk_usage=Disk())
    _fill(store, msg, 30)
    n_files = len(store.commit_log.mfq.mapped_files)
    n_index = len(store.index.files) if store.index else 0
    assert n_files >= 3 and n_index >= 3
    assert store.run_cleanup().commit_log_files_deleted == 0
    clock.advance(HOUR + 1)  # expired, but not the hour
    assert store.run_cleanup().commit_log_files_deleted == 0
    clock.advance(HOUR)  # the delete hour
    report = store.run_cleanup()
    assert report.commit_log_files_deleted == n_files - 1  # never the file being written
    assert report.index_files_deleted >= 1 and report.consume_queue_files_deleted >= 1
    min_phy = store.get_min_phy_offset()
    assert min_phy == store.commit_log.mfq.mapped_files[0].file_from_offset > 0
    assert sorted(os.listdir(cfg.commit_log_dir)) == [f"{min_phy:020d}"]
    # queue min offset moved to the first message still stored
    min_q = store.get_min_offset_in_queue("T", 0)
    assert min_q > 0
    r = store.get_message("T", 0, 0, 32)
    assert (r.status, r.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, min_q)
    r = store.get_message("T", 0, min_q, 32)
    assert r.status is GetMessageStatus.FOUND
    assert decode_record(r.message_views[0]).commit_log_offset >= min_phy
    assert decode_record(r.message_views[0]).body == bytes([min_q]) * 300
    r.release()
    assert store.query_message("T", "U29", 32, 0, 2**62)
    assert store.get_earliest_message_time("T", 0) == clock() - 2 * HOUR - 1
    # later writes go on and are readable
    _fill(store, msg, 5, start=30)
    assert store.get_max_offset_in_queue("T", 0) == 35


def test_files_in_use_are_unmapped_later(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any
) -> None:
    store = open_store(store_config(file_reserved_time=1, delete_when=_hour(clock, 1)), disk_usage=Disk())
    _fill(store, msg, 30)
    held = store.get_message("T", 0, 0, 3)
    assert held.message_count == 3
    files = list(store.commit_log.mfq.mapped_files[:-1])
    clock.advance(HOUR)
    assert store.run_cleanup().commit_log_files_deleted == len(files) >= 2
    # the store's own threads (flush, warmer, dispatch) may hold a file for a moment: those files close
    # on a retry; only the first, still lent out, stays open
    deadline = time.monotonic() + 10
    while store.commit_log.mfq.pending_destroy_count > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
        store.run_cleanup()
    assert store.commit_log.mfq.pending_destroy_count == 1
    assert [f.is_cleanup_over for f in files] == [False] + [True] * (len(files) - 1)
    assert [decode_record(v).body[0] for v in held.message_views] == [0, 1, 2]  # and still readable
    held.release()
    store.run_cleanup()
    deadline = time.monotonic() + 10  # as above: a brief hold by the store's own threads closes on a retry
    while store.commit_log.mfq.pending_destroy_count and time.monotonic() < deadline:
        time.sleep(0.01)
        store.run_cleanup()
    assert store.commit_log.mfq.pending_destroy_count == 0


def test_space_pressure_deletes_expired_files_outside_the_hour(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any
) -> None:
    disk = Disk(0.80)  # above disk_max_used_space_ratio (75 %)
    store = open_store(store_config(file_reserved_time=1, delete_when=_hour(clock, 12)), disk_usage=disk)
    _fill(store, msg, 30)
    assert store.run_cleanup().commit_log_files_deleted == 0  # not expired yet
    clock.advance(HOUR)
    assert store.run_cleanup().commit_log_files_deleted >= 2


def test_manual_trigger(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any
) -> None:
    store = open_store(store_config(file_reserved_time=1, delete_when=_hour(clock, 12)), disk_usage=Disk())
    _fill(store, msg, 30)
    clock.advance(HOUR)
    assert store.run_cleanup().commit_log_files_deleted == 0
    store.trigger_delete_files()
    assert store.run_cleanup().commit_log_files_deleted >= 2


def test_disk_full_refuses_writes_keeps_reads(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any
) -> None:
    disk = Disk()
    store = open_store(store_config(delete_when=_hour(clock, 12)), disk_usage=disk)
    _fill(store, msg, 30)
    n_files = len(store.commit_log.mfq.mapped_files)
    disk.ratio = 0.95
    report = store.run_cleanup()
    assert report.disk_full and report.clean_immediately
    assert report.commit_log_files_deleted == n_files - 1  # cleaned forcibly, though not expired
    assert store.is_disk_full()
    assert store.put_message(msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    min_q = store.get_min_offset_in_queue("T", 0)
    r = store.get_message("T", 0, min_q, 32)
    assert r.status is GetMessageStatus.FOUND
    r.release()
    assert store.runtime_info()["commitLogDiskRatio"] == "0.95"
    disk.ratio = 0.87  # between clean-forcibly and warning levels: still full
    store.run_cleanup()
    assert store.put_message(msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    disk.ratio = 0.5
    assert not store.run_cleanup().disk_full
    assert store.put_message(msg()).is_ok


def test_disk_full_store_still_shuts_down_cleanly(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    cfg = store_config()
    disk = Disk(0.99)
    store = open_store(cfg, disk_usage=disk)
    _fill(store, msg, 3)
    store.run_cleanup()
    store.shutdown()
    assert not os.path.exists(cfg.abort_path)


def test_cleanup_thread(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    disk = Disk(0.99)
    store = open_store(store_config(clean_resource_interval=10), disk_usage=disk)
    deadline = time.monotonic() + 10
    while not store.is_disk_full() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.is_disk_full()


def test_clean_expired_consume_queues_drops_queues_whose_messages_all_expired(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any
) -> None:
    cfg = store_config(file_reserved_time=1, delete_when=_hour(clock, 2), max_index_num=8)
    store = open_store(cfg, disk_usage=Disk())
    assert store.put_message(msg(topic="Old", body=b"o" * 300)).is_ok
    _fill(store, msg, 30)  # topic T rolls the commit log past Old's only message
    clock.advance(2 * HOUR + 1)
    assert store.run_cleanup().commit_log_files_deleted >= 1
    assert store.get_min_phy_offset() > 0
    assert store.clean_expired_consume_queues() == [("Old", 0)]  # T still has messages in the commit log
    assert store.cq_table.find("Old", 0) is None and store.get_max_offset_in_queue("Old", 0) == 0
    again = store.put_message(msg(topic="Old", body=b"n")).append_result
    assert again is not None and again.logics_offset == 0  # the queue starts again
    assert store.clean_expired_consume_queues() == []


def test_clean_unused_topics_keeps_the_configured_and_the_delay_queues(
    open_store: StoreFactory, msg: MsgFactory
) -> None:
    store = open_store()
    for topic in ("Kept", "Gone", "SCHEDULE_TOPIC_XXXX"):
        assert store.put_message(msg(topic=topic, body=b"x")).is_ok
    assert store.clean_unused_topics({"Kept"}) == ["Gone"]
    assert sorted(store.cq_table.topics()) == ["Kept", "SCHEDULE_TOPIC_XXXX"]
