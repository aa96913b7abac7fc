"""The Redis peer's page-cache recycling of its append-only files (the counterpart of ``commitLogCachedBytes``)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, cast

from rocketq.bench import redis_streams
from rocketq.bench.redis_streams import RedisServer, evict_file_behind
from rocketq.testing.pagecache import cached_pages

KIB = 1024


def _written(path: Path, size: int) -> None:
    """Appended 1 KiB at a time, as Redis appends (one large write would land in large folios, which a partial
    eviction cannot split)."""
    with open(path, "wb") as f:
        for _ in range(size // KIB):
            f.write(os.urandom(KIB))
        f.flush()
        os.fsync(f.fileno())  # clean pages: the only ones the kernel evicts
    assert all(cached_pages(str(path)))


def test_pages_behind_the_kept_tail_leave_the_page_cache(tmp_path: Path) -> None:
    path = tmp_path / "appendonly.aof"
    _written(path, 1024 * KIB)
    assert evict_file_behind(str(path), 256 * KIB) == 768 * KIB
    cached = cached_pages(str(path))
    assert not any(cached[:192]) and all(cached[192:])
    assert path.read_bytes() and len(path.read_bytes()) == 1024 * KIB  # nothing lost: read back from the disk
    assert evict_file_behind(str(path), 2048 * KIB) == 0  # shorter than what is kept
    assert evict_file_behind(str(tmp_path / "gone.aof"), 0) == 0  # a file removed by a rewrite


async def test_the_recycler_evicts_every_aof_file_under_the_directory(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "appendonlydir").mkdir()
    files = [tmp_path / "appendonlydir" / name for name in ("a.1.base.aof", "a.1.incr.aof")]
    for f in files:
        _written(f, 512 * KIB)
    monkeypatch.setattr(redis_streams, "_RECYCLE_INTERVAL", 0.001)
    server = RedisServer(0, tmp_path, cast(Any, None))
    task = asyncio.create_task(redis_streams._recycle_aof(server, 128 * KIB))
    try:
        async with asyncio.timeout(10):
            while server.aof_evicted < 2 * 384 * KIB:
                await asyncio.sleep(0.005)
    finally:
        task.cancel()
    for f in files:
        assert not any(cached_pages(str(f))[:96])
