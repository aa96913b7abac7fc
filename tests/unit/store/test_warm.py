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
