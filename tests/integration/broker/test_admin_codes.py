"""The admin request codes Apache RocketMQ's mqadmin relies on, over the wire (tests/interop/java runs mqadmin
itself against them): each answer's body in the shape 4.9's admin client decodes."""

from __future__ import annotations

import datetime
import re
import time

import orjson

from rocketq.broker.metrics import seconds_to_next_midnight
from rocketq.codes import RequestCode, ResponseCode
from rocketq.common.hashing import java_string_hash
from rocketq.common.properties import parse_properties
from rocketq.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.server import RemotingDispatcher
from rocketq.testing.wire import Wire, records


async def test_producer_connections_of_an_unknown_group_are_an_error(wire: Wire) -> None:
    none = await wire.call(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "nobody"})
    assert none.code == ResponseCode.SYSTEM_ERROR and none.remark == "the producer group[nobody] not exist"
    assert (await wire.call(RequestCode.HEART_BEAT, body=HeartbeatData("p1", ["pg1"], []).encode())).code == 0
    conns = await wire.call(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "pg1"})
    assert conns.code == 0 and [c["clientId"] for c in orjson.loads(conns.body)["connectionSet"]] == ["p1"]


async def test_runtime_info_carries_the_keys_mqadmin_reads(wire: Wire, cluster) -> None:
    before = int(time.time() * 1000)
    for i in range(2):
        assert (await wire.send("TRuntime", b"x", queue_id=i)).code == 0

    async def table() -> dict[str, str]:
        info = await wire.call(RequestCode.GET_BROKER_RUNTIME_INFO)
        assert info.code == 0
        return dict(orjson.loads(info.body)["table"])

    t = await table()
    # clusterList: TPS, queue sizes and head waits, earliest message time, disk ratio
    for key in ("putTps", "getTransferedTps", "sendThreadPoolQueueSize", "pullThreadPoolQueueSize",
                "sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills",
                "pageCacheLockTimeMills", "commitLogDiskRatio", "brokerVersionDesc"):  # fmt: skip
        assert t.get(key, "") != "", key
    assert len(t["putTps"].split()) == 3 and len(t["getTransferedTps"].split()) == 3  # 10 s, 1 min, 10 min
    assert before <= int(t["earliestMessageTimeStamp"]) <= int(time.time() * 1000)
    assert re.fullmatch(r"Total : [\d.]+ [KMGTPE]iB, Free : [\d.]+ [KMGTPE]iB\.", t["commitLogDirCapacity"])
    assert t["remainHowManyDataToFlush"].endswith(" B")
    # clusterList -m: today's and yesterday's totals from the morning snapshots
    assert (t["msgPutTotalTodayNow"], t["msgPutTotalTodayMorning"], t["msgPutTotalYesterdayMorning"]) == ("2", "0", "0")
    cluster.broker.metrics.record_morning()  # midnight
    assert (await wire.send("TRuntime", b"y")).code == 0
    cluster.broker.metrics.record_morning()  # the next one
    t = await table()
    assert (t["msgPutTotalTodayNow"], t["msgPutTotalTodayMorning"], t["msgPutTotalYesterdayMorning"]) == ("3", "3", "2")


def test_seconds_to_next_midnight() -> None:
    assert seconds_to_next_midnight(datetime.datetime(2024, 5, 1, 23, 59, 0)) == 60.0
    assert seconds_to_next_midnight(datetime.datetime(2024, 5, 1, 0, 0, 0)) == 86400.0


async def test_stats_data_counts_a_topics_puts_and_a_groups_gets(wire: Wire) -> None:
    view = {"statsName": "TOPIC_PUT_NUMS", "statsKey": "TStats"}
    missing = await wire.call(RequestCode.VIEW_BROKER_STATS_DATA, view)
    assert missing.code == ResponseCode.SYSTEM_ERROR
    assert missing.remark == "The stats <TOPIC_PUT_NUMS> <TStats> not exist"
    for _ in range(3):
        assert (await wire.send("TStats", b"x" * 10, queue_id=0)).code == 0
    puts = orjson.loads((await wire.call(RequestCode.VIEW_BROKER_STATS_DATA, view)).body)
    assert set(puts) == {"statsMinute", "statsHour", "statsDay"}
    assert [puts[w]["sum"] for w in ("statsMinute", "statsHour", "statsDay")] == [3, 3, 3]
    assert puts["statsMinute"]["tps"] > 0
    pulled = await wire.pull("TStats", 0, 0, group="gstats")
    assert pulled.code == ResponseCode.SUCCESS
    by_group = {"statsName": "GROUP_GET_NUMS", "statsKey": "TStats@gstats"}
    gets = await wire.call(RequestCode.VIEW_BROKER_STATS_DATA, by_group)
    assert gets.code == 0 and orjson.loads(gets.body)["statsDay"]["sum"] == 3
    # the group's consume TPS in its consume stats is its own gets, not the broker's
    upd = {"consumerGroup": "gstats", "topic": "TStats", "queueId": "0", "commitOffset": "3"}
    assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, upd)).code == 0
    mine = await wire.call(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "gstats", "topic": "TStats"})
    other = await wire.call(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "idle", "topic": "TStats"})
    assert float(re.search(rb'"consumeTps":([\d.]+)', mine.body).group(1)) > 0  # type: ignore[union-attr]
    assert float(re.search(rb'"consumeTps":([\d.]+)', other.body).group(1)) == 0  # type: ignore[union-attr]


async def test_update_broker_config_applies_live_keys_all_or_nothing(wire: Wire, cluster, rc) -> None:
    async def update(text: str) -> tuple[int, str | None]:
        resp = await wire.call(RequestCode.UPDATE_BROKER_CONFIG, body=text.encode())
        return resp.code, resp.remark

    async def config() -> dict[str, str]:
        resp = await wire.call(RequestCode.GET_BROKER_CONFIG)
        assert resp.code == 0
        return parse_properties(resp.body.decode())

    before = await config()
    # the HA port in effect, not 0 (with listenPort=0 it is any free port, the one the HA service bound)
    assert before["haListenPort"] == str(cluster.broker.ha.master.port) != "0"
    assert before["brokerIP2"] == before["brokerIP1"] == "127.0.0.1"
    assert (await wire.send("TConf", b"x" * 2000)).code == 0
    assert await update("maxMessageSize=1024\n") == (0, None)
    assert (await config())["maxMessageSize"] == "1024"
    refused = await wire.send("TConf", b"x" * 2000)
    assert refused.code == ResponseCode.MESSAGE_ILLEGAL
    assert (await wire.send("TConf", b"x" * 1000)).code == 0
    # all or nothing: an unknown key, a start-up key or a bad value changes nothing and is named
    code, remark = await update("maxMessageSize=2048\nnoSuchKey=1\n")
    assert code == ResponseCode.SYSTEM_ERROR and "noSuchKey" in (remark or "")
    code, remark = await update("listenPort=1234")
    assert code == ResponseCode.SYSTEM_ERROR and "listenPort" in (remark or "") and "start-up" in (remark or "")
    code, remark = await update("maxMessageSize=big")
    assert code == ResponseCode.SYSTEM_ERROR and "maxMessageSize" in (remark or "")
    assert (await config())["maxMessageSize"] == "1024"
    # a Java tuning key is accepted and ignored, as in broker.conf
    assert await update("maxMessageSize=4194304\nsendMessageThreadPoolNums=4") == (0, None)
    assert (await config())["sendMessageThreadPoolNums"] == "4"
    assert (await wire.send("TConf", b"x" * 2000)).code == 0
    # a read-only broker: sends refused (plain runs too), and the name servers hand out read-only routes
    assert await update("brokerPermission=4") == (0, None)
    assert (await wire.send("TConf", b"y")).code == ResponseCode.NO_PERMISSION
    route = await rc.invoke(cluster.namesrv_addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                                          {"topic": "TConf"}))  # fmt: skip
    assert [q["perm"] for q in orjson.loads(route.body)["queueDatas"]] == [4]
    assert await update("brokerPermission=6") == (0, None)
    assert (await wire.send("TConf", b"y")).code == 0
    # not a permission: refused (the fuzzer's -2147486982 made every later registration fail)
    code, remark = await update("brokerPermission=-2147486982")
    assert code == ResponseCode.SYSTEM_ERROR and "brokerPermission" in (remark or "")
    assert (await config())["brokerPermission"] == "6"


async def test_clean_unused_topics_and_expired_consume_queues(wire: Wire, cluster) -> None:
    assert (await wire.send("TKept", b"x")).code == 0
    assert (await wire.send("TLeft", b"x")).code == 0
    cluster.broker.topics.delete("TLeft")  # configuration gone, queue files still there
    assert (await wire.call(RequestCode.CLEAN_UNUSED_TOPIC)).code == 0
    assert "TLeft" not in cluster.broker.store.cq_table.topics()
    assert "TKept" in cluster.broker.store.cq_table.topics()
    assert (await wire.call(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)).code == 0  # nothing expired yet
    assert "TKept" in cluster.broker.store.cq_table.topics()


async def test_consume_stats_follow_javas_rules_and_the_broker_wide_list(wire: Wire) -> None:
    create = {"topic": "TCs", "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "3", "perm": "6",
              "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}  # fmt: skip
    assert (await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create)).code == 0
    for qid in (0, 0, 1):
        assert (await wire.send("TCs", b"x", queue_id=qid)).code == 0
    group = {"groupName": "gcs", "consumeEnable": True}
    assert (await wire.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=orjson.dumps(group))).code == 0
    upd = {"consumerGroup": "gcs", "topic": "TCs", "queueId": "0", "commitOffset": "1"}
    assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, upd)).code == 0
    cs = await wire.call(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "gcs"})
    rows = [(int(q), int(b), int(c)) for q, b, c in re.findall(
        rb'"queueId":(\d+),"topic":"TCs"\}:\{"brokerOffset":(\d+),"consumerOffset":(-?\d+)', cs.body)]  # fmt: skip
    assert sorted(rows) == [(0, 2, 1), (1, 1, 0)]  # read queues; an offset never committed reads 0
    whole = await wire.call(RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false"})
    assert whole.code == 0
    text = whole.body.decode()
    assert text.startswith('{"brokerAddr":') and text.endswith(',"totalDiff":2}')  # (2-1) + (1-0) + (0-0)
    assert '{"gcs":[{"offsetTable":{' in text and text.count('"topic":"TCs"') == 3  # write queues
    assert '{"TOOLS_CONSUMER":[]}' in text  # every subscription group, with or without offsets


async def test_query_consume_queue_returns_the_units(wire: Wire) -> None:
    for _ in range(3):
        assert (await wire.send("TCq", b"x" * 10, queue_id=0, props={"TAGS": "TagA"})).code == 0
    resp = await wire.call(RequestCode.QUERY_CONSUME_QUEUE, {"topic": "TCq", "queueId": 0, "index": 1, "count": 5})
    body = orjson.loads(resp.body)
    assert (body["minQueueIndex"], body["maxQueueIndex"]) == (0, 3)
    assert len(body["queueData"]) == 2 and body["queueData"][0]["tagsCode"] == java_string_hash("TagA")
    first, second = body["queueData"]
    assert second["physicOffset"] == first["physicOffset"] + first["physicSize"]
    none = await wire.call(RequestCode.QUERY_CONSUME_QUEUE, {"topic": "TCq", "queueId": 7, "index": 0, "count": 1})
    assert none.code == ResponseCode.SYSTEM_ERROR and none.remark == "7@TCq is not exist!"
    past = await wire.call(RequestCode.QUERY_CONSUME_QUEUE, {"topic": "TCq", "queueId": 0, "index": -1, "count": 1,
                                                             "consumerGroup": "nobody"})  # fmt: skip
    assert past.code == 0 and not past.body and past.remark == "Index -1 of 0@TCq is not exist!"


async def test_running_info_and_consume_directly_are_passed_to_the_consumer(wire: Wire, cluster) -> None:
    asked: list[RemotingCommand] = []

    def answer(conn: object, cmd: RemotingCommand) -> RemotingCommand:
        asked.append(cmd)
        return cmd.response(ResponseCode.SUCCESS, body=b'{"answered":%d}' % cmd.code)

    d = RemotingDispatcher("consumer")
    d.register(RequestCode.GET_CONSUMER_RUNNING_INFO, answer)
    d.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, answer)
    consumer = RemotingClient(d)
    try:
        member = Wire(consumer, cluster.broker_addr)
        hb = HeartbeatData("crun", [], [ConsumerData("grun", subscriptions=[SubscriptionData.of("TRun", "*")])])
        assert (await member.call(RequestCode.HEART_BEAT, body=hb.encode())).code == 0
        ask = {"consumerGroup": "grun", "clientId": "crun", "jstackEnable": "false"}
        info = await wire.call(RequestCode.GET_CONSUMER_RUNNING_INFO, ask)
        assert (info.code, bytes(info.body)) == (0, b'{"answered":307}')
        assert asked[-1].ext_fields["jstackEnable"] == "false"
        sent = await wire.send("TRun", b"direct")
        direct = {"consumerGroup": "grun", "clientId": "crun", "msgId": sent.ext_fields["msgId"]}
        done = await wire.call(RequestCode.CONSUME_MESSAGE_DIRECTLY, direct)
        assert (done.code, bytes(done.body)) == (0, b'{"answered":309}')
        assert records(asked[-1])[0].body == b"direct" and asked[-1].ext_fields["brokerName"] == "broker-a"
        gone = await wire.call(RequestCode.GET_CONSUMER_RUNNING_INFO, {**ask, "clientId": "nobody"})
        assert gone.code == ResponseCode.SYSTEM_ERROR and gone.remark == "The Consumer <grun> <nobody> not online"
    finally:
        await consumer.close()


async def test_system_topic_list_names_the_brokers_own_topics(wire: Wire) -> None:
    assert (await wire.send("TUser", b"x")).code == 0
    topics = orjson.loads((await wire.call(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)).body)["topicList"]
    assert {"TBW102", "SELF_TEST_TOPIC", "SCHEDULE_TOPIC_XXXX", "DefaultCluster", "broker-a"} <= set(topics)
    assert "TUser" not in topics


async def test_deleting_a_group_keeps_its_offsets_unless_asked(wire: Wire, cluster) -> None:
    assert (await wire.send("TDel", b"x")).code == 0
    offsets = cluster.broker.offsets
    for remove in ("false", "true"):
        group = {"groupName": "gdel", "consumeEnable": True}
        assert (await wire.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=orjson.dumps(group))).code == 0
        upd = {"consumerGroup": "gdel", "topic": "TDel", "queueId": "0", "commitOffset": "1"}
        assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, upd)).code == 0
        deleted = await wire.call(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "gdel", "removeOffset": remove})
        assert deleted.code == 0 and cluster.broker.groups.get("gdel") is None
        assert offsets.offsets_of("gdel", "TDel") == ({0: 1} if remove == "false" else {})


async def test_delete_expired_commit_log_triggers_the_retention_runs(wire: Wire, cluster) -> None:
    cleanup = cluster.broker.store.cleanup_service
    assert cleanup.manual_delete_times == 0
    assert (await wire.call(RequestCode.DELETE_EXPIRED_COMMITLOG)).code == 0
    assert cleanup.manual_delete_times > 0  # the next runs delete expired files whatever the hour


async def test_clone_group_offset_copies_the_sources_offsets_topic_by_topic(wire: Wire, cluster) -> None:
    offsets = cluster.broker.offsets
    for topic in ("TClone1", "TClone2"):
        assert (await wire.send(topic, b"x", queue_id=0)).code == 0
        upd = {"consumerGroup": "gsrc", "topic": topic, "queueId": "0", "commitOffset": "1"}
        assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, upd)).code == 0
    # the destination's own offsets on a topic are replaced by the source's, not merged
    upd = {"consumerGroup": "gdst", "topic": "TClone1", "queueId": "3", "commitOffset": "7"}
    assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, upd)).code == 0
    one = await wire.call(RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "gsrc", "destGroup": "gdst",
                                                           "topic": "TClone1", "offline": "false"})  # fmt: skip
    assert one.code == ResponseCode.SUCCESS
    assert offsets.offsets_of("gdst", "TClone1") == {0: 1} and offsets.offsets_of("gdst", "TClone2") == {}
    # without a topic: every topic the source has offsets on
    every = await wire.call(RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "gsrc", "destGroup": "gall"})
    assert every.code == ResponseCode.SUCCESS
    assert offsets.topics_of_group("gall") == {"TClone1", "TClone2"}
    # a source online without a subscription to the topic: skipped unless offline
    hb = HeartbeatData("csrc", [], [ConsumerData("gsrc", subscriptions=[SubscriptionData.of("TClone2", "*")])])
    assert (await wire.call(RequestCode.HEART_BEAT, body=hb.encode())).code == 0
    ask = {"srcGroup": "gsrc", "destGroup": "gon", "topic": "TClone1", "offline": "false"}
    assert (await wire.call(RequestCode.CLONE_GROUP_OFFSET, ask)).code == ResponseCode.SUCCESS
    assert offsets.offsets_of("gon", "TClone1") == {}
    assert (await wire.call(RequestCode.CLONE_GROUP_OFFSET, {**ask, "offline": "true"})).code == ResponseCode.SUCCESS
    assert offsets.offsets_of("gon", "TClone1") == {0: 1}
    # a topic unknown to the broker or without the source's offsets changes nothing; a missing field is an error
    assert (await wire.send("TClone9", b"x")).code == 0
    for topic in ("TNoSuch", "TClone9"):
        ask = {"srcGroup": "gsrc", "destGroup": "gnone", "topic": topic, "offline": "true"}
        assert (await wire.call(RequestCode.CLONE_GROUP_OFFSET, ask)).code == ResponseCode.SUCCESS
    assert offsets.topics_of_group("gnone") == set()
    bad = await wire.call(RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "gsrc"})
    assert bad.code == ResponseCode.SYSTEM_ERROR and "destGroup" in (bad.remark or "")


async def test_all_producer_info_lists_every_producer_group(wire: Wire) -> None:
    before = int(time.time() * 1000)
    assert (await wire.call(RequestCode.HEART_BEAT, body=HeartbeatData("pa-1", ["pga", "pgb"], []).encode())).code == 0
    resp = await wire.call(RequestCode.GET_ALL_PRODUCER_INFO)
    assert resp.code == ResponseCode.SUCCESS
    data = orjson.loads(resp.body)["data"]
    assert {"pga", "pgb"} <= set(data)
    (info,) = data["pga"]
    assert (info["clientId"], info["language"]) == ("pa-1", "PYTHON")  # the test's own client
    assert re.fullmatch(r"/127\.0\.0\.1:\d+", info["remoteIP"])  # a Java SocketAddress's toString
    assert before - 1000 <= info["lastUpdateTimestamp"] <= int(time.time() * 1000) + 1000
    unregister = {"clientID": "pa-1", "producerGroup": "pga"}
    assert (await wire.call(RequestCode.UNREGISTER_CLIENT, unregister)).code == 0
    assert "pga" not in orjson.loads((await wire.call(RequestCode.GET_ALL_PRODUCER_INFO)).body)["data"]
