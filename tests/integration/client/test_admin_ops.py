"""The admin client's mqadmin-reach requests against an embedded cluster: subscription groups, producers, a
consumer's running info and consume-directly, offsets (clone, skip), broker / name-server config and KV, write
permission, stats, consume-queue inspection, browsing, allocation."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from rocketq.client import AdminClient, Message, Producer, PushConsumer
from rocketq.client import sync as blocking
from rocketq.client.admin.config import ORDER_TOPIC_CONFIG
from rocketq.errors import BrokerError, RocketQError
from rocketq.protocol.bodies import MessageQueue

TOPIC = "OpsT"


async def _eventually(check: Any, what: str, timeout: float = 30.0) -> Any:
    async with asyncio.timeout(timeout):
        while True:
            value = await check()
            if value:
                return value
            await asyncio.sleep(0.1)


async def test_admin_reaches_what_mqadmin_reaches(cluster: Any, fast_config: Any) -> None:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        (broker,) = await admin.brokers()
        addr = broker.addr
        await admin.create_topic(TOPIC, read_queue_nums=2, write_queue_nums=2)

        # subscription groups: create with settings, read back, delete
        assert await admin.update_subscription_group("sg-ops", retry_max_times=3, consume_broadcast_enable=False)
        conf = await admin.subscription_group_config("sg-ops", addr)
        assert conf is not None and conf["retryMaxTimes"] == 3 and conf["consumeBroadcastEnable"] is False
        assert "sg-ops" in {g.group_name for g in await admin.subscription_groups()}
        await admin.delete_subscription_group("sg-ops")
        assert await admin.subscription_group_config("sg-ops", addr) is None

        got: list[Any] = []
        consumer = PushConsumer("cg-ops", config=fast_config())
        consumer.subscribe(TOPIC, "*")
        consumer.register_message_listener(lambda msgs, ctx: got.extend(msgs))
        async with Producer("pg-ops", config=fast_config()) as producer:
            sent = [await producer.send(Message(TOPIC, f"m{i}".encode(), tags="A" if i % 2 else "B"))
                    for i in range(6)]  # fmt: skip
            await consumer.start()
            try:
                await _eventually(lambda: asyncio.sleep(0, len(got) >= 6), "the consumer got every message")
                conns = await _eventually(lambda: _producers(admin), "the producer's heartbeat reached the broker")
                assert [c.client_id for c in conns] == [producer.instance.client_id]
                producers = (await admin.all_producers())[addr]
                assert [p["clientId"] for p in producers["pg-ops"]] == [producer.instance.client_id]
                with pytest.raises(BrokerError, match="not exist"):
                    await admin.producer_connections("no-such-producer-group", TOPIC)

                info = await admin.consumer_running_info("cg-ops", consumer.client_id, jstack=True)
                assert TOPIC in str(info.get("subscriptionSet")) and "properties" in info
                direct = await admin.consume_message_directly("cg-ops", consumer.client_id, sent[0].offset_msg_id)
                assert direct["consumeResult"] == "CR_SUCCESS"
                by_uniq = await admin.consume_message_directly("cg-ops", consumer.client_id, sent[1].msg_id, TOPIC)
                assert by_uniq["consumeResult"] == "CR_SUCCESS"
                await _eventually(lambda: _topics(admin), "the group's offsets reached the broker")
            finally:
                await consumer.shutdown()

        # the group's topics and who consumes the topic
        assert TOPIC in await admin.topics_of_group("cg-ops")
        assert "cg-ops" in await admin.groups_consuming(TOPIC)
        assert await admin.topic_clusters(TOPIC) == [broker.cluster]

        # clone the offsets to a new group, then skip everything of another (a reset to the end)
        await admin.clone_group_offset("cg-ops", "cg-clone", TOPIC)
        assert sum(q.consumer_offset for q in await admin.consume_progress("cg-clone", TOPIC)) == 6
        skipped = await admin.skip_accumulation("cg-late", TOPIC)
        assert sum(skipped.values()) == 6

        # stats: what went in and out
        stats = await admin.view_broker_stats(addr, "TOPIC_PUT_NUMS", TOPIC)
        assert stats["statsMinute"]["sum"] >= 6 or stats["statsDay"]["sum"] >= 6
        rows = {(r.topic, r.group): r for r in await admin.stats_all(TOPIC)}
        assert rows[(TOPIC, "cg-ops")].in_msg_24h == 6 and rows[(TOPIC, "cg-ops")].accumulation == 0
        bcs = await admin.broker_consume_stats(addr)
        mine = [e for e in bcs.entries if (e.group, e.topic) == ("cg-ops", TOPIC)]
        assert len(mine) == 1 and mine[0].diff_total == 0 and len(mine[0].queues) == 2

        # the consume queue's units, browsing and one message by queue offset
        cq = await admin.query_consume_queue(TOPIC, 0, 0, 10)
        assert cq["maxQueueIndex"] == 3 and len(cq["queueData"]) == 3
        all_msgs = await admin.browse_messages(TOPIC)
        assert sorted(m.body for m in all_msgs) == sorted(f"m{i}".encode() for i in range(6))
        only_a = await admin.browse_messages(TOPIC, expression="A", max_messages=2)
        assert len(only_a) == 2 and {m.tags for m in only_a} == {"A"}
        timed = await admin.browse_messages(TOPIC, begin_ms=0, end_ms=int(time.time() * 1000) + 60_000)
        assert len(timed) == 6
        first = sorted(all_msgs, key=lambda m: (m.queue_id, m.queue_offset))[0]
        at = await admin.message_at_offset(TOPIC, first.broker_name, first.queue_id, first.queue_offset)
        assert at is not None and at.msg_id == first.msg_id
        assert await admin.message_at_offset(TOPIC, first.broker_name, first.queue_id, 999) is None

        # allocation as AllocateMessageQueueAveragely
        shares = await admin.allocate_mq(TOPIC, ["c1", "c2", "c3"])
        assert shares["c1"] == [MessageQueue(TOPIC, broker.broker_name, 0)] and shares["c3"] == []

        # broker and name-server config
        assert (await admin.broker_config(addr))["brokerName"] == broker.broker_name
        await admin.update_broker_config({"maxMessageSize": "65536"}, broker_addr=addr)
        assert (await admin.broker_config(addr))["maxMessageSize"] == "65536"
        ns_conf = await admin.namesrv_config()
        assert list(ns_conf) == [cluster.namesrv_addr] and ns_conf[cluster.namesrv_addr]
        with pytest.raises(RocketQError):  # a key that cannot change at run time
            await admin.update_broker_config({"brokerName": "renamed"}, broker_addr=addr)

        # KV and the order conf
        await admin.put_kv_config("ns-ops", "k", "v")
        assert await admin.get_kv_config("ns-ops", "k") == "v"
        assert await admin.kv_list("ns-ops") == {"k": "v"}
        await admin.delete_kv_config("ns-ops", "k")
        assert await admin.get_kv_config("ns-ops", "k") is None and await admin.kv_list("ns-ops") == {}
        await admin.update_order_conf(TOPIC, f"{broker.broker_name}:2")
        assert await admin.get_kv_config(ORDER_TOPIC_CONFIG, TOPIC) == f"{broker.broker_name}:2"

        # write permission at the name server
        wiped = await admin.wipe_write_perm(broker.broker_name)
        assert wiped[cluster.namesrv_addr] >= 1
        assert all(q.perm & 2 == 0 for q in (await admin.topic_route(TOPIC)).queue_datas)
        added = await admin.add_write_perm(broker.broker_name)
        assert added[cluster.namesrv_addr] == wiped[cluster.namesrv_addr]

        # clean-ups answer per broker
        assert await admin.clean_expired_consume_queues() == {addr: True}
        assert await admin.clean_unused_topics(broker_addr=addr) == {addr: True}

    # the blocking twin reaches the new methods too (called off this loop: the cluster runs on it)
    def blocking_call() -> list[str]:
        sync_admin = blocking.AdminClient(namesrv_addr=cluster.namesrv_addr)
        try:
            return sync_admin.groups_consuming(TOPIC)  # type: ignore[no-any-return]
        finally:
            sync_admin.close()

    assert "cg-ops" in await asyncio.to_thread(blocking_call)


async def _topics(admin: AdminClient) -> bool:
    return await admin.topics_of_group("cg-ops") == [TOPIC]


async def _producers(admin: AdminClient) -> list[Any]:
    try:
        return await admin.producer_connections("pg-ops", TOPIC)
    except BrokerError:
        return []
