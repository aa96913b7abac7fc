"""The differential suite: the same hand-built requests to a Java 4.9.7 name server + broker and to rocketq's.

Each scenario is one coroutine run against both sides (``Side``); it returns its observations (see
``differential.observe``), and the test asserts the two are equal. Differences that are deliberate are
listed in docs/compatibility.md ("Deliberate differences ...") and asserted here as what rocketq does
(``DELIBERATE``; ``test_deliberate_differences_are_documented`` keeps the two in step).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import diff_scenarios as sc
import pytest
import pytest_asyncio
from differential import NO_ANSWER, Side, assert_same

from rocketq.remoting.client import RemotingClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.java import JavaCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")

RQ_CLUSTER = "RqCluster"
RQ_BROKER = "rq-broker-a"

Scenario = Callable[[Side], Awaitable[dict[str, Any]]]


@contextlib.asynccontextmanager
async def rocketq_cluster(base: Path) -> AsyncIterator[EmbeddedCluster]:
    """A rocketq name server + broker with the Java broker's settings (rocketq.testing.java)."""
    async with EmbeddedCluster(
        base,
        brokerClusterName=RQ_CLUSTER,
        brokerName=RQ_BROKER,
        mappedFileSizeCommitLog=64 * 1024 * 1024,
        mappedFileSizeConsumeQueue=300_000 * 20,
        autoCreateTopicEnable=True,
        autoCreateSubscriptionGroup=True,
    ) as cluster:
        yield cluster


def rocketq_side(rc: RemotingClient, cluster: EmbeddedCluster) -> Side:
    return Side("rocketq", rc, cluster.namesrv_addr, cluster.broker_addr, RQ_CLUSTER, RQ_BROKER)


def java_side(rc: RemotingClient, cluster: JavaCluster) -> Side:
    return Side("java", rc, cluster.namesrv_addr, cluster.broker_addr, cluster.cluster_name, cluster.broker_name)


class _Errors(logging.Handler):
    """rocketq's ERROR records (a logged exception) while the suite feeds its servers bad input."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


SERVER_ERRORS = _Errors()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sides(java_broker: JavaCluster, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Side, Side]]:
    rc = RemotingClient()
    logging.getLogger("rocketq").addHandler(SERVER_ERRORS)
    try:
        async with rocketq_cluster(tmp_path_factory.mktemp("rocketq-diff")) as cluster:
            yield java_side(rc, java_broker), rocketq_side(rc, cluster)
    finally:
        logging.getLogger("rocketq").removeHandler(SERVER_ERRORS)
        await rc.close()


async def both(sides: tuple[Side, Side], scenario: Scenario) -> tuple[dict[str, Any], dict[str, Any]]:
    java, rq = sides
    a, b = await asyncio.gather(scenario(java), scenario(rq))
    return a, b


# ------------------------------------------------------------------------------ deliberate differences

#: The rows of docs/compatibility.md "Deliberate differences from a Java 4.9 broker and name server" this suite
#: asserts, by their "where" cell (``test_deliberate_differences_are_documented`` checks each is in the table).
DELIBERATE = (
    "name server, unknown request code",
    "route data `brokerAddrs` keys",
    "GET_BROKER_CLUSTER_INFO `brokerAddrs` keys",
    "stored message properties",
    "send to a topic whose perm lacks WRITE",
    "request without a mandatory header field",
    "UPDATE_AND_CREATE_TOPIC `order`",
    "GET_BROKER_RUNTIME_INFO keys",
    "ROCKETMQ-serialised request from language CPP",
    'send with `batch` "1" (C++ 1.2.3 batches)',
    "heartbeat `codeSet` (C++ 1.2.3 sends `atoi(tag)`)",
    "properties of a delivered delayed or committed transactional message",
    "header integer wider than its Java type",
    "UPDATE_CONSUMER_OFFSET / a pull's commitOffset out of range",
    "queue counts above `maxTopicQueueNums`",
)

COMPATIBILITY_DOC = Path(__file__).resolve().parents[3] / "docs" / "compatibility.md"


ABSENT = "<absent>"


def deliberate(row: str, java: dict[str, Any], rq: dict[str, Any], key: str) -> tuple[Any, Any]:
    """Take ``key`` out of both observations (``ABSENT`` where it is not): a difference documented in row
    ``row``. The caller asserts both values (Java's and rocketq's behaviour as the row states them)."""
    assert row in DELIBERATE, row
    return java.pop(key, ABSENT), rq.pop(key, ABSENT)


def refused_for_a_missing_field(obs: dict[str, Any]) -> bool:
    """rocketq's answer to a request without a mandatory header field: SYSTEM_ERROR with a reason, nothing else."""
    return obs["code"] == 1 and obs["remark"] is True and obs["ext"] == {}


def stored(obs: dict[str, Any]) -> bool:
    return obs["code"] == 0 and {"msgId", "queueId", "queueOffset"} <= set(obs["ext"])


def props_separators(java_records: list[dict[str, Any]], rq_records: list[dict[str, Any]]) -> None:
    """Each pulled record's properties text: Java's ends without 0x02, rocketq's with it."""
    for j, r in zip(java_records, rq_records, strict=True):
        java_end, rq_end = deliberate("stored message properties", j, r, "propertiesEndWithSeparator")
        assert (java_end, rq_end) == (False, True)


async def test_deliberate_differences_are_documented() -> None:
    text = COMPATIBILITY_DOC.read_text()
    table = text.split("## Deliberate differences from a Java 4.9 broker and name server", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ")}
    missing = [row for row in DELIBERATE if row not in rows]
    assert not missing, f"not in the table of {COMPATIBILITY_DOC.name}: {missing}"
    assert "## Differential suite" in text


# ------------------------------------------------------------------------------------------------ tests


async def test_send_statuses(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_send_statuses)
    assert stored(java["v1"]) and stored(java["v2"]) and java["v2"]["ext"]["queueOffset"] == "1"
    assert_same(java, rq)


async def test_send_batches(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_send_batches)
    assert (java["v2_batch"]["ext"]["queueOffset"], java["v1_batch"]["ext"]["queueOffset"]) == ("0", "3")
    assert java["v2_batch"]["ext"]["msgId"] == "<msgId x3>"  # one offset id per message
    props_separators(java["records"]["body"], rq["records"]["body"])
    assert_same(java, rq)


async def test_send_to_missing_system_and_read_only_topics(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_send_topics)
    java_ro, rq_ro = deliberate("send to a topic whose perm lacks WRITE", java, rq, "read_only")
    assert stored(java_ro) and rq_ro["code"] == 16
    assert_same(java, rq)


async def test_send_bad_input(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_send_bad_input)
    for key in ("missing_topic_v1", "missing_topic_v2"):
        java_obs, rq_obs = deliberate("request without a mandatory header field", java, rq, key)
        assert java_obs["code"] == 1 and refused_for_a_missing_field(rq_obs)  # Java: "topic is blank"
    assert_same(java, rq)


async def test_send_without_each_header_field(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_send_missing_fields)
    row = "request without a mandatory header field"
    for dialect in ("v1", "v2"):
        # fields Java never reads on this path: stored there, refused by rocketq
        for name in ("producerGroup", "defaultTopic", "defaultTopicQueueNums"):
            java_obs, rq_obs = deliberate(row, java, rq, f"{dialect}_no_{name}")
            assert stored(java_obs) and refused_for_a_missing_field(rq_obs), name
        java_obs, rq_obs = deliberate(row, java, rq, f"{dialect}_no_topic")
        assert java_obs["code"] == 1 and refused_for_a_missing_field(rq_obs)
        for name in ("queueId", "sysFlag", "bornTimestamp", "flag"):  # Java: SYSTEM_ERROR from a null
            assert refused_for_a_missing_field(rq[f"{dialect}_no_{name}"]), name
    assert_same(java, rq)


async def test_pulled_records_carry_every_field(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_records)
    records = java["pull"]["body"]
    assert [r["flag"] for r in records][:2] == [0, 12345] and "WAIT" not in records[0]["properties"]
    assert records[0]["properties"]["CLUSTER"] == "<CLUSTER>" and records[4]["reconsumeTimes"] == 3
    props_separators(java["pull"]["body"], rq["pull"]["body"])
    assert_same(java, rq)


async def test_pull_status_codes(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_pull_statuses)
    assert [java[k]["code"] for k in ("at_0", "at_max", "beyond_max", "below_min", "tag_none_match")] == [
        0, 19, 21, 21, 20,
    ]  # fmt: skip
    assert_same(java, rq)


async def test_pull_subscription_rules(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_pull_subscriptions)
    assert [java[k]["code"] for k in ("no_heartbeat", "after_heartbeat", "newer_sub_version")] == [24, 0, 25]
    # SQL92 on a broker without enablePropertyFilter: SYSTEM_ERROR (1), by the pull's own subscription or a
    # heartbeat's (issue 20 item 10: rocketq once answered NO_PERMISSION, 16)
    assert [java[k]["code"] for k in ("sql92_disabled", "sql92_disabled_by_heartbeat")] == [1, 1]
    assert_same(java, rq)


async def test_consumer_offsets_and_queue_offsets(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_offsets)
    assert java["query_new_group_young_queue"] == {"code": 0, "serializeType": 0, "ext": {"offset": "0"},
                                                   "body": ""}  # fmt: skip
    assert_same(java, rq)


async def test_values_out_of_range(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_values_out_of_range)
    for key in ("update_offset_2^70", "send_born_2^70", "send_queue_2^31"):  # refused on both sides
        assert java[key]["code"] == rq[key]["code"] == 1, key
    java_neg, rq_neg = deliberate("UPDATE_CONSUMER_OFFSET / a pull's commitOffset out of range", java, rq,
                                  "update_negative_offset")  # fmt: skip
    assert (java_neg["code"], rq_neg["code"]) == (0, 1)
    java_q, rq_q = deliberate("UPDATE_CONSUMER_OFFSET / a pull's commitOffset out of range", java, rq,
                              "query_after_negative")  # fmt: skip
    # Java replaced the group's offset 1 by -1 ("none": its young-queue rule then answers 0); rocketq kept 1
    assert (java_q["ext"], rq_q["ext"]) == ({"offset": "0"}, {"offset": "1"})
    java_f, rq_f = deliberate("header integer wider than its Java type", java, rq, "create_sys_flag_2^70")
    assert (java_f["code"], rq_f["code"]) == (0, 1)
    java_w, rq_w = deliberate("queue counts above `maxTopicQueueNums`", java, rq, "create_2000_queues")
    assert (java_w["code"], rq_w["code"]) == (0, 1)
    assert_same(java, rq)


async def test_long_polling(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_long_poll)
    assert java["parked"] is False and java["woken"]["code"] == 0
    assert_same(java, rq)


async def test_admin_topics(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_admin_topics)
    java_t, rq_t = java["all_topic_config"]["topics"], rq["all_topic_config"]["topics"]
    ordered = next(k for k in java_t if k.startswith("DiffAdmOrd"))
    java_o, rq_o = deliberate("UPDATE_AND_CREATE_TOPIC `order`", java_t[ordered], rq_t[ordered], "order")
    assert (java_o, rq_o) == (False, True)
    assert java["create_tbw102"]["code"] == 1 and java["delete_broker"]["code"] == 0
    assert_same(java, rq)


async def test_admin_groups_and_clients(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_admin_groups)
    for key in ("consume_stats", "consume_stats_all_topics", "consume_stats_unknown"):
        assert java[key]["body"]["consumeTps"] == 0.0  # no pulls by this group; compared with rocketq's below
    assert java["list"]["code"] == 0 and java["list_before"]["code"] == 1
    assert_same(java, rq)


# Java's keys rocketq leaves out (no thread pools for them, no per-put latency timing) and rocketq's own.
RUNTIME_ONLY_JAVA = frozenset({
    "EndTransactionQueueSize", "EndTransactionThreadPoolQueueCapacity", "getMessageEntireTimeMax",
    "pullThreadPoolQueueCapacity", "putLatency99", "putLatency999", "putMessageDistributeTime",
    "putMessageEntireTimeMax", "queryThreadPoolQueueCapacity", "queryThreadPoolQueueHeadWaitTimeMills",
    "queryThreadPoolQueueSize",
})  # fmt: skip
RUNTIME_ONLY_ROCKETQ = frozenset(
    {"brokerName", "brokerRole", "commitLogFlushedOffset", "flushDiskType", "heldPullRequests", "storeRunningFlags",
     "aclEnable",  # whether the broker checks ACL (docs/security.md)
     # the disk-full keys (docs/reliability.md)
     "storeDiskFull", "storeDiskFreeBytes", "storeDiskMinFreeBytes", "storeForcedCleanFiles", "storeForcedCleanBytes",
     "storeForcedCleanLastRatio", "storeForcedCleanLastTimeStamp"}
)  # fmt: skip


async def test_broker_runtime_info_keys(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_runtime_info)
    java_keys, rq_keys = deliberate("GET_BROKER_RUNTIME_INFO keys", java["runtime"], rq["runtime"], "keys")
    path_key = re.compile(r"commitLogDiskRatio_/.+")  # one per store path; the paths differ
    java_keys = {path_key.sub("commitLogDiskRatio_<path>", k) for k in java_keys}
    rq_keys = {path_key.sub("commitLogDiskRatio_<path>", k) for k in rq_keys}
    assert java_keys - rq_keys == RUNTIME_ONLY_JAVA and rq_keys - java_keys == RUNTIME_ONLY_ROCKETQ
    assert_same(java, rq)


async def test_name_server_answers(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_namesrv)
    java_obs, rq_obs = deliberate("request without a mandatory header field", java, rq, "route_missing_topic")
    assert java_obs["code"] == 17 and refused_for_a_missing_field(rq_obs)
    java_raw, rq_raw = deliberate("route data `brokerAddrs` keys", java, rq, "route_old_client_raw")
    assert java_raw.startswith('{"brokerDatas":[{"brokerAddrs":{0:') and '"brokerAddrs":{"0":' in rq_raw
    java_raw, rq_raw = deliberate("GET_BROKER_CLUSTER_INFO `brokerAddrs` keys", java, rq, "cluster_info_raw")
    assert '"brokerAddrs":{0:' in java_raw and '"brokerAddrs":{"0":' in rq_raw
    assert java["route"]["code"] == 0 and java["route_unknown"]["code"] == 17
    assert_same(java, rq)


async def test_bad_requests_to_the_broker(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_bad_requests)
    row = "request without a mandatory header field"
    # the field is not needed on Java's path (the flags leave it unread, a null group or client id is kept)
    for key in ("pull_no_commit_offset", "pull_no_sub_version", "pull_no_suspend", "query_offset_no_group",
                "unregister_no_client"):  # fmt: skip
        java_obs, rq_obs = deliberate(row, java, rq, key)
        assert java_obs["code"] == 0 and refused_for_a_missing_field(rq_obs), key
    java_obs, rq_obs = deliberate(row, java, rq, "heartbeat_no_client_id")  # a HeartbeatData without clientID
    assert java_obs["code"] == 0 and rq_obs["code"] == 1
    assert java["broker_unknown_code"]["code"] == 3
    assert_same(java, rq)


async def test_hand_made_frames_to_the_broker(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_frames_broker)
    java_obs, rq_obs = deliberate("ROCKETMQ-serialised request from language CPP", java, rq, "rocketmq_serialize_cpp")
    assert (java_obs.pop("serializeType"), rq_obs.pop("serializeType")) == (1, 0)
    assert_same(java_obs, rq_obs)
    assert java["malformed_json"] == {"closed": True, "pushed": [], "answer": NO_ANSWER}
    assert java["rocketmq_serialize"]["serializeType"] == 1
    assert_same(java, rq)


async def test_hand_made_frames_to_the_name_server(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_frames_namesrv)
    row = "name server, unknown request code"
    for key in ("unknown_code", "broker_code_at_namesrv"):
        java_obs, rq_obs = deliberate(row, java, rq, key)
        assert java_obs == {"answer": NO_ANSWER} and rq_obs["code"] == 3
    java_obs, rq_obs = deliberate(row, java, rq, "no_code")  # read as code 0
    assert java_obs["answer"] == NO_ANSWER and rq_obs["answer"]["code"] == 3
    java_obs, rq_obs = deliberate("request without a mandatory header field", java, rq, "no_ext")
    assert java_obs["answer"]["code"] == 17 and refused_for_a_missing_field(rq_obs["answer"])
    assert_same(java, rq)


async def test_cpp_client_dialect(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_cpp_dialect)
    row = "heartbeat `codeSet` (C++ 1.2.3 sends `atoi(tag)`)"
    java_conn, rq_conn = deliberate(row, java, rq, "connections")
    java_sub = next(iter(java_conn["body"]["subscriptionTable"].values()))
    rq_sub = next(iter(rq_conn["body"]["subscriptionTable"].values()))
    assert (java_sub["codeSet"], rq_sub["codeSet"]) == ([10], [1567])  # "10".hashCode()
    java_pull, rq_pull = deliberate(row, java, rq, "pull_by_heartbeat")
    assert (java_pull["code"], rq_pull["code"], rq_pull["bodies"]) == (20, 0, ["cpp-body"])
    assert java["send"]["answer"]["code"] == 0
    assert_same(java, rq)


async def test_cpp_batch_flag(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_cpp_batch_flag)
    row = 'send with `batch` "1" (C++ 1.2.3 batches)'
    java_send, rq_send = deliberate(row, java, rq, "send")
    assert (java_send["answer"]["ext"]["msgId"], rq_send["answer"]["ext"]["msgId"]) == ("<msgId x1>", "<msgId x2>")
    java_pull, rq_pull = deliberate(row, java, rq, "pull")
    assert len(java_pull["bodies"]) == 1 and rq_pull["bodies"] == ["cb0", "cb1"]
    assert_same(java, rq)


LEFT_BEHIND = "properties of a delivered delayed or committed transactional message"


async def test_transactions(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_transactions)
    assert java["prepared_offset_is_the_halfs"] is True
    committed_java, committed_rq = java["real_topic"]["body"][0], rq["real_topic"]["body"][0]
    assert committed_java["sysFlag"] == 8 and committed_java["preparedTransactionOffset"] == "<commit-log offset>"
    for name in ("REAL_TOPIC", "REAL_QID", "TRAN_MSG"):
        java_value, rq_value = deliberate(LEFT_BEHIND, committed_java["properties"], committed_rq["properties"], name)
        assert java_value != ABSENT and rq_value == ABSENT, name
    props_separators(java["real_topic"]["body"], rq["real_topic"]["body"])
    assert [java[k]["code"] for k in ("end_commit", "end_rollback", "end_wrong_group", "end_unknown_offset")] == [
        0, 0, 1, 1,
    ]  # fmt: skip
    assert java["end_not_type"] == {"answer": NO_ANSWER}
    assert_same(java, rq)


async def test_delay_levels_and_dead_letters(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_delay_and_send_back)
    delivered_java, delivered_rq = java["delivered"]["body"], rq["delivered"]["body"]
    later_java = next(r for r in delivered_java if r["body"] == "later")
    later_rq = next(r for r in delivered_rq if r["body"] == "later")
    assert deliberate(LEFT_BEHIND, later_java["properties"], later_rq["properties"], "DELAY") == ("1", ABSENT)
    assert later_java["properties"]["REAL_TOPIC"] == later_java["topic"]  # both keep REAL_TOPIC/REAL_QID here
    dead = java["dlq"]["body"][0]["properties"]
    assert (dead["WAIT"], dead["DELAY"], dead["ORIGIN_MESSAGE_ID"]) == ("false", "0", "<offsetMsgId>")
    assert java["dlq_blank_origin"]["body"][0]["properties"]["ORIGIN_MESSAGE_ID"] == "<offsetMsgId>"
    props_separators(delivered_java, delivered_rq)
    props_separators(java["dlq"]["body"], rq["dlq"]["body"])
    props_separators(java["dlq_blank_origin"]["body"], rq["dlq_blank_origin"]["body"])
    assert_same(java, rq)


async def test_query_and_view_messages(sides: tuple[Side, Side]) -> None:
    java, rq = await both(sides, sc.sc_query_and_view)
    assert java["by_key"]["code"] == 0 and [r["body"] for r in java["by_key"]["body"]] == ["find me"]
    assert java["by_missing_key"]["code"] == 22
    for key in ("by_key", "by_unique_key", "view_by_id"):
        props_separators(java[key]["body"], rq[key]["body"])
    assert_same(java, rq)


async def test_no_client_mistake_made_a_server_error(sides: tuple[Side, Side]) -> None:
    """Runs last: every bad request above was answered (or its connection closed) without an error logged."""
    assert [r.getMessage() for r in SERVER_ERRORS.records] == []
