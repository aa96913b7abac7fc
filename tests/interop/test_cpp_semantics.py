"""Apache C++ client against our broker: delay levels, tag subscriptions, retries after RECONSUME_LATER."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cppharness import Driver, create_topic, start_driver, wait_until  # type: ignore[import-not-found]

from rocketq.testing import EmbeddedCluster

FAST = {"messageDelayLevel": "1s 1s 2s 1s 1s 1s 1s 1s", "scheduleIntervalMills": 50}


@pytest.fixture
async def fast_cluster(tmp_path: Path) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path / "cluster", **FAST) as c:
        yield c


def joined(cluster: EmbeddedCluster, group: str) -> bool:
    info = cluster.broker.consumers.get(group)
    return info is not None and len(info.channels) > 0


async def test_delay_level_and_tag_subscription(
    fast_cluster: EmbeddedCluster, drivers: list[Driver], tmp_path: Path
) -> None:
    ns = fast_cluster.namesrv_addr
    await create_topic(fast_cluster, "DelayTopic")
    consumer = await start_driver(
        "push-consume", "--topic", "DelayTopic", "--group", "G_TAGS", "--tags", "TagA", "--expect", "10",
        "--linger", "1.5", "--timeout", "60", namesrv=ns, home=tmp_path / "c",
    )  # fmt: skip
    drivers.append(consumer)
    await asyncio.wait_for(consumer.started.wait(), 30)
    await wait_until(lambda: joined(fast_cluster, "G_TAGS"), 30, "the consumer to join")
    producer = await start_driver(
        "produce", "--topic", "DelayTopic", "--group", "PG_D", "--count", "20", "--tags", "TagA,TagB",
        "--delay-level", "3", "--timeout", "60", namesrv=ns, home=tmp_path / "p",
    )  # fmt: skip
    drivers.append(producer)
    assert await producer.wait(90) == 0, producer.lines[-5:]
    sent_at = {m["msg_id"]: m for m in producer.messages}
    assert len(sent_at) == 20
    assert await consumer.wait(90) == 0, consumer.lines[-5:]
    got = consumer.messages
    assert {m["tags"] for m in got} == {"TagA"}
    assert len({m["msg_id"] for m in got}) == 10
    for m in got:
        # Level 3 is 2 s here: stored late enough, and re-put to its real topic.
        assert m["store_timestamp"] - m["born_timestamp"] >= 2000
        assert m["topic"] == "DelayTopic"


async def test_reconsume_later_redelivers_with_higher_count(
    fast_cluster: EmbeddedCluster, drivers: list[Driver], tmp_path: Path
) -> None:
    ns = fast_cluster.namesrv_addr
    await create_topic(fast_cluster, "RetryTopic")
    consumer = await start_driver(
        "push-consume", "--topic", "RetryTopic", "--group", "G_RETRY", "--expect", "0", "--timeout", "60",
        "--reconsume-later-first", "5", "--batch-max", "1", namesrv=ns, home=tmp_path / "c",
    )  # fmt: skip
    drivers.append(consumer)
    await asyncio.wait_for(consumer.started.wait(), 30)
    await wait_until(lambda: joined(fast_cluster, "G_RETRY"), 30, "the consumer to join")
    producer = await start_driver(
        "produce", "--topic", "RetryTopic", "--group", "PG_R", "--count", "5", "--body", "retry-{i}",
        "--timeout", "60", namesrv=ns, home=tmp_path / "p",
    )  # fmt: skip
    drivers.append(producer)
    assert await producer.wait(90) == 0, producer.lines[-5:]
    ids = {m["msg_id"] for m in producer.messages}

    def redelivered() -> bool:
        again = [m for m in consumer.messages if m["reconsume_times"] >= 1 and m["msg_id"] in ids]
        return {m["msg_id"] for m in again} == ids

    await wait_until(redelivered, 60, "every message to come back after RECONSUME_LATER")
    first = [m for m in consumer.messages if m["reconsume_times"] == 0]
    again = [m for m in consumer.messages if m["reconsume_times"] >= 1]
    assert {m["msg_id"] for m in first} == ids
    assert all(m["topic"] == "RetryTopic" for m in again)  # restored from RETRY_TOPIC by the client
    assert {m["body"] for m in again} == {f"retry-{i}" for i in range(5)}
