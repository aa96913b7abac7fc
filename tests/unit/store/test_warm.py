"""Pre-faulting the commit log ahead of the writer: pages are populated, their bytes never change."""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from rocketq.store import MessageStore, StoreConfig, StoreMessage, _appendcodec_py, appendcodec
from rocketq.store.config import ConfigError
from rocketq.store.reader import total_physical_memory
from rocketq.store.warm import PageWarmer
from rocketq.testing.pagecache import cached_pages

TWINS: list[ModuleType] = [_appendcodec_py] + ([appendcodec.compiled] if appendcodec.compiled is not None else [])


@pytest.mark.parametrize("twin", TWINS, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
def test_populate_write_keeps_the_bytes(twin: ModuleType, tmp_path: Any) -> None:
    path = tmp_path / "f"
    data = os.urandom(256 * 1024)
    path.write_bytes(data)
    with open(path, "r+b") as f:
        mm = mmap.mmap(f.fileno(), len(data))
        try:
            assert twin.populate_write(mm, 1000, 100_000) in (True, False)
            assert twin.populate_write(mm, 200_000, 10**9) in (True, False)  # clamped to the mapping
            assert mm[:] == data
        finally:
            mm.close()
    assert path.read_bytes() == data


def test_the_warmer_runs_ahead_of_the_writer(
    store_config: Callable[..., StoreConfig], open_store: Callable[..., MessageStore]
) -> None:
    cfg = store_config(mapped_file_size_commit_log=1024 * 1024, warm_ahead_bytes=256 * 1024, warm_ahead_interval_ms=1)
    store = open_store(cfg)
    offsets = []
    for i in range(50):
        r = store.put_message(StoreMessage(topic="W", body=b"%d" % i * 100, properties={"KEYS": f"k{i}"}))
        assert r.is_ok and r.append_result is not None
        offsets.append(r.append_result.wrote_offset)
    mf = store.commit_log.mfq.last()
    assert mf is not None
    deadline = time.monotonic() + 10
    ahead = 256 * 1024 * 3 // 4  # it tops up once the writer has used a quarter of the window
    while mf.warmed_position < mf.wrote_position + ahead and time.monotonic() < deadline:
        time.sleep(0.01)
    if not appendcodec.populate_write(mmap.mmap(-1, 4096), 0, 4096):
        pytest.fail("this kernel lacks MADV_POPULATE_WRITE: the warmer cannot be exercised here")
    assert mf.warmed_position >= mf.wrote_position + ahead
    for i, off in enumerate(offsets):  # what was written before and during warming reads back unchanged
        rec = store.look_message_by_offset(off)
        assert rec is not None and rec.body == b"%d" % i * 100


def _fill(store: MessageStore, count: int) -> list[int]:
    offsets = []
    for i in range(count):
        r = store.put_message(StoreMessage(topic="R", body=(b"%06d" % i) * 170))
        assert r.is_ok and r.append_result is not None
        offsets.append(r.append_result.wrote_offset)
    return offsets


def test_evicting_behind_the_writer_drops_flushed_pages_only_and_loses_nothing(
    store_config: Callable[..., StoreConfig], open_store: Callable[..., MessageStore]
) -> None:
    mib = 1024 * 1024
    cfg = store_config(mapped_file_size_commit_log=4 * mib, warm_ahead_bytes=0, flush_interval_commit_log=60_000)
    store = open_store(cfg)
    mfq = store.commit_log.mfq
    warmer = PageWarmer(mfq, 0, 10, keep_behind=mib)  # driven by hand here: never started
    offsets = _fill(store, 5500)  # ~5.6 MiB: two files
    assert mfq.flushed_where == 0
    assert warmer.evict_behind(10**9) == 0  # nothing flushed yet: nothing is evicted
    first, second = mfq.mapped_files
    assert all(cached_pages(first.path)[:256])  # just written: cached
    mfq.flush_all()
    # whole 2 MiB folios only (the kernel keeps a folio a range does not cover whole): a small budget takes one
    assert warmer.evict_behind(64 * 1024) == 2 * mib
    assert warmer.evict_behind(10**9) == 2 * mib  # the rest of the first file, to its end
    assert warmer.evict_behind(10**9) == 0  # less than a folio of the second file lies behind the window
    assert not any(cached_pages(first.path))
    assert all(cached_pages(second.path)[: (mfq.get_max_offset() - 4 * mib) // 4096])  # the window stays
    offsets += _fill(store, 2000)
    mfq.flush_all()
    assert warmer.evict_behind(10**9) == 2 * mib
    cached = cached_pages(second.path)
    assert not any(cached[:512]) and all(cached[512 : (mfq.get_max_offset() - 4 * mib) // 4096])
    bodies = [(b"%06d" % i) * 170 for i in [*range(5500), *range(2000)]]
    for off, body in zip(offsets, bodies, strict=True):  # evicted pages read back from the disk, unchanged
        rec = store.look_message_by_offset(off)
        assert rec is not None and rec.body == body


def test_a_running_warmer_recycles_what_lies_behind_the_window(
    store_config: Callable[..., StoreConfig], open_store: Callable[..., MessageStore]
) -> None:
    cfg = store_config(
        mapped_file_size_commit_log=1024 * 1024, warm_ahead_bytes=128 * 1024, warm_ahead_interval_ms=1,
        commit_log_cached_bytes=128 * 1024, flush_interval_commit_log=5,
    )  # fmt: skip
    store = open_store(cfg)
    offsets = _fill(store, 2500)  # ~2.5 MiB over three files
    warmer = store._warmer
    assert warmer is not None and warmer.keep_behind == 128 * 1024
    deadline = time.monotonic() + 10
    while warmer.evicted == 0 and time.monotonic() < deadline:
        _fill(store, 50)  # the warmer evicts only as it populates ahead of a writer
        time.sleep(0.01)
    assert warmer.evicted > 0
    for i, off in enumerate(offsets):
        rec = store.look_message_by_offset(off)
        assert rec is not None and rec.body == (b"%06d" % i) * 170


def test_the_cached_window_defaults_to_the_in_memory_boundary(
    store_config: Callable[..., StoreConfig], open_store: Callable[..., MessageStore]
) -> None:
    store = open_store(store_config(mapped_file_size_commit_log=1024 * 1024, access_message_in_memory_max_ratio=10))
    assert store._warmer is not None and store._warmer.keep_behind == total_physical_memory() // 10
    with pytest.raises(ConfigError, match="commit_log_cached_bytes"):
        store_config(commit_log_cached_bytes=-2)
