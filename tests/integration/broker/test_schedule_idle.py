"""The delay-level and timer tasks do not poll an idle broker: they read their topic only when woken by a put or
when a scheduled message is due (issue 20 item 7: an idle broker showed ~180 getMissTps from its polling)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketq.broker.managers.topic_manager import SCHEDULE_TOPIC
from rocketq.broker.services.timer import TIMER_TOPIC
from rocketq.codes import ResponseCode
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire, records

FAST_DELAYS = {"messageDelayLevel": "1s 1s 1s", "scheduleIntervalMills": 50}


def count_schedule_reads(cluster: EmbeddedCluster) -> list[int]:
    """Wrap the store's get_message: the returned list's length is how often SCHEDULE_TOPIC_XXXX was read."""
    store = cluster.broker.store
    real = store.get_message
    reads: list[int] = []

    def counting(topic: str, queue_id: int, *args: Any, **kwargs: Any) -> Any:
        if topic == SCHEDULE_TOPIC:
            reads.append(queue_id)
        return real(topic, queue_id, *args, **kwargs)

    store.get_message = counting  # type: ignore[method-assign]
    return reads


async def quiet_for(reads: list[int], seconds: float) -> int:
    """How many schedule reads happen over ``seconds`` (the old task read 3 levels every 50 ms here)."""
    before = len(reads)
    await asyncio.sleep(seconds)
    return len(reads) - before


@pytest.mark.parametrize("cluster", [FAST_DELAYS], indirect=True)
async def test_the_delay_task_sleeps_until_a_put_wakes_it(cluster: EmbeddedCluster, wire: Wire) -> None:
    reads = count_schedule_reads(cluster)
    schedule = cluster.broker.schedule
    # the task's first pass (at start) may or may not have run before the wrap: either way, nothing to read now
    assert await quiet_for(reads, 0.6) == 0
    assert cluster.broker.store.stats().get_message_miss_times == 0  # and its reads are not counted as client gets

    assert (await wire.send("TIdle", b"later", props={"DELAY": "2"})).code == ResponseCode.SUCCESS
    async with asyncio.timeout(20):  # the put woke the task, which sleeps until the message is due
        while True:
            got = records(await wire.pull("TIdle", 0, 0))
            if got:
                break
            await asyncio.sleep(0.1)
    assert [m.body for m in got] == [b"later"] and "DELAY" not in got[0].properties
    assert reads  # it did read its queue once woken

    async with asyncio.timeout(20):  # the progress is saved (at most once a second), then it goes quiet
        while schedule.offsets.get(2) != 1 or schedule._dirty:
            await asyncio.sleep(0.1)
    await asyncio.sleep(0.2)  # the pass that saved it returns to its wait
    misses = cluster.broker.store.stats().get_message_miss_times
    assert await quiet_for(reads, 0.6) == 0
    assert cluster.broker.store.stats().get_message_miss_times == misses


async def test_the_timer_task_sleeps_until_a_put_wakes_it(cluster: EmbeddedCluster, wire: Wire) -> None:
    store = cluster.broker.store
    real = store.get_message
    reads: list[int] = []

    def counting(topic: str, queue_id: int, *args: Any, **kwargs: Any) -> Any:
        if topic == TIMER_TOPIC:
            reads.append(queue_id)
        return real(topic, queue_id, *args, **kwargs)

    store.get_message = counting  # type: ignore[method-assign]
    timers = cluster.broker.timers
    for body in (b"first", b"second"):  # the second finds the timer topic there and the task asleep
        assert (await wire.send("TTimed", body, props={"TIMER_DELAY_MS": "300"})).code == ResponseCode.SUCCESS
        async with asyncio.timeout(20):
            while body not in [m.body for m in records(await wire.pull("TTimed", 0, 0))]:
                await asyncio.sleep(0.1)
        async with asyncio.timeout(20):  # progress saved (at most once a second), then it goes quiet
            while timers.pending() or timers._dirty:
                await asyncio.sleep(0.1)
        await asyncio.sleep(0.2)
        assert reads and await quiet_for(reads, 0.6) == 0
