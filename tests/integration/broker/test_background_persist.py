"""Periodic config files (consumer offsets, delay-level and timer progress) are written off the event loop."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from rocketq.broker.managers import persist
from rocketq.broker.managers.persist import read_json
from rocketq.codes import RequestCode
from rocketq.protocol.bodies import LockBatchBody, MessageQueue, decode_lock_ok
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire

FAST = {"consumerOffsetPersistIntervalMills": 100, "messageDelayLevel": "1s 1s", "scheduleIntervalMills": 50}


@pytest.mark.parametrize("cluster", [FAST], indirect=True)
async def test_periodic_writes_happen_on_the_persister_thread(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    writes: list[tuple[str, int]] = []
    original = persist.write_json_atomic

    def recording(path: Path, obj: object) -> None:
        writes.append((path.name, threading.get_ident()))
        original(path, obj)

    monkeypatch.setattr(persist, "write_json_atomic", recording)
    q = {"consumerGroup": "gb", "topic": "TBg", "queueId": "0"}
    assert (await wire.send("TBg", b"x")).code == 0
    assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, {**q, "commitOffset": "1"})).code == 0
    assert (await wire.send("TBg", b"later", props={"DELAY": "1"})).code == 0
    wanted = {"consumerOffset.json", "delayOffset.json", "timerProgress.json"}
    async with asyncio.timeout(10):
        while not {"consumerOffset.json", "delayOffset.json"} <= {name for name, _ in writes}:
            await asyncio.sleep(0.05)
    assert all(thread != loop_thread for name, thread in writes if name in wanted)

    # shutdown waits for background writes, then writes the final state synchronously; it survives a restart
    assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, {**q, "commitOffset": "2"})).code == 0
    broker = await cluster.restart_broker()
    assert broker.offsets.query("gb", "TBg", 0) == 2
    assert broker.schedule.offsets.get(1, 0) >= 1


async def test_lock_is_answered_after_its_write_which_does_not_block_the_loop(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    writing = threading.Event()
    original = persist.write_json_atomic

    def gated(path: Path, obj: object) -> None:
        if path.name == "queueLocks.json":
            writing.set()
            gate.wait(5)
        original(path, obj)

    # the topic exists first: a send that creates its topic waits for topics.json, written on the same thread
    assert (await wire.send("TLock", b"create the topic")).code == 0
    monkeypatch.setattr(persist, "write_json_atomic", gated)
    mqs = [MessageQueue("TLock", "broker-a", 0)]
    lock = asyncio.create_task(wire.call(RequestCode.LOCK_BATCH_MQ, body=LockBatchBody("og", "A", mqs).encode()))
    await asyncio.to_thread(writing.wait, 5)
    assert (await wire.send("TLock", b"the loop is free while the lock file is written")).code == 0
    await asyncio.sleep(0.05)
    assert not lock.done()  # not answered before the lock table is on disk
    gate.set()
    assert decode_lock_ok((await lock).body) == mqs
    saved = read_json(cluster.broker.locks.path)
    assert saved is not None and [e["clientId"] for e in saved["locks"]] == ["A"]
