"""The POP scenarios (``rocketq.testing.pop_scenarios``) with rocketq's SimpleConsumer against the reference:
Apache RocketMQ 5.3.3's broker (``JavaCluster(version="5")``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rocketq.testing import pop_scenarios
from rocketq.testing.java import JavaCluster, JavaUnavailable

HEAP = ("-Xms128m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m")


@pytest.fixture(scope="module")
def java5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaCluster]:
    cluster = JavaCluster(tmp_path_factory.mktemp("java5-pop"), version="5", broker_heap=HEAP)
    try:
        cluster.start(timeout=120)
    except JavaUnavailable as exc:
        pytest.fail(str(exc))
    try:
        yield cluster
    finally:
        cluster.stop()


async def test_receive_ack(java5: JavaCluster) -> None:
    await pop_scenarios.receive_ack(java5.namesrv_addr, java5.cluster_name)


async def test_redelivery_after_invisible_time(java5: JavaCluster) -> None:
    seen = await pop_scenarios.redelivery(java5.namesrv_addr, java5.cluster_name)
    # Java re-encodes a message read from the retry topic with its handle in POP_CK: retry mark 1
    assert seen["second"].split(" ")[4] == "1"


async def test_change_invisible(java5: JavaCluster) -> None:
    seen = await pop_scenarios.change_invisible(java5.namesrv_addr, java5.cluster_name)
    # Java's broker answers an ack with the replaced handle SUCCESS (an ack record is appended; harmless)
    assert seen["old_handle_ack"] == "SUCCESS", seen


async def test_fifo_order(java5: JavaCluster) -> None:
    await pop_scenarios.fifo_order(java5.namesrv_addr, java5.cluster_name)


async def test_push_over_pop_concurrently(java5: JavaCluster) -> None:
    await pop_scenarios.push_concurrently(java5.namesrv_addr, java5.cluster_name)


async def test_push_over_pop_orderly(java5: JavaCluster) -> None:
    await pop_scenarios.push_orderly(java5.namesrv_addr, java5.cluster_name)


async def test_batch_ack(java5: JavaCluster) -> None:
    await pop_scenarios.batch_ack(java5.namesrv_addr, java5.cluster_name)


async def test_tag_filter(java5: JavaCluster) -> None:
    await pop_scenarios.tag_filter(java5.namesrv_addr, java5.cluster_name)


async def test_fifo_from_the_group(java5: JavaCluster) -> None:
    await pop_scenarios.fifo_from_group(java5.namesrv_addr, java5.cluster_name)
