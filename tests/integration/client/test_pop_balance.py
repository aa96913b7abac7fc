"""Message-level load balancing with rocketq's own SimpleConsumers: four consumers share one queue, each message
goes to exactly one of them while acknowledged; an unacknowledged one comes back after its invisible time with
delivery attempt + 1; past the group's max attempts it is in the group's DLQ. (The same with 5.x gRPC clients
mixed in: tests/interop/v5.)"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from rocketq.client import AdminClient, Message, Producer
from rocketq.client.simple_consumer import MessageView, SimpleConsumer
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")
WAIT = 30.0  # a bound on waiting, not a threshold


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def cluster() -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(reviveInterval=50) as c:
        yield c


async def one_queue_topic(cluster: EmbeddedCluster, bodies: list[bytes]) -> str:
    topic = f"Bal-{uuid.uuid4().hex[:8]}"
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, cluster=cluster.broker.config.brokerClusterName, read_queue_nums=1,
                                 write_queue_nums=1)  # fmt: skip
    async with Producer("bal-pg", namesrv_addr=cluster.namesrv_addr) as producer:
        for body in bodies:
            await producer.send(Message(topic, body))
    return topic


def consumers(cluster: EmbeddedCluster, group: str, topic: str, n: int) -> list[SimpleConsumer]:
    return [SimpleConsumer(group, namesrv_addr=cluster.namesrv_addr, subscriptions={topic: "*"},
                           await_duration=0.5, invisible_duration=30.0) for _ in range(n)]  # fmt: skip


async def test_four_consumers_share_one_queue_each_message_once(cluster: EmbeddedCluster) -> None:
    bodies = [f"b{i}".encode() for i in range(60)]
    topic = await one_queue_topic(cluster, bodies)
    group = f"bal-{uuid.uuid4().hex[:6]}"
    crowd = consumers(cluster, group, topic, 4)
    got: dict[int, list[bytes]] = {i: [] for i in range(4)}

    async def work(i: int, c: SimpleConsumer) -> None:
        deadline = time.monotonic() + WAIT
        while sum(len(v) for v in got.values()) < len(bodies) and time.monotonic() < deadline:
            for m in await c.receive(4):
                got[i].append(m.body)
                await c.ack(m)
            await asyncio.sleep(0)  # let the others take their turn on the queue

    for c in crowd:
        await c.start()
    try:
        await asyncio.gather(*(work(i, c) for i, c in enumerate(crowd)))
        # nothing more: each message was acked by the one consumer that got it
        assert [await c.receive(4) for c in crowd] == [[], [], [], []]
    finally:
        for c in crowd:
            await c.shutdown()
    every = Counter(b for v in got.values() for b in v)
    assert every == Counter(bodies)  # each exactly once
    assert sum(1 for v in got.values() if v) >= 2  # the queue really was shared


async def test_unacked_comes_back_with_attempt_plus_one_then_to_the_dlq(cluster: EmbeddedCluster) -> None:
    topic = await one_queue_topic(cluster, [b"fragile"])
    group = f"dlq-{uuid.uuid4().hex[:6]}"
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        await admin.update_subscription_group(group, retry_max_times=2)  # three deliveries, then the DLQ
    crowd = consumers(cluster, group, topic, 2)
    attempts: list[tuple[int, int]] = []
    for c in crowd:
        await c.start()
    try:
        deadline = time.monotonic() + WAIT
        while len(attempts) < 3 and time.monotonic() < deadline:
            for i, c in enumerate(crowd):
                msgs: list[MessageView] = await c.receive(1, invisible_duration=0.3)  # and never acked
                attempts += [(i, m.delivery_attempt) for m in msgs if m.body == b"fragile"]
        assert [a for _, a in attempts] == [1, 2, 3]
        dlq = f"%DLQ%{group}"
        deadline = time.monotonic() + WAIT
        while cluster.broker.store.get_max_offset_in_queue(dlq, 0) < 1:
            assert time.monotonic() < deadline, "the message never reached the DLQ"
            await asyncio.sleep(0.05)
        assert [await c.receive(1, invisible_duration=0.3) for c in crowd] == [[], []]  # gone from the group
    finally:
        for c in crowd:
            await c.shutdown()
    rec = cluster.broker.pop_service.read(dlq, 0, 0)
    assert rec is not None and rec.body == b"fragile" and rec.reconsume_times == 2
