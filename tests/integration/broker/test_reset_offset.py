"""INVOKE_BROKER_TO_RESET_OFFSET: offsets rewound by time, pushed to online consumers, kept while offline."""

from __future__ import annotations

import asyncio
import time

from rocketq.client import ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.codes import RequestCode
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire


async def test_reset_while_offline_sticks(wire: Wire, cluster: EmbeddedCluster) -> None:
    for i in range(4):
        assert (await wire.send("TReset", f"m{i}".encode(), queue_id=0)).code == 0
    q = {"consumerGroup": "gr", "topic": "TReset", "queueId": "0"}
    assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, {**q, "commitOffset": "4"})).code == 0
    reset = {"topic": "TReset", "group": "gr", "timestamp": "0", "isForce": "true"}
    resp = await wire.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset)
    assert resp.code == 0 and b'"queueId":0,"topic":"TReset"}:0' in resp.body
    assert (await wire.call(RequestCode.QUERY_CONSUMER_OFFSET, q)).ext_fields["offset"] == "0"
    # Not forced: a reset to "the end" (-1) never moves an offset forward past what the group has.
    reset = {"topic": "TReset", "group": "gr", "timestamp": "-1", "isForce": "false"}
    assert (await wire.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset)).code == 0
    assert (await wire.call(RequestCode.QUERY_CONSUMER_OFFSET, q)).ext_fields["offset"] == "0"
    missing = await wire.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {**reset, "topic": "Nope"})
    assert missing.code == 17


async def test_reset_is_pushed_to_an_online_consumer(cluster: EmbeddedCluster) -> None:
    ns = cluster.namesrv_addr
    got: list[str] = []

    async def listener(msgs: list, context: object) -> None:
        got.extend(m.body.decode() for m in msgs)

    start = int(time.time() * 1000) - 1000
    async with Producer("reset-producer", namesrv_addr=ns) as producer:
        for i in range(3):
            await producer.send(Message("TResetLive", f"m{i}".encode()))
        consumer = PushConsumer(
            "gl",
            namesrv_addr=ns,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            rebalance_interval=1,
            broker_suspend_max_time=1,
        )
        consumer.subscribe("TResetLive", "*")
        consumer.register_message_listener(listener)
        await consumer.start()
        try:
            async with asyncio.timeout(20):
                while len(got) < 3:
                    await asyncio.sleep(0.05)
            from rocketq.client import AdminClient

            async with AdminClient(namesrv_addr=ns) as admin:
                await admin.reset_offset_by_timestamp("gl", "TResetLive", start)
            async with asyncio.timeout(20):
                while len(got) < 6:
                    await asyncio.sleep(0.05)
            assert sorted(got) == ["m0", "m0", "m1", "m1", "m2", "m2"]
        finally:
            await consumer.shutdown()
