"""Flushing: SYNC_FLUSH group commit and timeouts, ASYNC_FLUSH background flush, logics checkpoint."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from rocketq.store import MessageStore, PutMessageStatus, StoreConfig, StoreMessage
from rocketq.store.flush import CommitLogFlusher, GroupCommitService
from rocketq.store.mapped_file_queue import MappedFileQueue

MsgFactory = Callable[..., StoreMessage]
StoreFactory = Callable[..., MessageStore]


def _wait_true(cond: Callable[[], bool], timeout: float = 10.0) -> bool:
    ev = threading.Event()
    deadline = timeout
    step = 0.01
    while deadline > 0:
        if cond():
            return True
        ev.wait(step)
        deadline -= step
    return cond()


def test_sync_flush_put_and_wait(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    store = open_store(store_config(flush_disk_type="SYNC_FLUSH"))
    r = store.put_message_and_wait(msg())
    assert r.status is PutMessageStatus.PUT_OK and r.append_result is not None
    assert store.commit_log.mfq.flushed_where >= r.append_result.end_offset


def test_request_flush_callbacks(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    store = open_store(store_config(flush_disk_type="SYNC_FLUSH"))
    done = threading.Event()
    outcomes: list[bool] = []

    def cb(ok: bool) -> None:
        outcomes.append(ok)
        done.set()

    r = store.put_message(msg())
    assert r.append_result is not None
    store.request_flush(r.append_result.end_offset, cb)
    assert done.wait(10)
    assert outcomes == [True]
    outcomes.clear()
    store.request_flush(r.append_result.end_offset, outcomes.append)  # already durable: answered inline
    assert outcomes == [True]


def test_async_flush_request_is_immediate_and_background_flushes(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    store = open_store(store_config(flush_commit_log_least_pages=0))
    r = store.put_message(msg())
    assert r.append_result is not None
    got: list[bool] = []
    store.request_flush(r.append_result.end_offset, got.append)
    assert got == [True]
    assert store.put_message_and_wait(msg()).is_ok
    end = store.get_max_phy_offset()
    assert _wait_true(lambda: store.commit_log.mfq.flushed_where >= end)


class _GatedQueue(MappedFileQueue):
    """A queue whose flushes wait for the test to open a gate, counting them."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.calls = 0

    def flush(self, least_pages: int) -> bool:
        self.calls += 1
        self.entered.set()
        self.gate.wait(10)
        return super().flush(least_pages)


def test_group_commit_serves_queued_requests_with_one_flush(tmp_path: Any) -> None:
    q = _GatedQueue(str(tmp_path / "cl"), 4096)
    flusher = CommitLogFlusher(q, lambda: 0)
    svc = GroupCommitService(flusher, 5000)
    svc.start()
    try:
        mf = q.last_for_write()
        mf.append(b"a" * 100)
        results: list[tuple[int, bool]] = []
        done = threading.Event()

        def cb_for(i: int) -> Callable[[bool], None]:
            def cb(ok: bool) -> None:
                results.append((i, ok))
                if len(results) == 6:
                    done.set()

            return cb

        svc.put_request(100, cb_for(0))
        assert q.entered.wait(10)  # the first flush has started and is blocked
        for i in range(1, 6):
            mf.append(b"b" * 10)
            svc.put_request(100 + 10 * i, cb_for(i))
        q.gate.set()
        assert done.wait(10)
        assert sorted(results) == [(i, True) for i in range(6)]
        assert svc.request_count == 6
        assert svc.flush_count == 2  # one flush for the first request, one for the five queued behind it
    finally:
        q.gate.set()
        svc.shutdown()
        q.close()


def test_sync_flush_timeout(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    store = open_store(store_config(flush_disk_type="SYNC_FLUSH", sync_flush_timeout=50))
    release = threading.Event()
    real_flush = store.commit_log.mfq.flush

    def stuck_flush(least_pages: int) -> bool:
        release.wait(10)
        return real_flush(least_pages)

    store.commit_log.mfq.flush = stuck_flush  # type: ignore[method-assign]
    try:
        r = store.put_message_and_wait(msg())
        assert r.status is PutMessageStatus.FLUSH_DISK_TIMEOUT and r.append_result is not None
        answers: list[bool] = []
        got = threading.Event()
        store.request_flush(r.append_result.end_offset + 1, lambda ok: (answers.append(ok), got.set()))
        assert got.wait(10) and answers == [False]
    finally:
        release.set()


def test_wait_false_skips_the_flush_wait(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    store = open_store(store_config(flush_disk_type="SYNC_FLUSH", sync_flush_timeout=50))
    release = threading.Event()
    real_flush = store.commit_log.mfq.flush
    store.commit_log.mfq.flush = lambda least: (release.wait(10), real_flush(least))[1]  # type: ignore[method-assign]
    try:
        r = store.put_message_and_wait(msg(properties={"WAIT": "false"}))
        assert r.status is PutMessageStatus.PUT_OK
    finally:
        release.set()


@pytest.mark.parametrize("flush_type", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_shutdown_flushes_and_writes_checkpoint(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any,
    flush_type: str,
) -> None:
    cfg = store_config(flush_disk_type=flush_type)
    store = open_store(cfg)
    for _ in range(5):
        store.put_message(msg())
    clock.advance(1000)
    last = store.put_message(msg())
    assert last.append_result is not None
    store.shutdown()
    from rocketq.store.checkpoint import StoreCheckpoint

    cp = StoreCheckpoint(cfg.checkpoint_path)
    try:
        assert cp.physic_msg_timestamp == clock()
        assert cp.logics_msg_timestamp == clock() and cp.index_msg_timestamp == clock()
    finally:
        cp.close()


def test_logics_flush_thread_advances_checkpoint(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any
) -> None:
    cfg = store_config(flush_consume_queue_thorough_interval=0, flush_commit_log_thorough_interval=0)
    store = open_store(cfg)
    store.put_message(msg())
    cp = store.checkpoint
    assert cp is not None
    assert _wait_true(lambda: cp.logics_msg_timestamp == clock() and cp.physic_msg_timestamp == clock())
