"""Heartbeats, group membership, offsets, queries and admin requests over the wire."""

from __future__ import annotations

import asyncio
import time

import orjson
import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.bodies import (
    ConsumerData,
    HeartbeatData,
    LockBatchBody,
    MessageQueue,
    SubscriptionData,
    decode_lock_ok,
)
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.server import RemotingDispatcher
from rocketq.testing.wire import Wire, records


def heartbeat(client_id: str, group: str, topic: str = "T", cpp: bool = False) -> bytes:
    if cpp:  # C++ 1.2.3 dialect: ordinals, string subVersion, wrong codeSet
        return orjson.dumps({"clientID": client_id, "consumerDataSet": [{
            "consumeFromWhere": 0, "consumeType": 1, "groupName": group, "messageModel": 1,
            "subscriptionDataSet": [{"subString": "A || B", "subVersion": "1700000000123", "topic": topic,
                                     "codeSet": [0, 0], "tagsSet": ["A", "B"]}]}]})  # fmt: skip
    return HeartbeatData(
        client_id, ["pg"], [ConsumerData(group, subscriptions=[SubscriptionData.of(topic, "*", sub_version=1)])]
    ).encode()


async def test_heartbeat_registers_group_and_retry_topic(wire: Wire, cluster) -> None:
    resp = await wire.call(RequestCode.HEART_BEAT, body=heartbeat("c1", "g1", cpp=True))
    assert resp.code == 0
    assert cluster.broker.topics.get("%RETRY%g1") is not None
    sub = cluster.broker.consumers.find_subscription("g1", "T")
    assert sub is not None and sub.sub_version == 1700000000123
    assert sorted(sub.code_set) == sorted([65, 66])  # recomputed from tags, not C++'s atoi
    lst = await wire.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "g1"})
    assert lst.code == 0 and orjson.loads(lst.body) == {"consumerIdList": ["c1"]}
    none = await wire.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "nobody"})
    assert none.code == ResponseCode.SYSTEM_ERROR


async def test_group_change_is_notified_to_members(cluster) -> None:
    got: list[RemotingCommand] = []
    d = RemotingDispatcher("c1")
    d.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, lambda conn, cmd: got.append(cmd))
    c1 = RemotingClient(d)
    c2 = RemotingClient()
    try:
        w1, w2 = Wire(c1, cluster.broker_addr), Wire(c2, cluster.broker_addr)
        assert (await w1.call(RequestCode.HEART_BEAT, body=heartbeat("c1", "gn"))).code == 0
        got.clear()
        assert (await w2.call(RequestCode.HEART_BEAT, body=heartbeat("c2", "gn"))).code == 0
        for _ in range(50):
            if got:
                break
            await asyncio.sleep(0.05)
        assert got and got[0].ext_fields["consumerGroup"] == "gn"
        got.clear()
        unreg = {"clientID": "c2", "consumerGroup": "gn", "producerGroup": ""}
        assert (await w2.call(RequestCode.UNREGISTER_CLIENT, unreg)).code == 0
        for _ in range(50):
            if got:
                break
            await asyncio.sleep(0.05)
        assert got
        lst = await w1.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "gn"})
        assert orjson.loads(lst.body)["consumerIdList"] == ["c1"]
    finally:
        await c1.close()
        await c2.close()


@pytest.mark.parametrize(
    "cluster", [{"clientChannelExpiredTimeMills": 300, "clientScanIntervalMills": 100}], indirect=True
)
async def test_silent_client_expires(wire: Wire, cluster) -> None:
    assert (await wire.call(RequestCode.HEART_BEAT, body=heartbeat("c9", "gx"))).code == 0
    assert cluster.broker.consumers.get("gx") is not None
    for _ in range(60):
        if cluster.broker.consumers.get("gx") is None:
            break
        await asyncio.sleep(0.05)
    assert cluster.broker.consumers.get("gx") is None


async def test_offsets_new_group_rule_update_and_restart(wire: Wire, cluster, rc) -> None:
    assert (await wire.send("TO", b"x")).code == 0
    q = {"consumerGroup": "go", "topic": "TO", "queueId": "0"}
    first = await wire.call(RequestCode.QUERY_CONSUMER_OFFSET, q)
    assert first.code == 0 and first.ext_fields["offset"] == "0"  # young queue: start at 0
    assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, {**q, "commitOffset": "1"})).code == 0
    assert (await wire.call(RequestCode.QUERY_CONSUMER_OFFSET, q)).ext_fields["offset"] == "1"
    # Commit piggy-backed on a pull.
    await wire.pull("TO", 0, 1, group="gp", sys_flag=4 | 1)
    broker = await cluster.restart_broker()
    w2 = Wire(rc, broker.config.broker_addr)
    assert (await w2.call(RequestCode.QUERY_CONSUMER_OFFSET, q)).ext_fields["offset"] == "1"
    assert broker.offsets.query("gp", "TO", 0) == 0


async def test_queue_offsets_time_search_view_and_query(wire: Wire) -> None:
    t0 = int(time.time() * 1000)
    ids = []
    for i in range(3):
        r = await wire.send("TQ", f"m{i}".encode(), props={"KEYS": f"order-{i}"})
        ids.append(r.ext_fields["msgId"])
    tq = {"topic": "TQ", "queueId": "0"}
    assert (await wire.call(RequestCode.GET_MAX_OFFSET, tq)).ext_fields["offset"] == "3"
    assert (await wire.call(RequestCode.GET_MIN_OFFSET, tq)).ext_fields["offset"] == "0"
    earliest = await wire.call(RequestCode.GET_EARLIEST_MSG_STORETIME, tq)
    assert int(earliest.ext_fields["timestamp"]) >= t0 - 1000
    found = await wire.call(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {**tq, "timestamp": str(t0 - 60_000)})
    assert found.ext_fields["offset"] == "0"
    from rocketq.protocol.message import parse_offset_msg_id

    _, phys = parse_offset_msg_id(ids[1])
    view = await wire.call(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(phys)})
    assert view.code == 0 and records(view)[0].body == b"m1"
    qm = {"topic": "TQ", "key": "order-2", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": str(t0 + 600_000)}
    resp = await wire.call(RequestCode.QUERY_MESSAGE, qm)
    assert resp.code == 0 and [m.body for m in records(resp)] == [b"m2"]
    miss = await wire.call(RequestCode.QUERY_MESSAGE, {**qm, "key": "nope"})
    assert miss.code == ResponseCode.QUERY_NOT_FOUND
    # Java's answer carries the response header even here (QueryMessageProcessor)
    assert miss.ext_fields == {"indexLastUpdateTimestamp": "0", "indexLastUpdatePhyoffset": "0"}


async def test_admin_topics_groups_and_stats(wire: Wire, cluster) -> None:
    create = {"topic": "TA", "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6",
              "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}  # fmt: skip
    assert (await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create)).code == 0
    all_topics = orjson.loads((await wire.call(RequestCode.GET_ALL_TOPIC_CONFIG)).body)
    assert all_topics["topicConfigTable"]["TA"]["readQueueNums"] == 2
    assert (await wire.send("TA", b"x", queue_id=1)).code == 0
    stats = await wire.call(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "TA"})
    assert stats.code == 0 and b'"maxOffset":1' in stats.body
    group = {"groupName": "ga", "retryMaxTimes": 3, "consumeEnable": True}
    assert (await wire.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=orjson.dumps(group))).code == 0
    groups = orjson.loads((await wire.call(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body)
    assert groups["subscriptionGroupTable"]["ga"]["retryMaxTimes"] == 3
    upd = {"consumerGroup": "ga", "topic": "TA", "queueId": "1", "commitOffset": "0"}
    assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, upd)).code == 0
    cs = await wire.call(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "ga", "topic": "TA"})
    assert cs.code == 0 and b'"brokerOffset":1' in cs.body
    info = await wire.call(RequestCode.GET_BROKER_RUNTIME_INFO)
    table = orjson.loads(info.body)["table"]
    assert int(table["commitLogMaxOffset"]) > 0 and all(isinstance(v, str) for v in table.values())
    # what mqadmin clusterList parses with Long.parseLong
    for key in ("msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning", "msgGetTotalYesterdayMorning",
                "msgGetTotalTodayMorning", "earliestMessageTimeStamp", "sendThreadPoolQueueHeadWaitTimeMills",
                "pullThreadPoolQueueHeadWaitTimeMills"):  # fmt: skip
        int(table[key])
    assert int(table["earliestMessageTimeStamp"]) > 0 and table["remainHowManyDataToFlush"].endswith("B")
    assert (await wire.call(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "ga"})).code == 206
    assert (await wire.call(RequestCode.HEART_BEAT, body=heartbeat("cx", "ga", "TA"))).code == 0
    conns = orjson.loads((await wire.call(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "ga"})).body)
    assert conns["connectionSet"][0]["clientId"] == "cx"
    assert (await wire.call(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "ga"})).code == 0
    assert (await wire.call(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "TA"})).code == 0
    assert cluster.broker.topics.get("TA") is None


async def test_lock_batch_is_exclusive(wire: Wire) -> None:
    mqs = [MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)]
    a = await wire.call(RequestCode.LOCK_BATCH_MQ, body=LockBatchBody("g", "A", mqs).encode())
    assert decode_lock_ok(a.body) == mqs
    b = await wire.call(RequestCode.LOCK_BATCH_MQ, body=LockBatchBody("g", "B", mqs).encode())
    assert decode_lock_ok(b.body) == []
    assert (await wire.call(RequestCode.UNLOCK_BATCH_MQ, body=LockBatchBody("g", "A", mqs[:1]).encode())).code == 0
    b = await wire.call(RequestCode.LOCK_BATCH_MQ, body=LockBatchBody("g", "B", mqs).encode())
    assert decode_lock_ok(b.body) == mqs[:1]


async def test_system_busy_under_stall(wire: Wire, cluster, monkeypatch) -> None:
    store = cluster.broker.store
    original = store.put_message
    assert (await wire.send("TBusy", b"warm-up")).code == 0  # connection and topic exist: the burst arrives at once

    def stalled(msg):  # the first put blocks the writer well past waitTimeMillsInSendQueue (200 ms)
        monkeypatch.setattr(store, "put_message", original)
        time.sleep(0.5)
        return original(msg)

    monkeypatch.setattr(store, "put_message", stalled)
    # The first is delayed, so it is stored on its own (not in a run of plain sends taken off the queue together)
    # and the four behind it wait through its stall.
    results = await asyncio.gather(
        *(wire.send("TBusy", f"{i}".encode(), props={"DELAY": "1"} if i == 0 else None) for i in range(5))
    )
    codes = [r.code for r in results]
    assert codes[0] == 0
    assert ResponseCode.SYSTEM_BUSY in codes
    busy = next(r for r in results if r.code == ResponseCode.SYSTEM_BUSY)
    assert "TIMEOUT_CLEAN_QUEUE" in (busy.remark or "")
    assert (await wire.send("TBusy", b"after")).code == 0
