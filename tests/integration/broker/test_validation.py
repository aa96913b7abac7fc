"""Validation at the gate, one test per field family: a request with a number or a name out of range is
refused with Java's code (SYSTEM_ERROR) and a remark naming the field, without a traceback, and nothing of it
is stored: not in the broker's tables, not after a graceful restart. A valid request of the same kind in the
same test is stored and survives the restart, so a save that failed silently would show."""

from __future__ import annotations

import json
import logging
from typing import Any

import orjson
import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.bodies import ConsumerData, HeartbeatData
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire

TWO_70 = str(2**70)
INT32_OVER = str(2**31)
INT64_OVER = str(2**63)


@pytest.fixture(autouse=True)
def no_tracebacks(caplog: pytest.LogCaptureFixture) -> Any:
    """A client's mistake is never logged with a stack trace."""
    caplog.set_level(logging.WARNING, logger="rocketq")
    yield
    traced = [r.getMessage() for r in caplog.records if r.exc_info]
    assert not traced, traced


async def restarted(cluster: EmbeddedCluster, rc: RemotingClient) -> Wire:
    await cluster.restart_broker()
    return Wire(rc, cluster.broker_addr)


def refused(resp: RemotingCommand, field: str) -> bool:
    return resp.code == ResponseCode.SYSTEM_ERROR and field in (resp.remark or "") and not resp.ext_fields


def topic_header(topic: str, **fields: Any) -> dict[str, Any]:
    return {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6,
            "topicFilterType": "SINGLE_TAG", **fields}  # fmt: skip


async def all_topics(wire: Wire) -> set[str]:
    resp = await wire.call(RequestCode.GET_ALL_TOPIC_CONFIG)
    return set(orjson.loads(resp.body)["topicConfigTable"])


# ---------------------------------------------------------------------------------------- queue count


@pytest.mark.parametrize("cluster", [{"maxTopicQueueNums": 64}], indirect=True)
async def test_a_queue_count_beyond_max_topic_queue_nums_is_refused(
    cluster: EmbeddedCluster, wire: Wire, rc: RemotingClient
) -> None:
    bad = [("readQueueNums", "65"), ("writeQueueNums", "100000"), ("readQueueNums", "0"), ("writeQueueNums", "-1"),
           ("readQueueNums", INT32_OVER), ("writeQueueNums", TWO_70)]  # fmt: skip
    for i, (field, value) in enumerate(bad):
        resp = await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header(f"TQ{i}", **{field: value}))
        assert refused(resp, field), (field, value, resp.code, resp.remark)
    group = {"groupName": "GQ", "retryQueueNums": 65}
    resp = await wire.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=orjson.dumps(group))
    assert refused(resp, "retryQueueNums")
    ok = await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header("TQok", readQueueNums=64, writeQueueNums=64))
    assert ok.code == ResponseCode.SUCCESS
    beyond = await wire.send("TQok", b"x", queue_id=64)  # Java's msgCheck
    assert beyond.code == ResponseCode.SYSTEM_ERROR and "queueId[64] is illegal" in (beyond.remark or "")
    assert (await wire.send("TQok", b"x", queue_id=63)).code == ResponseCode.SUCCESS
    assert {f"TQ{i}" for i in range(len(bad))} & set(cluster.broker.topics.table) == set()
    assert "GQ" not in cluster.broker.groups.table
    wire = await restarted(cluster, rc)
    topics = await all_topics(wire)
    assert "TQok" in topics and not {f"TQ{i}" for i in range(len(bad))} & topics
    assert cluster.broker.store.get_max_offset_in_queue("TQok", 63) == 1
    assert "GQ" not in cluster.broker.groups.table


async def test_max_topic_queue_nums_changes_at_run_time(cluster: EmbeddedCluster, wire: Wire) -> None:
    """mqadmin updateBrokerConfig -k maxTopicQueueNums: applied at once; never below defaultTopicQueueNums."""
    lowered = await wire.call(RequestCode.UPDATE_BROKER_CONFIG, body=b"maxTopicQueueNums=16")
    assert lowered.code == ResponseCode.SUCCESS
    resp = await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header("TLive", readQueueNums=17))
    assert refused(resp, "readQueueNums") and "16" in (resp.remark or "")
    ok = await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header("TLive", readQueueNums=16))
    assert ok.code == ResponseCode.SUCCESS
    below_default = await wire.call(RequestCode.UPDATE_BROKER_CONFIG, body=b"maxTopicQueueNums=2")  # default: 8
    assert below_default.code == ResponseCode.SYSTEM_ERROR and "defaultTopicQueueNums" in (below_default.remark or "")
    assert cluster.broker.config.maxTopicQueueNums == 16


# --------------------------------------------------------------------------------------------- offset


async def test_an_offset_commit_out_of_range_is_refused(
    cluster: EmbeddedCluster, wire: Wire, rc: RemotingClient
) -> None:
    assert (await wire.send("TOff", b"x")).code == ResponseCode.SUCCESS

    def commit(**fields: Any) -> dict[str, Any]:
        return {"consumerGroup": "GOff", "topic": "TOff", "queueId": 0, "commitOffset": 1, **fields}

    bad = [(commit(commitOffset=-1), "commitOffset"), (commit(commitOffset=INT64_OVER), "commitOffset"),
           (commit(commitOffset=TWO_70), "commitOffset"), (commit(queueId=-1), "queueId"),
           (commit(queueId=1024), "queueId"), (commit(queueId=INT32_OVER), "queueId"),
           (commit(topic="TOff@x"), "topic"), (commit(consumerGroup=" "), "consumerGroup"),
           (commit(consumerGroup="g" * 256), "consumerGroup")]  # fmt: skip
    for ext, field in bad:
        resp = await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, ext)
        assert refused(resp, field), (ext, resp.code, resp.remark)
    pull = await wire.call(RequestCode.PULL_MESSAGE, {
        "consumerGroup": "GPull", "topic": "TOff", "queueId": 0, "queueOffset": 0, "maxMsgNums": 1, "sysFlag": 5,
        "commitOffset": -5, "suspendTimeoutMillis": 0, "subscription": "*", "subVersion": 0})  # fmt: skip
    assert refused(pull, "commitOffset")
    good = await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, commit(commitOffset=1, queueId=1023))
    assert good.code == ResponseCode.SUCCESS
    assert cluster.broker.offsets.table == {"TOff@GOff": {1023: 1}}
    assert "GPull" not in cluster.broker.groups.table
    await restarted(cluster, rc)
    assert cluster.broker.offsets.table == {"TOff@GOff": {1023: 1}}
    assert "GPull" not in cluster.broker.groups.table


# ----------------------------------------------------------------------------------------------- flag


async def test_a_flag_wider_than_its_java_type_is_refused(
    cluster: EmbeddedCluster, wire: Wire, rc: RemotingClient
) -> None:
    resp = await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header("TFlag", topicSysFlag=TWO_70))
    assert refused(resp, "topicSysFlag") and "32-bit" in (resp.remark or "")
    resp = await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header("TFlag", perm=INT32_OVER))
    assert refused(resp, "perm")
    for field, value in (("brokerId", 2**70), ("whichBrokerWhenConsumeSlowly", 2**64), ("retryMaxTimes", 2**31),
                         ("brokerId", "x"), ("retryMaxTimes", [1])):  # fmt: skip
        body = json.dumps({"groupName": "GFlag", field: value}).encode()
        resp = await wire.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
        assert refused(resp, field), (field, value, resp.remark)
    send = await wire.send("TFlagSend", b"x", queue_id=0, props=None)
    assert send.code == ResponseCode.SUCCESS
    ext = {"a": "pg", "b": "TFlagSend", "c": "TBW102", "d": 4, "e": 0, "f": INT32_OVER, "g": 1, "h": 0}
    assert refused(await wire.call(RequestCode.SEND_MESSAGE_V2, ext, b"y"), "sysFlag")
    assert refused(await wire.call(RequestCode.SEND_MESSAGE_V2, {**ext, "f": 0, "h": TWO_70}, b"y"), "flag")
    assert cluster.broker.store.get_max_offset_in_queue("TFlagSend", 0) == 1
    assert "TFlag" not in cluster.broker.topics.table and "GFlag" not in cluster.broker.groups.table
    wire = await restarted(cluster, rc)
    assert "TFlag" not in await all_topics(wire) and "GFlag" not in cluster.broker.groups.table
    assert cluster.broker.store.get_max_offset_in_queue("TFlagSend", 0) == 1


# ------------------------------------------------------------------------------------------ timestamp


@pytest.mark.parametrize("v2", [True, False])
async def test_a_born_timestamp_out_of_range_is_refused_without_a_traceback(
    cluster: EmbeddedCluster, wire: Wire, rc: RemotingClient, v2: bool
) -> None:
    assert (await wire.send("TTime", b"first")).code == ResponseCode.SUCCESS
    v1 = {"producerGroup": "pg", "topic": "TTime", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
          "queueId": 0, "sysFlag": 0, "flag": 0}  # fmt: skip
    letters = dict(zip(["producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
                        "flag"], "abcdefh", strict=True))  # fmt: skip
    for value in (TWO_70, "1e300", INT64_OVER, str(-(2**63) - 1)):
        ext = {**v1, "bornTimestamp": value}
        if v2:
            ext = {letters.get(k, "g"): v for k, v in ext.items()}
        resp = await wire.call(RequestCode.SEND_MESSAGE_V2 if v2 else RequestCode.SEND_MESSAGE, ext, b"late")
        assert refused(resp, "bornTimestamp"), (value, resp.code, resp.remark)
    search = {"topic": "TTime", "queueId": 0, "timestamp": TWO_70}
    assert refused(await wire.call(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, search), "timestamp")
    reset_ext = {"topic": "TTime", "group": "GTime", "timestamp": "1e300", "isForce": "true"}
    reset = await wire.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset_ext)
    assert refused(reset, "timestamp") and "TTime@GTime" not in cluster.broker.offsets.table
    assert cluster.broker.store.get_max_offset_in_queue("TTime", 0) == 1
    await restarted(cluster, rc)
    assert cluster.broker.store.get_max_offset_in_queue("TTime", 0) == 1


# -------------------------------------------------------------------------------------- name / length


async def test_a_name_out_of_its_rules_is_refused(cluster: EmbeddedCluster, wire: Wire, rc: RemotingClient) -> None:
    for topic in ("T" * 128, "", "a b", "T@x"):
        resp = await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header(topic))
        assert resp.code == ResponseCode.SYSTEM_ERROR and "topic" in (resp.remark or ""), (topic, resp.remark)
        assert (await wire.send(topic, b"x")).code == ResponseCode.SYSTEM_ERROR
    long_group = {"groupName": "G" * 256}
    assert refused(await wire.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=orjson.dumps(long_group)),
                   "groupName")  # fmt: skip
    pull = await wire.pull("TName", 0, 0, group="G" * 256)
    assert refused(pull, "consumerGroup")
    consumer = ConsumerData("G" * 256, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", [])
    beat = await wire.call(RequestCode.HEART_BEAT, body=HeartbeatData("c1", [], [consumer]).encode())
    assert refused(beat, "groupName") and "%RETRY%" + "G" * 256 not in cluster.broker.topics.table
    ok = await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header("T" * 127))
    assert ok.code == ResponseCode.SUCCESS
    groups = set(cluster.broker.groups.table)
    assert "G" * 256 not in groups
    wire = await restarted(cluster, rc)
    topics = await all_topics(wire)
    assert "T" * 127 in topics and not {"T" * 128, "a b", "T@x"} & topics
    assert set(cluster.broker.groups.table) == groups


# ----------------------------------------------------------------------------------- int32 / int64


async def test_integers_wider_than_their_java_type_are_refused(cluster: EmbeddedCluster, wire: Wire) -> None:
    """Each request family once, its Integer field at 2^31 and its Long field at 2^63: refused naming it."""
    assert (await wire.send("TWide", b"x")).code == ResponseCode.SUCCESS
    cases = [
        (RequestCode.PULL_MESSAGE, {"consumerGroup": "cg", "topic": "TWide", "queueId": INT32_OVER, "queueOffset": 0,
                                    "maxMsgNums": 1, "sysFlag": 0, "commitOffset": 0, "suspendTimeoutMillis": 0,
                                    "subVersion": 0}, "queueId"),
        (RequestCode.PULL_MESSAGE, {"consumerGroup": "cg", "topic": "TWide", "queueId": 0, "queueOffset": INT64_OVER,
                                    "maxMsgNums": 1, "sysFlag": 0, "commitOffset": 0, "suspendTimeoutMillis": 0,
                                    "subVersion": 0}, "queueOffset"),
        (RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "cg", "topic": "TWide", "queueId": INT32_OVER},
         "queueId"),
        (RequestCode.GET_MAX_OFFSET, {"topic": "TWide", "queueId": INT32_OVER}, "queueId"),
        (RequestCode.VIEW_MESSAGE_BY_ID, {"offset": INT64_OVER}, "offset"),
        (RequestCode.QUERY_MESSAGE, {"topic": "TWide", "key": "k", "maxNum": INT32_OVER, "beginTimestamp": 0,
                                     "endTimestamp": 1}, "maxNum"),
        (RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": 0, "group": "cg", "delayLevel": INT32_OVER}, "delayLevel"),
        (RequestCode.END_TRANSACTION, {"producerGroup": "pg", "tranStateTableOffset": 0, "commitLogOffset": INT64_OVER,
                                       "commitOrRollback": 8, "msgId": "x"}, "commitLogOffset"),
        (RequestCode.QUERY_CONSUME_QUEUE, {"topic": "TWide", "queueId": 0, "index": 0, "count": INT32_OVER},
         "count"),
    ]  # fmt: skip
    for code, ext, field in cases:
        resp = await wire.call(code, ext)
        assert refused(resp, field), (code, field, resp.code, resp.remark)
        bits = "32-bit Integer" if field in ("queueId", "maxNum", "delayLevel", "count") else "64-bit Long"
        assert bits in (resp.remark or "")
    assert cluster.broker.store.get_max_offset_in_queue("TWide", 0) == 1
    assert not any(key.endswith("@cg") for key in cluster.broker.offsets.table)
