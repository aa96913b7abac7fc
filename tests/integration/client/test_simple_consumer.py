"""The POP scenarios (``rocketq.testing.pop_scenarios``) with rocketq's SimpleConsumer against rocketq's broker,
the same steps and expectations as against Java 5.3.3 (``test_simple_consumer_java.py``)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from rocketq.client import AdminClient, Message, Producer, sync
from rocketq.testing import pop_scenarios
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def cluster() -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(reviveInterval=200) as c:
        yield c


def _cluster_name(c: EmbeddedCluster) -> str:
    return c.broker.config.brokerClusterName


async def test_receive_ack(cluster: EmbeddedCluster) -> None:
    await pop_scenarios.receive_ack(cluster.namesrv_addr, _cluster_name(cluster))


async def test_redelivery_after_invisible_time(cluster: EmbeddedCluster) -> None:
    seen = await pop_scenarios.redelivery(cluster.namesrv_addr, _cluster_name(cluster))
    assert seen["second"].split(" ")[4] == "1"


async def test_change_invisible(cluster: EmbeddedCluster) -> None:
    seen = await pop_scenarios.change_invisible(cluster.namesrv_addr, _cluster_name(cluster))
    # as Java's broker: an ack with the replaced handle is answered SUCCESS
    assert seen["old_handle_ack"] == "SUCCESS", seen


async def test_fifo_order(cluster: EmbeddedCluster) -> None:
    await pop_scenarios.fifo_order(cluster.namesrv_addr, _cluster_name(cluster))


async def test_sync_wrapper_receives_and_acks(cluster: EmbeddedCluster) -> None:
    """``rocketq.client.sync.SimpleConsumer`` in a thread (the broker runs on this loop meanwhile)."""
    ns = cluster.namesrv_addr
    topic = f"PopSync-{uuid.uuid4().hex[:8]}"
    async with AdminClient(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, cluster=_cluster_name(cluster), read_queue_nums=2, write_queue_nums=2)
    async with Producer(f"pp-{topic}", namesrv_addr=ns) as producer:
        await producer.send(Message(topic, b"sync"))

    def consume() -> tuple[list[bytes], list[bytes]]:
        with sync.SimpleConsumer(f"pc-{topic}", namesrv_addr=ns, subscriptions={topic: "*"}, await_duration=1.0,
                                 init_mode="MIN") as consumer:  # fmt: skip
            got: list[bytes] = []
            for _ in range(20):
                msgs = consumer.receive(8, 30.0)
                for m in msgs:
                    consumer.change_invisible_duration(m, 20.0)
                    consumer.ack(m)
                got += [m.body for m in msgs]
                if got:
                    break
            return got, [m.body for m in consumer.receive(8, 30.0)]

    got, after = await asyncio.to_thread(consume)
    assert (got, after) == ([b"sync"], [])


async def test_push_over_pop_concurrently(cluster: EmbeddedCluster) -> None:
    await pop_scenarios.push_concurrently(cluster.namesrv_addr, _cluster_name(cluster))


async def test_push_over_pop_orderly(cluster: EmbeddedCluster) -> None:
    await pop_scenarios.push_orderly(cluster.namesrv_addr, _cluster_name(cluster))


async def test_tag_filter(cluster: EmbeddedCluster) -> None:
    await pop_scenarios.tag_filter(cluster.namesrv_addr, _cluster_name(cluster))


async def test_batch_ack(cluster: EmbeddedCluster) -> None:
    await pop_scenarios.batch_ack(cluster.namesrv_addr, _cluster_name(cluster))


async def test_fifo_from_the_group(cluster: EmbeddedCluster) -> None:
    await pop_scenarios.fifo_from_group(cluster.namesrv_addr, _cluster_name(cluster))
