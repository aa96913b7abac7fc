"""Periodic config writes off the event loop: BackgroundWriter and the consumer-offset snapshot."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import orjson
import pytest

from rocketq.broker.managers import persist
from rocketq.broker.managers.offset_manager import ConsumerOffsetManager
from rocketq.broker.managers.persist import BackgroundWriter, read_json


async def test_writes_run_on_one_thread_off_the_loop_one_at_a_time(tmp_path: Path) -> None:
    writer = BackgroundWriter()
    loop_thread = threading.get_ident()
    threads: set[int] = set()
    running = [0]
    overlap = [False]

    def build(i: int) -> dict[str, int]:
        threads.add(threading.get_ident())
        running[0] += 1
        overlap[0] |= running[0] > 1
        time.sleep(0.01)
        running[0] -= 1
        return {"n": i}

    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    futs = [writer.submit(paths[i % 2], lambda i=i: build(i)) for i in range(6)]
    assert writer.busy(paths[0])
    await asyncio.gather(*futs)
    writer.close()
    assert loop_thread not in threads and len(threads) == 1
    assert not overlap[0]
    assert read_json(paths[0]) == {"n": 4} and read_json(paths[1]) == {"n": 5}  # in submission order
    assert read_json(paths[0].with_name("a.json.bak")) == {"n": 2}  # the previous version is kept
    assert not paths[0].with_name("a.json.tmp").exists()
    assert not writer.busy(paths[0])


async def test_drain_waits_for_a_write_whose_waiter_was_cancelled(tmp_path: Path) -> None:
    writer = BackgroundWriter()
    path = tmp_path / "slow.json"
    started = threading.Event()

    def slow() -> dict[str, str]:
        started.set()
        time.sleep(0.1)
        return {"v": "done"}

    waiter = asyncio.create_task(writer.write(path, slow))
    await asyncio.to_thread(started.wait, 5)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    writer.drain()  # the write itself goes on; drain returns once it is on disk
    assert read_json(path) == {"v": "done"}
    writer.close()


async def test_offsets_snapshot_is_taken_on_the_loop_and_written_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    om = ConsumerOffsetManager(tmp_path)
    writer = BackgroundWriter()
    assert not await om.persist_in_background(writer)  # nothing committed: nothing written
    om.commit("g", "T", 0, 5)
    gate = threading.Event()
    writing = threading.Event()
    original = persist.write_json_atomic

    def gated(path: Path, obj: object) -> None:
        writing.set()
        gate.wait(5)
        original(path, obj)

    monkeypatch.setattr(persist, "write_json_atomic", gated)
    persist_task = asyncio.create_task(om.persist_in_background(writer))
    await asyncio.to_thread(writing.wait, 5)
    assert writer.busy(om.path)
    assert not await om.persist_in_background(writer)  # one write of a file at a time: this round skips
    om.commit("g", "T", 0, 6)  # the loop is free while the write is held up; not in the snapshot
    gate.set()
    assert await persist_task
    raw = orjson.loads((tmp_path / "consumerOffset.json").read_bytes())
    assert raw == {"offsetTable": {"T@g": {"0": 5}}}
    assert await om.persist_in_background(writer)  # the later commit made it dirty again
    assert orjson.loads((tmp_path / "consumerOffset.json").read_bytes()) == {"offsetTable": {"T@g": {"0": 6}}}
    assert not await om.persist_in_background(writer)
    writer.close()


async def test_failed_background_write_leaves_offsets_dirty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    om = ConsumerOffsetManager(tmp_path)
    writer = BackgroundWriter()
    om.commit("g", "T", 0, 1)

    def broken(path: Path, obj: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(persist, "write_json_atomic", broken)
    with pytest.raises(OSError):
        await om.persist_in_background(writer)
    monkeypatch.undo()
    assert await om.persist_in_background(writer)  # retried on the next round
    assert ConsumerOffsetManager.encode_table(om.table) == orjson.loads((tmp_path / "consumerOffset.json").read_bytes())
    writer.close()
