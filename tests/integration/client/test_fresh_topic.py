"""A consumer started before its topic exists gets the topic's first message soon (issue 20 item 5).

Why it waited ~31 s: with no route for its topic the consumer's client instance knows no broker, so its start-up
heartbeat reaches nobody; the next rebalance (20 s) found the route but the broker answered "no consumer for
this group", and only the next heartbeat (30 s) made the broker notify the group. Now a rebalance that cannot
assign a topic is retried after ``rebalance_retry_interval`` (1 s, doubling), and a broker that knows no
consumer of the group is sent a heartbeat at once. The periodic timers are set to an hour here, so only that
retry can deliver the message within the test's bound.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from rocketq.client import LitePullConsumer, Message, Producer, PushConsumer
from rocketq.client.listener import ConsumeConcurrentlyStatus
from rocketq.client.subscription import ConsumeFromWhere

HOUR = 3600.0
FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


def slow_timers(fast_config: Any) -> Any:
    return fast_config(poll_name_server_interval=HOUR, heartbeat_broker_interval=HOUR)


async def first_rebalance_found_no_route(caplog: pytest.LogCaptureFixture, topic: str) -> None:
    async with asyncio.timeout(30):
        while not any("rebalance.no_route" in r.getMessage() and topic in r.getMessage() for r in caplog.records):
            await asyncio.sleep(0.02)


async def send_one(fast_config: Any, topic: str) -> None:
    producer = Producer("pg-fresh", config=fast_config())
    await producer.start()
    try:
        await producer.send(Message(topic, b"first"))
    finally:
        await producer.shutdown()


async def test_a_lite_pull_consumer_gets_a_topic_created_after_it_started(
    cluster: Any, fast_config: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rocketq.client")
    consumer = LitePullConsumer("cg-fresh-lite", config=slow_timers(fast_config), rebalance_interval=HOUR,
                                consume_from_where=FIRST)  # fmt: skip
    consumer.subscribe("FreshLite", "*")
    await consumer.start()
    try:
        await first_rebalance_found_no_route(caplog, "FreshLite")
        await send_one(fast_config, "FreshLite")
        got: list[Any] = []
        async with asyncio.timeout(30):
            while not got:
                got = await consumer.poll(1.0)
        assert [m.body for m in got] == [b"first"]
    finally:
        await consumer.shutdown()


async def test_a_push_consumer_gets_a_topic_created_after_its_first_heartbeat(
    cluster: Any, fast_config: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rocketq.client")
    got: asyncio.Queue[bytes] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def listener(msgs: list[Any], _ctx: Any) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            loop.call_soon_threadsafe(got.put_nowait, m.body)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer("cg-fresh-push", config=slow_timers(fast_config), rebalance_interval=HOUR,
                            consume_from_where=FIRST)  # fmt: skip
    consumer.subscribe("FreshPush", "*")
    consumer.register_message_listener(listener)
    await consumer.start()
    try:
        await first_rebalance_found_no_route(caplog, "FreshPush")
        # the inner producer's default route taught the instance the broker: wait for the heartbeat it sends
        # (1 s after start), so the topic appears after the broker already knows the group
        async with asyncio.timeout(30):
            while cluster.broker.consumers.get("cg-fresh-push") is None:
                await asyncio.sleep(0.02)
        await send_one(fast_config, "FreshPush")
        async with asyncio.timeout(30):
            assert await got.get() == b"first"
    finally:
        await consumer.shutdown()
