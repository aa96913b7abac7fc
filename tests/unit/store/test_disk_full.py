"""A full disk, injected: a failed allocation is an error (never a sparse file), the headroom refuses writes
before the space is gone, the flag clears by itself when space returns, and the forced clean-up is loud."""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rocketq.protocol.message import decode_record
from rocketq.store import GetMessageStatus, MessageStore, PutMessageStatus, StoreConfig, StoreMessage
from rocketq.store import mapped_file_queue as mfq_module
from rocketq.store import warm as warm_module
from rocketq.store.disk import DiskGuard
from rocketq.store.running_flags import RunningFlags
from rocketq.store.warm import PageWarmer

MsgFactory = Callable[..., StoreMessage]
StoreFactory = Callable[..., MessageStore]
FILE = 4096
MIN_FREE = 1_000_000


class Free:
    """An injected free-space probe (bytes)."""

    def __init__(self, free: int = 10**12) -> None:
        self.free = free
        self.calls = 0

    def __call__(self, path: str) -> int:
        self.calls += 1
        return self.free


class Fallocate:
    """``os.posix_fallocate`` that fails with ``error`` while set (and records its calls)."""

    def __init__(self, real: Callable[[int, int, int], None]) -> None:
        self.real = real
        self.error: int | None = None
        self.calls = 0

    def __call__(self, fd: int, offset: int, length: int) -> None:
        self.calls += 1
        if self.error is not None:
            raise OSError(self.error, os.strerror(self.error))
        self.real(fd, offset, length)


@pytest.fixture
def fallocate(monkeypatch: pytest.MonkeyPatch) -> Fallocate:
    fake = Fallocate(os.posix_fallocate)
    monkeypatch.setattr(os, "posix_fallocate", fake)
    return fake


def _config(store_config: Callable[..., StoreConfig], **kw: Any) -> StoreConfig:
    return store_config(disk_min_free_bytes=MIN_FREE, **kw)


def _fill_file(store: MessageStore, msg: MsgFactory) -> list[int]:
    """Append until the next message needs a new commit-log file; returns the queue offsets stored."""
    stored = []
    mfq = store.commit_log.mfq
    for i in range(100):
        last = mfq.last()
        if last is not None and last.remaining < 600:
            return stored
        r = store.put_message(msg(body=bytes([i % 256]) * 300))
        assert r.is_ok and r.append_result is not None
        stored.append(r.append_result.logics_offset)
    raise AssertionError("the commit-log file never filled")


def _bodies(store: MessageStore, n: int) -> list[bytes]:
    r = store.get_message("T", 0, 0, n)
    try:
        assert r.status is GetMessageStatus.FOUND
        return [decode_record(v).body for v in r.message_views]
    finally:
        r.release()


def _files(store: MessageStore) -> list[str]:
    return sorted(os.listdir(store.config.commit_log_dir))


def test_failed_allocation_refuses_the_append_and_leaves_no_file(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, fallocate: Fallocate
) -> None:
    free = Free()
    store = open_store(_config(store_config), disk_free=free)
    stored = _fill_file(store, msg)
    files = _files(store)
    fallocate.error = errno.ENOSPC
    r = store.put_message(msg(body=b"x" * 700))  # needs the next file
    assert r.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert fallocate.calls >= 1
    assert _files(store) == files  # neither the new file nor its .tmp is left
    assert store.is_disk_full()
    assert store.put_message(msg(body=b"y")).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    # reads go on, and every acknowledged message is there
    assert len(_bodies(store, 100)) == len(stored)
    # space returns: the next check clears the flag and the append that rolls goes through
    fallocate.error = None
    assert store.disk_guard.check()
    r = store.put_message(msg(body=b"z" * 700))
    assert r.is_ok
    new = [f for f in _files(store) if f not in files]
    assert len(new) == 1
    st = os.stat(os.path.join(store.config.commit_log_dir, new[0]))
    assert st.st_blocks * 512 >= FILE  # reserved, not sparse
    assert _bodies(store, 100)[-1] == b"z" * 700


def test_other_allocation_errors_answer_create_mapped_file_failed(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, fallocate: Fallocate
) -> None:
    store = open_store(_config(store_config), disk_free=Free())
    _fill_file(store, msg)
    files = _files(store)
    fallocate.error = errno.EIO
    assert store.put_message(msg(body=b"x" * 700)).status is PutMessageStatus.CREATE_MAPEDFILE_FAILED
    assert not store.is_disk_full() and _files(store) == files
    fallocate.error = None
    assert store.put_message(msg(body=b"x" * 700)).is_ok


def test_run_of_plain_messages_is_refused_at_the_roll(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, fallocate: Fallocate
) -> None:
    store = open_store(_config(store_config), disk_free=Free())
    _fill_file(store, msg)
    fallocate.error = errno.ENOSPC
    plain = ("T", 0, b"p" * 700, b"", 0, 0, 1, ("10.0.0.1", 5000), 0, None, None, None)
    out = store.put_plain_messages([plain, plain], ("10.0.0.2", 10911))
    assert out == [PutMessageStatus.SERVICE_NOT_AVAILABLE] * 2


def test_headroom_refuses_writes_before_the_space_is_gone_and_resumes(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, fallocate: Fallocate
) -> None:
    free = Free()
    store = open_store(_config(store_config), disk_free=free)
    assert store.put_message(msg()).is_ok
    free.free = MIN_FREE - 1
    assert not store.disk_guard.check()
    assert store.put_message(msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert store.runtime_info()["storeDiskFull"] == "true"
    assert store.runtime_info()["storeDiskFreeBytes"] == str(MIN_FREE - 1)
    assert len(_bodies(store, 10)) == 1
    free.free = MIN_FREE
    assert store.disk_guard.check()
    assert store.put_message(msg()).is_ok
    assert store.runtime_info()["storeDiskFull"] == "false"


def test_roll_needs_room_for_the_file_and_the_headroom(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, fallocate: Fallocate
) -> None:
    free = Free()
    store = open_store(_config(store_config), disk_free=free)
    _fill_file(store, msg)
    files = _files(store)
    calls = fallocate.calls
    free.free = MIN_FREE + FILE - 1  # the headroom is there, but not after one more file
    assert store.put_message(msg(body=b"x" * 700)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert fallocate.calls == calls and _files(store) == files  # refused before allocating anything
    assert store.is_disk_full()
    assert not store.disk_guard.check()  # still not enough for the file the writer waits for
    free.free = MIN_FREE + FILE
    assert store.disk_guard.check()
    assert store.put_message(msg(body=b"x" * 700)).is_ok
    assert len(_files(store)) == len(files) + 1


def test_disk_thread_notices_without_any_append(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    free = Free()
    store = open_store(_config(store_config, disk_check_interval=10), disk_free=free)
    free.free = 0
    deadline = time.monotonic() + 20
    while not store.is_disk_full() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.is_disk_full()
    free.free = 10**12
    while store.is_disk_full() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not store.is_disk_full()
    assert store.put_message(msg()).is_ok


def test_a_store_opened_on_a_full_disk_refuses_the_first_write(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory
) -> None:
    store = open_store(_config(store_config), disk_free=Free(10))
    assert store.put_message(msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_ratio_and_headroom_both_hold_the_flag(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any
) -> None:
    free = Free()
    ratio = [0.95]
    hour = f"{(time.localtime(clock() / 1000).tm_hour + 12) % 24:02d}"
    store = open_store(_config(store_config, delete_when=hour), disk_free=free, disk_usage=lambda p: ratio[0])
    store.run_cleanup()
    assert store.is_disk_full()
    free.free = 0
    store.disk_guard.check()
    ratio[0] = 0.5
    store.run_cleanup()
    assert store.is_disk_full()  # the ratio is fine, the free bytes are not
    free.free = 10**12
    store.disk_guard.check()
    assert not store.is_disk_full()
    assert store.put_message(msg()).is_ok


def test_forced_cleanup_is_loud_and_counted(
    open_store: StoreFactory,
    store_config: Callable[..., StoreConfig],
    msg: MsgFactory,
    clock: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ratio = [0.1]
    hour = f"{(time.localtime(clock() / 1000).tm_hour + 12) % 24:02d}"
    store = open_store(_config(store_config, delete_when=hour), disk_free=Free(), disk_usage=lambda p: ratio[0])
    for i in range(30):
        assert store.put_message(msg(body=bytes([i]) * 300)).is_ok
    n_files = len(store.commit_log.mfq.mapped_files)
    info = store.runtime_info()
    assert (info["storeForcedCleanFiles"], info["storeForcedCleanBytes"]) == ("0", "0")
    ratio[0] = 0.87  # above the clean-forcibly level: unexpired files go
    with caplog.at_level(logging.WARNING, logger="rocketq.store.cleanup"):
        report = store.run_cleanup()
    assert report.commit_log_files_deleted == n_files - 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "forced_cleanup" in r.getMessage()]
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    assert f"DELETED {n_files - 1} commit-log files ({(n_files - 1) * FILE} bytes)" in text
    assert "disk used 87.0% > diskMaxUsedSpaceRatio 75%" in text
    info = store.runtime_info()
    assert info["storeForcedCleanFiles"] == str(n_files - 1)
    assert info["storeForcedCleanBytes"] == str((n_files - 1) * FILE)
    assert info["storeForcedCleanLastRatio"] == "0.8700"
    assert info["storeForcedCleanLastTimeStamp"] == str(clock())
    assert not store.is_disk_full()  # below the warning level: writes go on
    assert store.put_message(msg()).is_ok


def test_expired_files_deleted_at_the_hour_are_not_forced(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, clock: Any
) -> None:
    hour = f"{(time.localtime(clock() / 1000).tm_hour + 1) % 24:02d}"
    store = open_store(_config(store_config, delete_when=hour, file_reserved_time=1), disk_free=Free())
    for i in range(30):
        assert store.put_message(msg(body=bytes([i]) * 300)).is_ok
    clock.advance(3_600_000)
    assert store.run_cleanup().commit_log_files_deleted >= 2
    assert store.cleanup_service.forced.files == 0


def test_consume_queue_file_failure_keeps_the_message_for_the_restart(
    store_config: Callable[..., StoreConfig], msg: MsgFactory, monkeypatch: pytest.MonkeyPatch, clock: Any
) -> None:
    """A consume-queue file that cannot be created: dispatch does not crash, writes stop (Java's logics-queue
    error), the message stays acknowledged, and the restart re-dispatches it from the commit log."""
    cfg = _config(store_config)
    store = MessageStore(cfg, clock=clock, disk_free=Free())
    assert store.load()
    store.start()
    try:
        assert store.put_message(msg(queue_id=0)).is_ok
        real = mfq_module.MappedFileQueue._allocate

        def allocate(self: mfq_module.MappedFileQueue, offset: int) -> str:
            if self.guard is None:  # a consume queue's (the commit log's queue has the guard)
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(self, offset)

        monkeypatch.setattr(mfq_module.MappedFileQueue, "_allocate", allocate)
        r = store.put_message(msg(queue_id=1, body=b"acked"))
        assert r.is_ok  # in the commit log: acknowledged, as Java acknowledges before its dispatch
        assert store.put_message(msg(queue_id=0)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        monkeypatch.setattr(mfq_module.MappedFileQueue, "_allocate", real)
    finally:
        store.shutdown()
    assert os.path.exists(cfg.abort_path)  # the restart must recover, not trust the queues
    again = MessageStore(cfg, clock=clock, disk_free=Free())
    assert again.load()
    again.start()
    try:
        r2 = again.get_message("T", 1, 0, 10)
        assert r2.status is GetMessageStatus.FOUND
        assert [decode_record(v).body for v in r2.message_views] == [b"acked"]
        r2.release()
        assert again.put_message(msg(queue_id=1)).is_ok
    finally:
        again.shutdown()


def test_warmer_survives_pages_it_cannot_populate(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(_config(store_config), disk_free=Free())
    assert store.put_message(msg()).is_ok

    def fail(mm: object, start: int, length: int) -> bool:
        raise OSError(errno.EFAULT, "Bad address")

    monkeypatch.setattr(warm_module, "populate_write", fail)
    warmer = PageWarmer(store.commit_log.mfq, FILE, 0)
    warmer.run_once()
    last = store.commit_log.mfq.last()
    assert last is not None and last.warmed_position == last.file_size  # given up on this file only
    assert not warmer.is_stopped
    assert store.put_message(msg()).is_ok


def test_real_enospc_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1 MiB tmpfs (as root; otherwise an injected ENOSPC) cannot hold a 2 MiB file: an error, no file."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    mounted = os.geteuid() == 0
    if mounted:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    else:
        fake = Fallocate(os.posix_fallocate)
        fake.error = errno.ENOSPC
        monkeypatch.setattr(os, "posix_fallocate", fake)
    try:
        flags = RunningFlags()
        guard = DiskGuard(StoreConfig(store_path_root_dir=str(mount), disk_min_free_bytes=0), flags, Free())
        queue = mfq_module.MappedFileQueue(str(mount / "commitlog"), 2 * 1024 * 1024, preallocate=True, guard=guard)
        with pytest.raises(OSError) as raised:
            queue.last_for_write()
        assert raised.value.errno == errno.ENOSPC
        assert os.listdir(mount / "commitlog") == [] and queue.mapped_files == []
        assert flags.is_disk_full()
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(mount)], check=False)


def test_index_file_failure_at_a_query_refuses_writes_without_an_exception(
    open_store: StoreFactory, store_config: Callable[..., StoreConfig], msg: MsgFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(_config(store_config), disk_free=Free())
    assert store.put_message(msg(properties={"KEYS": "k1"})).is_ok
    index = store.index
    assert index is not None and index.pending_entries

    def no_space() -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(index, "write_pending", no_space)
    assert store.query_message("T", "k1", 10, 0, 2**62) == []  # answered, not raised
    assert store.put_message(msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert store.flags.bits & 8  # Java's WRITE_INDEX_FILE_ERROR
    assert len(_bodies(store, 10)) == 1  # reads go on


def test_disk_util_is_java_text(open_store: StoreFactory, store_config: Callable[..., StoreConfig]) -> None:
    store = open_store(_config(store_config), disk_free=Free(), disk_usage=lambda p: 0.9)
    assert store.disk_util() == "CL:  0.90 CQ:  0.90 INDEX:  0.90"  # Java's String.format("CL: %5.2f ...")
