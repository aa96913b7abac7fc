"""The differential suite's scenarios: hand-built requests, each run against one ``Side`` (Java or rocketq).

Every scenario returns its observations (``differential.observe``) by name; test_differential.py runs it on
both sides and compares. Names are made per side with ``Side.unique`` (the Java broker is shared by the whole
session) and are the same on both sides.
"""

from __future__ import annotations

import asyncio
import re
import time
import zlib
from collections.abc import Callable
from typing import Any

import orjson
from differential import RUN_ID, Side, json_frame, observe, props, raw_exchange

from rocketq.codes import RequestCode as RC
from rocketq.protocol.message import BatchItem, encode_batch
from rocketq.testing.wire import records

# ------------------------------------------------------------------------------------------ request makers

V2_KEYS = dict(
    zip(
        ["producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp",
         "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch"],
        "abcdefghijklm",
        strict=True,
    )
)  # fmt: skip

BORN = "1700000000000"


def send_ext(to: str, *, queue_id: int = 0, p: dict[str, str] | None = None, **over: Any) -> dict[str, str]:
    """SEND_MESSAGE V1 header fields as a Java 4.9 producer fills them (``over``: replace; "<drop>": leave out)."""
    ext = {
        "producerGroup": "diff_pg",
        "topic": to,
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": str(queue_id),
        "sysFlag": "0",
        "bornTimestamp": BORN,
        "flag": "0",
        "properties": props(p if p is not None else {"UNIQ_KEY": "0A000001000018B4AAC2000000000001", "WAIT": "true"}),
        "reconsumeTimes": "0",
        "unitMode": "false",
    }
    ext.update({k: str(v) for k, v in over.items()})
    return {k: v for k, v in ext.items() if v != "<drop>"}


def v2(ext: dict[str, str]) -> dict[str, str]:
    return {V2_KEYS[k]: v for k, v in ext.items()}


def topic_ext(topic: str, *, queues: int = 4, perm: int = 6, **over: Any) -> dict[str, str]:
    ext = {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues), "writeQueueNums": str(queues),
        "perm": str(perm), "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
    }  # fmt: skip
    ext.update({k: str(v) for k, v in over.items()})
    return ext


async def create_topic(s: Side, topic: str, **kw: Any) -> dict[str, Any]:
    return observe(s, await s.b(RC.UPDATE_AND_CREATE_TOPIC, topic_ext(topic, **kw)))


# --------------------------------------------------------------------------------------------- scenarios


async def sc_send_statuses(s: Side) -> dict[str, Any]:
    """SEND_MESSAGE (V1) and V2 to an existing topic: codes, the answer's header fields, offsets."""
    topic = s.unique("DiffSend")
    out: dict[str, Any] = {"create": await create_topic(s, topic)}
    out["v1"] = observe(s, await s.b(RC.SEND_MESSAGE, send_ext(topic), b"one"))
    out["v2"] = observe(s, await s.b(RC.SEND_MESSAGE_V2, v2(send_ext(topic)), b"two"))
    out["v2_queue1"] = observe(s, await s.b(RC.SEND_MESSAGE_V2, v2(send_ext(topic, queue_id=1)), b"three"))
    return out


async def send(
    s: Side, to: str, body: bytes = b"x", *, code: int = RC.SEND_MESSAGE_V2, wait: bool = True, **kw: Any
) -> Any:
    """One send; with ``wait``, returns once the message is in its consume queue (not for a delayed one: its
    answer's offsets are SCHEDULE_TOPIC_XXXX's)."""
    ext = send_ext(to, **kw)
    resp = await s.b(code, v2(ext) if code != RC.SEND_MESSAGE else ext, body)
    if wait:
        await dispatched(s, to, resp)
    return resp


async def dispatched(s: Side, topic: str, resp: Any) -> None:
    """Wait until a stored send is in its consume queue (Java's dispatch runs after the answer)."""
    if isinstance(resp, str) or resp.code != 0 or "queueOffset" not in resp.ext_fields:
        return
    queue = resp.ext_fields["queueId"]
    want = int(resp.ext_fields["queueOffset"]) + len(resp.ext_fields["msgId"].split(","))
    for _ in range(100):
        got = await s.b(RC.GET_MAX_OFFSET, {"topic": topic, "queueId": queue})
        if not isinstance(got, str) and got.code == 0 and int(got.ext_fields["offset"]) >= want:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{s.label}: {topic}/{queue} never reached offset {want}")


async def pull(s: Side, topic: str, queue_id: int, offset: int, **over: Any) -> Any:
    ext = {
        "consumerGroup": "diff_cg", "topic": topic, "queueId": str(queue_id), "queueOffset": str(offset),
        "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
        "subscription": "*", "subVersion": "0", "expressionType": "TAG",
    }  # fmt: skip
    ext.update({k: str(v) for k, v in over.items()})
    return await s.b(RC.PULL_MESSAGE, {k: v for k, v in ext.items() if v != "<drop>"}, timeout=20)


async def sc_send_batches(s: Side) -> dict[str, Any]:
    """SEND_BATCH_MESSAGE (320, m=true) and V1 with batch=true: one msgId per message, first queueOffset."""
    topic = s.unique("DiffBatch")
    await create_topic(s, topic)
    items = [BatchItem(i, f"b{i}".encode(), {"UNIQ_KEY": f"{i:032X}", "KEYS": f"k{i}"}) for i in range(3)]
    out: dict[str, Any] = {}
    ext = send_ext(topic, p={"WAIT": "true"}, batch="true")
    for name, code, fields, body in (
        ("v2_batch", RC.SEND_BATCH_MESSAGE, v2(ext), encode_batch(items)),
        ("v1_batch", RC.SEND_MESSAGE, ext, encode_batch(items)),
        # code 320 without the batch flag: the flag decides, not the code
        ("320_no_flag", RC.SEND_BATCH_MESSAGE, v2(send_ext(topic)), b"plain"),
    ):
        resp = await s.b(code, fields, body)
        await dispatched(s, topic, resp)
        out[name] = observe(s, resp)
    out["records"] = observe(s, await pull(s, topic, 0, 0), body="records")
    return out


async def sc_send_topics(s: Side) -> dict[str, Any]:
    """Sends to missing topics (auto-create from TBW102, or not), bad queue ids, system and read-only topics."""
    out: dict[str, Any] = {}
    auto = s.unique("DiffAuto")
    out["auto_create"] = observe(s, await send(s, auto, defaultTopicQueueNums=3))
    out["auto_create_again"] = observe(s, await send(s, auto, queue_id=2))
    out["auto_create_queue_3"] = observe(s, await send(s, auto, queue_id=3))
    out["no_default"] = observe(s, await send(s, s.unique("DiffNoDef"), defaultTopic="NoSuchDefault"))
    out["default_not_inherit"] = observe(s, await send(s, s.unique("DiffNoInh"), defaultTopic=auto))
    fixed = s.unique("DiffQ")
    await create_topic(s, fixed)
    out["queue_4_of_4"] = observe(s, await send(s, fixed, queue_id=4))
    out["queue_99"] = observe(s, await send(s, fixed, queue_id=99))
    out["queue_minus_1"] = observe(s, await send(s, fixed, queue_id=-1), variable=["queueId"])
    for sys_topic in ("SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
                      "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT"):  # fmt: skip
        out[f"system_{sys_topic}"] = observe(s, await send(s, sys_topic))
    out["to_TBW102"] = observe(s, await send(s, "TBW102"), variable=["queueOffset"])  # shared by the session
    read_only = s.unique("DiffRO")
    out["create_read_only"] = await create_topic(s, read_only, perm=4)
    out["read_only"] = observe(s, await send(s, read_only))
    write_only = s.unique("DiffWO")
    await create_topic(s, write_only, perm=2)
    out["write_only"] = observe(s, await send(s, write_only))
    out["write_only_pull"] = observe(s, await pull(s, write_only, 0, 0))
    return out


async def sc_send_bad_input(s: Side) -> dict[str, Any]:
    """Illegal topic names, oversized bodies and properties, bad numbers and missing fields in send headers."""
    out: dict[str, Any] = {}
    out["illegal_chars"] = observe(s, await send(s, "bad topic!"))
    out["too_long_128"] = observe(s, await send(s, "L" * 128))
    out["longest_127"] = observe(s, await send(s, s.unique("L" * 113)))
    out["empty_topic"] = observe(s, await send(s, ""))
    topic = s.unique("DiffBad")
    await create_topic(s, topic)
    out["body_4MiB_plus_1"] = observe(s, await send(s, topic, b"x" * (4 * 1024 * 1024 + 1)))
    out["body_4MiB"] = observe(s, await send(s, topic, b"x" * (4 * 1024 * 1024)), variable=["queueOffset"])
    out["props_32768"] = observe(s, await send(s, topic, p={"WAIT": "true", "big": "v" * 32760}))
    out["props_garbage"] = observe(s, await send(s, topic, p={}, properties="no separators at all"))
    out["queue_id_nan_v2"] = observe(s, await send(s, topic, queue_id=0, queueId="abc"))
    out["queue_id_nan_v1"] = observe(s, await send(s, topic, code=RC.SEND_MESSAGE, queueId="abc"))
    out["born_nan_v2"] = observe(s, await send(s, topic, bornTimestamp="soon"))
    out["missing_topic_v2"] = observe(s, await send(s, topic, topic="<drop>"))
    out["missing_topic_v1"] = observe(s, await send(s, topic, code=RC.SEND_MESSAGE, topic="<drop>"))
    out["missing_queue_v1"] = observe(s, await send(s, topic, code=RC.SEND_MESSAGE, queueId="<drop>"))
    out["missing_props_v2"] = observe(s, await send(s, topic, properties="<drop>"))
    return out


async def sc_records(s: Side) -> dict[str, Any]:
    """The decoded records of a pull: every 4.x field, flags, sysFlag, properties the broker adds."""
    topic = s.unique("DiffRec")
    await create_topic(s, topic, queues=1)
    uk = "0A000001000018B4AAC2000000000002"
    await send(s, topic, b"plain", p={"UNIQ_KEY": uk, "WAIT": "true", "TAGS": "TagA", "KEYS": "k1 k2", "u": "v"})
    await send(s, topic, b"flagged", flag=12345, p={"UNIQ_KEY": uk, "WAIT": "false"})
    await send(s, topic, zlib.compress(b"compressed body" * 20), sysFlag=1 | 0x300)
    await send(s, topic, b"multi", sysFlag=2, p={"TAGS": "a b"})
    await send(s, topic, b"v1", code=RC.SEND_MESSAGE, reconsumeTimes=3, p={"TAGS": "x"})
    await send(s, topic, b"trailing", properties="A\x01B")
    return {"pull": observe(s, await pull(s, topic, 0, 0), body="records")}


def heartbeat_body(client_id: str, group: str, subs: list[dict[str, Any]], *, model: str = "CLUSTERING") -> bytes:
    """A Java 4.9 push consumer's HeartbeatData (enum names, numeric subVersion, code sets)."""
    return orjson.dumps({
        "clientID": client_id,
        "consumerDataSet": [{
            "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "consumeType": "CONSUME_PASSIVELY",
            "groupName": group, "messageModel": model, "unitMode": False,
            "subscriptionDataSet": [{
                "classFilterMode": False, "codeSet": [], "expressionType": "TAG", "subString": "*", "tagsSet": [],
                **sub,
            } for sub in subs],
        }],
        "producerDataSet": [{"groupName": "CLIENT_INNER_PRODUCER"}],
    })  # fmt: skip


def pull_view(s: Side, resp: Any) -> dict[str, Any]:
    """A pull answer: code, remark (the store status name), the four header fields, the bodies' text."""
    out = observe(s, resp, body="none")
    if not isinstance(resp, str) and resp.remark and re.fullmatch(r"[A-Z_]+", resp.remark):
        out["remark"] = resp.remark  # the store's status name
    if not isinstance(resp, str) and resp.body:
        out["bodies"] = [r["body"] for r in observe(s, resp, body="records")["body"]]
    return out


async def sc_pull_statuses(s: Side) -> dict[str, Any]:
    """PULL_MESSAGE status codes 0/19/20/21 and their header fields, offsets at/below/beyond the queue."""
    topic = s.unique("DiffPull")
    await create_topic(s, topic, queues=2)
    for i, tag in enumerate(("A", "B", "A", "C")):
        await send(s, topic, f"m{i}".encode(), p={"TAGS": tag, "WAIT": "true"})
    out: dict[str, Any] = {}
    for name, offset in (("at_0", 0), ("at_2", 2), ("at_max", 4), ("beyond_max", 10), ("below_min", -1)):
        out[name] = pull_view(s, await pull(s, topic, 0, offset))
    out["max_1"] = pull_view(s, await pull(s, topic, 0, 0, maxMsgNums=1))
    out["max_0"] = pull_view(s, await pull(s, topic, 0, 0, maxMsgNums=0))
    out["tag_A"] = pull_view(s, await pull(s, topic, 0, 0, subscription="A"))
    out["tag_C_from_1"] = pull_view(s, await pull(s, topic, 0, 1, subscription="C"))
    out["tag_none_match"] = pull_view(s, await pull(s, topic, 0, 0, subscription="Z"))
    out["tag_none_match_1"] = pull_view(s, await pull(s, topic, 0, 1, subscription="Z", maxMsgNums=1))
    out["tag_or"] = pull_view(s, await pull(s, topic, 0, 0, subscription="B || C"))
    out["empty_queue_0"] = pull_view(s, await pull(s, topic, 1, 0))
    out["empty_queue_5"] = pull_view(s, await pull(s, topic, 1, 5))
    out["queue_2_of_2"] = pull_view(s, await pull(s, topic, 2, 0))
    out["queue_minus_1"] = pull_view(s, await pull(s, topic, -1, 0))
    out["unknown_topic"] = pull_view(s, await pull(s, s.unique("DiffNoTopic"), 0, 0))
    out["new_group_auto_created"] = pull_view(s, await pull(s, topic, 0, 0, consumerGroup=s.unique("cg_new")))
    return out


async def sc_pull_subscriptions(s: Side) -> dict[str, Any]:
    """Pulls without the subscription flag rely on the heartbeat (24/25), SQL92 and parse errors (23)."""
    topic = s.unique("DiffSub")
    await create_topic(s, topic, queues=1)
    await send(s, topic, b"s0", p={"TAGS": "A", "WAIT": "true", "a": "1"})
    group = s.unique("cg_sub")
    out: dict[str, Any] = {}
    no_flag = {"sysFlag": 0, "subscription": "<drop>", "consumerGroup": group}
    out["no_heartbeat"] = pull_view(s, await pull(s, topic, 0, 0, **no_flag))
    body = heartbeat_body("127.0.0.1@diff-client", group, [{"topic": topic, "subVersion": 1000}])
    out["heartbeat"] = observe(s, await s.b(RC.HEART_BEAT, None, body))
    out["after_heartbeat"] = pull_view(s, await pull(s, topic, 0, 0, **no_flag, subVersion=1000))
    out["older_sub_version"] = pull_view(s, await pull(s, topic, 0, 0, **no_flag, subVersion=999))
    out["newer_sub_version"] = pull_view(s, await pull(s, topic, 0, 0, **no_flag, subVersion=1001))
    other = s.unique("DiffSubOther")
    await create_topic(s, other, queues=1)
    out["topic_not_subscribed"] = pull_view(s, await pull(s, other, 0, 0, **no_flag))
    out["sql92_disabled"] = pull_view(s, await pull(s, topic, 0, 0, subscription="a = 1", expressionType="SQL92"))
    sql_group = s.unique("cg_sql")  # the SQL92 subscription known from a heartbeat, pulled without the flag
    sql_sub = {"topic": topic, "subVersion": 1000, "expressionType": "SQL92", "subString": "a = 1"}
    out["sql92_heartbeat"] = observe(s, await s.b(RC.HEART_BEAT, None,
                                                  heartbeat_body("127.0.0.1@diff-sql", sql_group, [sql_sub])))
    out["sql92_disabled_by_heartbeat"] = pull_view(s, await pull(s, topic, 0, 0, sysFlag=0, subscription="<drop>",
                                                                 consumerGroup=sql_group, subVersion=1000))
    out["sql92_bad"] = pull_view(s, await pull(s, topic, 0, 0, subscription="a = = 1", expressionType="SQL92"))
    out["unknown_expression_type"] = pull_view(s, await pull(s, topic, 0, 0, expressionType="BOGUS"))
    out["no_expression_type"] = pull_view(s, await pull(s, topic, 0, 0, expressionType="<drop>"))
    out["empty_subscription"] = pull_view(s, await pull(s, topic, 0, 0, subscription=""))
    out["no_subscription_with_flag"] = pull_view(s, await pull(s, topic, 0, 0, subscription="<drop>"))
    disabled = s.unique("cg_disabled")
    cfg = {"groupName": disabled, "consumeEnable": False}
    out["create_disabled_group"] = observe(s, await s.b(RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None,
                                                        orjson.dumps(cfg)))  # fmt: skip
    out["disabled_group"] = pull_view(s, await pull(s, topic, 0, 0, consumerGroup=disabled))
    return out


async def sc_offsets(s: Side) -> dict[str, Any]:
    """QUERY_CONSUMER_OFFSET for a new group (young queue), UPDATE then QUERY, min/max/search/earliest."""
    topic = s.unique("DiffOff")
    await create_topic(s, topic, queues=2)
    group = s.unique("cg_off")
    out: dict[str, Any] = {}

    async def q(queue: int, g: str = group, t: str = topic) -> dict[str, Any]:
        return observe(s, await s.b(RC.QUERY_CONSUMER_OFFSET, {"consumerGroup": g, "topic": t, "queueId": queue}))

    out["query_new_group_empty_queue"] = await q(0)
    for i in range(3):
        await send(s, topic, f"o{i}".encode())
    out["query_new_group_young_queue"] = await q(0)
    out["query_unknown_topic"] = await q(0, t=s.unique("DiffOffNone"))
    out["query_queue_9"] = await q(9)
    upd = {"consumerGroup": group, "topic": topic, "queueId": 0, "commitOffset": 2}
    out["update"] = observe(s, await s.b(RC.UPDATE_CONSUMER_OFFSET, upd))
    out["query_after_update"] = await q(0)
    out["update_beyond_max"] = observe(s, await s.b(RC.UPDATE_CONSUMER_OFFSET, {**upd, "commitOffset": 99}))
    out["query_after_update_beyond"] = await q(0)
    out["update_unknown_topic"] = observe(s, await s.b(RC.UPDATE_CONSUMER_OFFSET,
                                                       {**upd, "topic": s.unique("DiffOffNo")}))  # fmt: skip
    out["update_oneway"] = observe(s, await s.b(RC.UPDATE_CONSUMER_OFFSET, {**upd, "commitOffset": 1}, oneway=True))
    await asyncio.sleep(0.3)
    out["query_after_oneway"] = await q(0)
    # the commit flag of a pull stores the offset too
    await pull(s, topic, 0, 0, sysFlag=4 | 1, commitOffset=3, consumerGroup=group)
    out["query_after_pull_commit"] = await q(0)
    for code, name in ((RC.GET_MIN_OFFSET, "min"), (RC.GET_MAX_OFFSET, "max"),
                       (RC.GET_EARLIEST_MSG_STORETIME, "earliest")):  # fmt: skip
        for queue in (0, 1, 7):
            out[f"{name}_q{queue}"] = observe(s, await s.b(code, {"topic": topic, "queueId": queue}))
        out[f"{name}_unknown_topic"] = observe(s, await s.b(code, {"topic": s.unique("DiffNoT"), "queueId": 0}))
    for label, ts in (("search_0", 0), ("search_future", 4_000_000_000_000), ("search_now", "now")):
        stamp = int(time.time() * 1000) if ts == "now" else ts
        out[label] = observe(s, await s.b(RC.SEARCH_OFFSET_BY_TIMESTAMP,
                                          {"topic": topic, "queueId": 0, "timestamp": stamp}))  # fmt: skip
    out["search_empty_queue"] = observe(s, await s.b(RC.SEARCH_OFFSET_BY_TIMESTAMP,
                                                     {"topic": topic, "queueId": 1, "timestamp": 0}))  # fmt: skip
    return out


# Topics every broker of both kinds creates at start (with its cluster and broker name, scrubbed).
STARTUP_TOPICS = ("TBW102", "SCHEDULE_TOPIC_XXXX", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT", "BenchmarkTest",
                  "RMQ_SYS_TRACE_TOPIC", "<CLUSTER>", "<BROKER>", "<CLUSTER>_REPLY_TOPIC")  # fmt: skip
STARTUP_GROUPS = ("TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
                  "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_RMQ_SYS_TRANS")  # fmt: skip


def own_broker_only(obs: dict[str, Any]) -> dict[str, Any]:
    """A route observation with only this side's broker (other suites may register brokers of their own)."""
    body = obs["body"]
    for member in ("brokerDatas", "queueDatas"):
        body[member] = [d for d in body[member] if d["brokerName"] == "<BROKER>"]
    return obs


def only(table: dict[str, Any], keep: Callable[[str], bool]) -> dict[str, Any]:
    """The entries of a shared table that belong to this scenario (the Java broker is shared)."""
    return {k: v for k, v in table.items() if keep(k)}


def mine(prefix: str, fixed: tuple[str, ...] = ()) -> Callable[[str], bool]:
    """Names this run's scenario made (``prefix`` + this run's id), or one of ``fixed``."""
    return lambda k: k in fixed or (k.startswith(prefix) and RUN_ID in k)


async def sc_admin_topics(s: Side) -> dict[str, Any]:
    """UPDATE_AND_CREATE_TOPIC, GET_ALL_TOPIC_CONFIG, GET_TOPIC_STATS_INFO, DELETE_TOPIC, the name server's view."""
    topic = s.unique("DiffAdm")
    out: dict[str, Any] = {"create": await create_topic(s, topic, queues=3, perm=6)}
    out["create_order"] = await create_topic(s, s.unique("DiffAdmOrd"), queues=2, order="true",
                                             topicFilterType="MULTI_TAG")  # fmt: skip
    out["recreate_8"] = await create_topic(s, s.unique("DiffAdmRe"), queues=8, perm=7)
    out["create_illegal"] = await create_topic(s, "bad topic!")
    out["create_too_long"] = await create_topic(s, "T" * 128)
    out["create_system"] = await create_topic(s, "SCHEDULE_TOPIC_XXXX")
    out["create_tbw102"] = await create_topic(s, "TBW102")
    out["create_cluster_name"] = await create_topic(s, s.cluster)
    out["create_read_write_differ"] = observe(
        s, await s.b(RC.UPDATE_AND_CREATE_TOPIC, topic_ext(s.unique("DiffAdmRW"), readQueueNums=2))
    )
    await send(s, topic, b"a", queue_id=1)
    resp = await s.b(RC.GET_ALL_TOPIC_CONFIG)
    obs = observe(s, resp, body="json")
    table = obs["body"].pop("topicConfigTable")
    assert set(obs["body"].pop("dataVersion")) == {"counter", "timestamp"}
    obs["topics"] = only(table, mine("DiffAdm", STARTUP_TOPICS))
    out["all_topic_config"] = obs
    out["stats"] = observe(s, await s.b(RC.GET_TOPIC_STATS_INFO, {"topic": topic}), variable=["lastUpdateTimestamp"])
    out["stats_unknown"] = observe(s, await s.b(RC.GET_TOPIC_STATS_INFO, {"topic": s.unique("DiffNone")}))
    out["route"] = observe(s, await route(s, topic))
    out["delete_broker"] = observe(s, await s.b(RC.DELETE_TOPIC_IN_BROKER, {"topic": topic}))
    out["delete_namesrv"] = observe(s, await s.ns(RC.DELETE_TOPIC_IN_NAMESRV, {"topic": topic}))
    out["route_after_delete"] = observe(s, await s.ns(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), remark=True)
    out["stats_after_delete"] = observe(s, await s.b(RC.GET_TOPIC_STATS_INFO, {"topic": topic}))
    out["delete_unknown"] = observe(s, await s.b(RC.DELETE_TOPIC_IN_BROKER, {"topic": s.unique("DiffNone")}))
    return out


async def route(s: Side, topic: str, **kw: Any) -> Any:
    """GET_ROUTEINFO_BY_TOPIC once the name server has the topic (a broker registers after creating it)."""
    resp: Any = None
    for _ in range(60):
        resp = await s.ns(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, **kw)
        if not isinstance(resp, str) and resp.code == 0:
            return resp
        await asyncio.sleep(0.1)
    return resp


async def sc_admin_groups(s: Side) -> dict[str, Any]:
    """Heartbeat, consumer list, connections, consume stats, subscription groups, lock/unlock, unregister."""
    topic = s.unique("DiffGrp")
    await create_topic(s, topic, queues=2)
    for i in range(3):
        await send(s, topic, f"g{i}".encode(), queue_id=i % 2)
    group = s.unique("cg_grp")
    client = "127.0.0.1@diff-client"
    out: dict[str, Any] = {}
    out["list_before"] = observe(s, await s.b(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}))
    out["connections_before"] = observe(s, await s.b(RC.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}))
    hb = heartbeat_body(client, group, [{"topic": topic, "subString": "A || B", "tagsSet": ["A", "B"],
                                         "codeSet": [65, 66], "subVersion": 7}])  # fmt: skip
    out["heartbeat"] = observe(s, await s.b(RC.HEART_BEAT, None, hb))
    out["list"] = observe(s, await s.b(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}))
    out["connections"] = observe(s, await s.b(RC.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}),
                                 variable=["clientAddr"])  # fmt: skip
    out["producer_connections"] = observe(
        s, await s.b(RC.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "CLIENT_INNER_PRODUCER"}), body="none"
    )
    out["retry_route"] = observe(s, await route(s, f"%RETRY%{group}"))
    await s.b(RC.UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": 0, "commitOffset": 1})
    out["consume_stats"] = observe(s, await s.b(RC.GET_CONSUME_STATS, {"consumerGroup": group, "topic": topic}),
                                   variable=["lastTimestamp"])  # fmt: skip
    out["consume_stats_all_topics"] = observe(s, await s.b(RC.GET_CONSUME_STATS, {"consumerGroup": group}),
                                              variable=["lastTimestamp"])  # fmt: skip
    out["consume_stats_unknown"] = observe(s, await s.b(RC.GET_CONSUME_STATS, {"consumerGroup": s.unique("cg_no")}))
    out["consumed_by_who"] = observe(s, await s.b(RC.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic}))
    resp = await s.b(RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    obs = observe(s, resp, body="json")
    assert set(obs["body"].pop("dataVersion")) == {"counter", "timestamp"}
    obs["body"]["subscriptionGroupTable"] = only(obs["body"]["subscriptionGroupTable"],
                                                 mine("cg_grp", STARTUP_GROUPS))  # fmt: skip
    out["all_groups"] = obs
    mq = [{"brokerName": s.broker_name, "queueId": q, "topic": topic} for q in (0, 1)]
    lock = {"clientId": client, "consumerGroup": group, "mqSet": mq}
    out["lock"] = observe(s, await s.b(RC.LOCK_BATCH_MQ, None, orjson.dumps(lock)))
    other = {**lock, "clientId": "127.0.0.1@other"}
    out["lock_by_other"] = observe(s, await s.b(RC.LOCK_BATCH_MQ, None, orjson.dumps(other)))
    out["unlock_by_other"] = observe(s, await s.b(RC.UNLOCK_BATCH_MQ, None, orjson.dumps(other)))
    out["unlock"] = observe(s, await s.b(RC.UNLOCK_BATCH_MQ, None, orjson.dumps(lock)))
    out["lock_by_other_after"] = observe(s, await s.b(RC.LOCK_BATCH_MQ, None, orjson.dumps(other)))
    unreg = {"clientID": client, "consumerGroup": group, "producerGroup": "CLIENT_INNER_PRODUCER"}
    out["unregister"] = observe(s, await s.b(RC.UNREGISTER_CLIENT, unreg))
    out["list_after"] = observe(s, await s.b(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}))
    out["delete_group"] = observe(s, await s.b(RC.DELETE_SUBSCRIPTIONGROUP, {"groupName": group}))
    return out


async def sc_runtime_info(s: Side) -> dict[str, Any]:
    """GET_BROKER_RUNTIME_INFO: the keys of its KVTable (values are live numbers)."""
    resp = await s.b(RC.GET_BROKER_RUNTIME_INFO)
    obs = observe(s, resp, body="json")
    obs["keys"] = sorted(obs["body"].pop("table"))
    return {"runtime": obs}


async def sc_namesrv(s: Side) -> dict[str, Any]:
    """Name server answers: routes (new and old clients), cluster info, topic lists, unknown topics, KV config."""
    topic = s.unique("DiffNs")
    await create_topic(s, topic, queues=3)
    out: dict[str, Any] = {}
    out["route"] = observe(s, await route(s, topic))
    out["route_unknown"] = observe(s, await s.ns(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": s.unique("DiffNsNo")}),
                                   remark=True)  # fmt: skip
    out["route_tbw102"] = own_broker_only(observe(s, await s.ns(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})))
    out["route_missing_topic"] = observe(s, await s.ns(RC.GET_ROUTEINFO_BY_TOPIC, {}))
    resp = await s.ns(RC.GET_BROKER_CLUSTER_INFO)
    obs = observe(s, resp, body="json")
    obs["body"] = {name: only(table, lambda k: k in ("<BROKER>", "<CLUSTER>")) for name, table in obs["body"].items()}
    out["cluster_info"] = obs
    out["cluster_info_raw"] = bytes(resp.body).decode()
    # a client older than 4.9.4 (C++: version 63) gets fastjson's default text from a Java name server
    old_client = await s.ns(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=63)
    out["route_old_client_raw"] = bytes(old_client.body).decode()
    resp = await s.ns(RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    obs = observe(s, resp, body="json")
    obs["body"]["topicList"] = sorted(t for t in obs["body"]["topicList"] if mine("DiffNs", STARTUP_TOPICS)(t))
    out["topic_list"] = obs
    resp = await s.ns(RC.GET_TOPICS_BY_CLUSTER, {"cluster": s.cluster})
    obs = observe(s, resp, body="json")
    obs["body"]["topicList"] = sorted(t for t in obs["body"]["topicList"] if mine("DiffNs", STARTUP_TOPICS)(t))
    out["topics_by_cluster"] = obs
    out["topics_by_unknown_cluster"] = observe(s, await s.ns(RC.GET_TOPICS_BY_CLUSTER, {"cluster": "NoSuchCl"}))
    resp = await s.ns(RC.GET_SYSTEM_TOPIC_LIST_FROM_NS)
    obs = observe(s, resp, body="json")
    obs["body"]["topicList"] = [t for t in obs["body"]["topicList"] if t in ("<BROKER>", "<CLUSTER>")]
    out["system_topics"] = obs
    ns_key = {"namespace": s.unique("DiffNsKv"), "key": "k"}
    out["kv_get_missing"] = observe(s, await s.ns(RC.GET_KV_CONFIG, ns_key))
    out["kv_put"] = observe(s, await s.ns(RC.PUT_KV_CONFIG, {**ns_key, "value": "v1"}))
    out["kv_get"] = observe(s, await s.ns(RC.GET_KV_CONFIG, ns_key))
    out["kv_list"] = observe(s, await s.ns(RC.GET_KVLIST_BY_NAMESPACE, {"namespace": ns_key["namespace"]}))
    out["kv_delete"] = observe(s, await s.ns(RC.DELETE_KV_CONFIG, ns_key))
    out["kv_get_deleted"] = observe(s, await s.ns(RC.GET_KV_CONFIG, ns_key))
    out["kv_list_missing"] = observe(s, await s.ns(RC.GET_KVLIST_BY_NAMESPACE, {"namespace": "NoSuchNs"}))
    return out


async def sc_bad_requests(s: Side) -> dict[str, Any]:
    """Unknown codes, missing mandatory header fields, bad numbers, bad bodies (JSON frames, a fresh answer each)."""
    topic = s.unique("DiffErr")
    await create_topic(s, topic, queues=1)
    await send(s, topic, b"e0")
    out: dict[str, Any] = {}
    out["broker_unknown_code"] = observe(s, await s.b(9999), remark=True)
    out["broker_code_13_no_handler"] = observe(s, await s.b(RC.QUERY_BROKER_OFFSET), remark=True)
    q = {"consumerGroup": "diff_cg", "topic": topic, "queueId": 0}
    cases: dict[str, tuple[int, dict[str, Any]]] = {
        "query_offset_no_queue": (RC.QUERY_CONSUMER_OFFSET, {**q, "queueId": "<drop>"}),
        "query_offset_no_group": (RC.QUERY_CONSUMER_OFFSET, {**q, "consumerGroup": "<drop>"}),
        "query_offset_queue_nan": (RC.QUERY_CONSUMER_OFFSET, {**q, "queueId": "x"}),
        "query_offset_queue_float": (RC.QUERY_CONSUMER_OFFSET, {**q, "queueId": "0.5"}),
        "update_offset_no_commit": (RC.UPDATE_CONSUMER_OFFSET, q),
        "update_offset_commit_nan": (RC.UPDATE_CONSUMER_OFFSET, {**q, "commitOffset": "x"}),
        "max_offset_no_topic": (RC.GET_MAX_OFFSET, {"queueId": 0}),
        "max_offset_no_queue": (RC.GET_MAX_OFFSET, {"topic": topic}),
        "max_offset_queue_nan": (RC.GET_MAX_OFFSET, {"topic": topic, "queueId": "x"}),
        "min_offset_no_queue": (RC.GET_MIN_OFFSET, {"topic": topic}),
        "search_no_timestamp": (RC.SEARCH_OFFSET_BY_TIMESTAMP, {"topic": topic, "queueId": 0}),
        "earliest_no_queue": (RC.GET_EARLIEST_MSG_STORETIME, {"topic": topic}),
        "stats_no_topic": (RC.GET_TOPIC_STATS_INFO, {}),
        "consumer_list_no_group": (RC.GET_CONSUMER_LIST_BY_GROUP, {}),
        "create_topic_no_queues": (RC.UPDATE_AND_CREATE_TOPIC, {**topic_ext(s.unique("DiffErrC")),
                                                                "readQueueNums": "<drop>"}),
        "create_topic_no_perm": (RC.UPDATE_AND_CREATE_TOPIC, {**topic_ext(s.unique("DiffErrC")), "perm": "<drop>"}),
        "create_topic_perm_nan": (RC.UPDATE_AND_CREATE_TOPIC, {**topic_ext(s.unique("DiffErrC")), "perm": "x"}),
        "create_topic_no_filter_type": (RC.UPDATE_AND_CREATE_TOPIC, {**topic_ext(s.unique("DiffErrC")),
                                                                     "topicFilterType": "<drop>"}),
        "delete_topic_no_topic": (RC.DELETE_TOPIC_IN_BROKER, {}),
        "send_back_unknown_offset": (RC.CONSUMER_SEND_MSG_BACK, {"offset": 1 << 40, "group": "diff_cg",
                                                                 "delayLevel": 0}),
        "send_back_no_group": (RC.CONSUMER_SEND_MSG_BACK, {"offset": 0, "delayLevel": 0}),
        "unregister_no_client": (RC.UNREGISTER_CLIENT, {"consumerGroup": "diff_cg"}),
        "view_by_id_unknown": (RC.VIEW_MESSAGE_BY_ID, {"offset": 1 << 40}),
        "view_by_id_no_offset": (RC.VIEW_MESSAGE_BY_ID, {}),
    }  # fmt: skip
    for name, (code, ext) in cases.items():
        fields = {k: v for k, v in ext.items() if v != "<drop>"}
        out[name] = observe(s, await s.b(code, fields))
    pulls = {
        "pull_no_offset": {"queueOffset": "<drop>"},
        "pull_no_group": {"consumerGroup": "<drop>"},
        "pull_no_queue": {"queueId": "<drop>"},
        "pull_no_max_nums": {"maxMsgNums": "<drop>"},
        "pull_no_sys_flag": {"sysFlag": "<drop>"},
        "pull_no_sub_version": {"subVersion": "<drop>"},
        "pull_no_commit_offset": {"commitOffset": "<drop>"},
        "pull_no_suspend": {"suspendTimeoutMillis": "<drop>"},
        "pull_offset_nan": {"queueOffset": "x"},
        "pull_max_nums_nan": {"maxMsgNums": "x"},
    }
    for name, over in pulls.items():
        out[name] = pull_view(s, await pull(s, topic, 0, 0, **over))
    bodies = {
        "heartbeat_empty_body": (RC.HEART_BEAT, b""),
        "heartbeat_not_json": (RC.HEART_BEAT, b"{not json"),
        "heartbeat_no_client_id": (RC.HEART_BEAT, b'{"consumerDataSet":[],"producerDataSet":[]}'),
        "lock_empty_body": (RC.LOCK_BATCH_MQ, b""),
        "lock_not_json": (RC.LOCK_BATCH_MQ, b"[1,2"),
        "unlock_empty_body": (RC.UNLOCK_BATCH_MQ, b""),
        "create_group_empty_body": (RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, b""),
    }
    for name, (code, body) in bodies.items():
        out[name] = observe(s, await s.b(code, None, body))
    return out


async def sc_send_missing_fields(s: Side) -> dict[str, Any]:
    """Every send header field left out in turn, V1 and V2 (Java's @CFNotNull fields are only logged)."""
    topic = s.unique("DiffMiss")
    await create_topic(s, topic, queues=1)
    out: dict[str, Any] = {}
    for name in V2_KEYS:
        if name in ("maxReconsumeTimes", "batch"):
            continue
        for code in (RC.SEND_MESSAGE, RC.SEND_MESSAGE_V2):
            label = f"{'v1' if code == RC.SEND_MESSAGE else 'v2'}_no_{name}"
            resp = await send(s, topic, code=code, **{name: "<drop>"})
            out[label] = observe(s, resp, variable=["queueOffset"])
    auto = s.unique("DiffMissAuto")
    out["auto_no_default_topic"] = observe(s, await send(s, auto, defaultTopic="<drop>"))
    out["auto_no_queue_nums"] = observe(s, await send(s, s.unique("DiffMissAuto"), defaultTopicQueueNums="<drop>"))
    return out


def header_json(request_code: int, ext: dict[str, Any] | None = None, **members: Any) -> bytes:
    """A literal JSON header; ``members`` replace the Java client's (``"<drop>"`` leaves one out)."""
    obj: dict[str, Any] = {"code": request_code, "flag": 0, "language": "JAVA", "opaque": 7,
                           "serializeTypeCurrentRPC": "JSON", "version": 409}  # fmt: skip
    if ext is not None:
        obj["extFields"] = ext
    obj.update(members)
    return orjson.dumps({k: v for k, v in obj.items() if v != "<drop>"})


def frame_view(s: Side, result: dict[str, Any]) -> dict[str, Any]:
    answer = result["answer"]
    out = {"closed": result["closed"], "pushed": result.get("pushed", [])}
    if isinstance(answer, str):
        out["answer"] = answer
    else:
        out["answer"] = observe(s, answer, body="size")
        out["answer"]["opaque"] = answer.opaque
    return out


async def frames(s: Side, addr: str, code: int, q: dict[str, Any]) -> dict[str, Any]:
    """Hand-made frames on fresh connections: what is answered and whether the server closes the connection.

    ``code``/``q``: a request the server answers SUCCESS; ``q`` has a field that C++ would send as a number.
    """
    cases: dict[str, bytes] = {
        "plain_json": json_frame(header_json(code, q)),
        "numbers_in_ext": json_frame(header_json(code, {k: int(v) if v.isdigit() else v for k, v in q.items()})),
        "bool_in_ext": json_frame(header_json(code, {**q, "extra": True})),
        "null_in_ext": json_frame(header_json(code, {**q, "extra": None})),
        "no_ext": json_frame(header_json(code)),
        "malformed_json": json_frame(b'{"code":30,"extFields":{'),
        "json_array": json_frame(b"[1,2,3]"),
        "no_code": json_frame(header_json(code, q, code="<drop>")),
        "code_as_string": json_frame(header_json(code, q, code=str(code))),
        "unknown_language": json_frame(header_json(code, q, language="KLINGON")),
        "language_cpp": json_frame(header_json(code, q, language="CPP")),
        "no_language": json_frame(header_json(code, q, language="<drop>")),
        "version_minus_1": json_frame(header_json(code, q, version=-1)),
        "version_huge": json_frame(header_json(code, q, version=99999)),
        "no_version": json_frame(header_json(code, q, version="<drop>")),
        "no_opaque": json_frame(header_json(code, q, opaque="<drop>")),
        "negative_opaque": json_frame(header_json(code, q, opaque=-5)),
        "flag_oneway": json_frame(header_json(code, q, flag=2)),
        "flag_response": json_frame(header_json(code, q, flag=1)),
        "flag_both": json_frame(header_json(code, q, flag=3)),
        "flag_high_bits": json_frame(header_json(code, q, flag=0x100)),
        "remark_in_request": json_frame(header_json(code, q, remark="hello")),
        "unknown_member": json_frame(header_json(code, q, color="red")),
        "header_longer_than_frame": (20).to_bytes(4, "big") + (100).to_bytes(4, "big") + b"{" * 16,
        "serialize_type_2": (12).to_bytes(4, "big") + ((2 << 24) | 8).to_bytes(4, "big") + b"{}      ",
        "frame_too_big": (17 * 1024 * 1024).to_bytes(4, "big") + (10).to_bytes(4, "big") + b"{}",
        "trailing_newline": json_frame(header_json(code, q) + b"\n"),
    }
    out: dict[str, Any] = {}
    results = await asyncio.gather(*(raw_exchange(addr, frame) for frame in cases.values()))
    for name, result in zip(cases, results, strict=True):
        out[name] = frame_view(s, result)
    # a request without opaque: nothing can match its answer; Java answers with its own counter, rocketq with 0
    no_opaque = out["no_opaque"]["answer"]
    if isinstance(no_opaque, dict):
        no_opaque.pop("opaque")
    return out


async def sc_frames_broker(s: Side) -> dict[str, Any]:
    topic = s.unique("DiffFrame")
    await create_topic(s, topic, queues=1)
    await send(s, topic, b"f0")
    out = await frames(s, s.broker, RC.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})
    # ROCKETMQ (binary) serialisation: the answer mirrors it
    resp = await s.b(RC.GET_MAX_OFFSET, {"topic": topic, "queueId": 0}, serialize_type=1)
    out["rocketmq_serialize"] = observe(s, resp)
    resp = await s.b(RC.SEND_MESSAGE_V2, v2(send_ext(topic)), b"bin", serialize_type=1)
    out["rocketmq_serialize_send"] = observe(s, resp)
    await dispatched(s, topic, resp)
    resp = await s.b(RC.PULL_MESSAGE, {"consumerGroup": "diff_cg", "topic": topic, "queueId": 0, "queueOffset": 0,
                                       "maxMsgNums": 32, "sysFlag": 4, "commitOffset": 0, "suspendTimeoutMillis": 0,
                                       "subscription": "*", "subVersion": 0}, serialize_type=1)  # fmt: skip
    out["rocketmq_serialize_pull"] = pull_view(s, resp)
    resp = await s.b(RC.GET_MAX_OFFSET, {"topic": topic, "queueId": 0}, serialize_type=1, language="CPP")
    out["rocketmq_serialize_cpp"] = observe(s, resp)
    return out


async def sc_frames_namesrv(s: Side) -> dict[str, Any]:
    out = await frames(s, s.namesrv, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102", "acceptStandardJsonOnly": "1"})
    out["unknown_code"] = observe(s, await s.ns(9999, timeout=2.0))
    out["broker_code_at_namesrv"] = observe(s, await s.ns(RC.GET_MAX_OFFSET, {"topic": "x", "queueId": 0},
                                                          timeout=2.0))  # fmt: skip
    resp = await s.ns(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}, serialize_type=1)
    out["rocketmq_serialize_route"] = observe(s, resp)
    return out


async def settle(s: Side, topic: str, queue: int) -> None:
    """Let Java's dispatch catch up after sends made outside ``send`` (its max offset stops moving)."""
    last = -1
    for _ in range(50):
        got = await s.b(RC.GET_MAX_OFFSET, {"topic": topic, "queueId": queue})
        offset = int(got.ext_fields.get("offset", -1)) if not isinstance(got, str) else -1
        if offset == last and offset > 0:
            return
        last = offset
        await asyncio.sleep(0.05)


async def raw_request(s: Side, header: dict[str, Any], body: bytes = b"") -> dict[str, Any]:
    """One literal JSON request (C++ style: numbers in extFields, trailing newline) on a fresh connection."""
    result = await raw_exchange(s.broker, json_frame(orjson.dumps(header) + b"\n", body))
    return frame_view(s, result)


def cpp_send_header(topic: str, *, batch: str = "0", tags: str = "T") -> dict[str, Any]:
    """A send as the C++ 1.2.3 client writes it: code 10, V1 names, numbers for some fields, "0"/"1" booleans."""
    return {
        "code": 10, "flag": 0, "language": "CPP", "opaque": 11, "remark": "", "version": 63,
        "extFields": {
            "AccessKey": "", "OnsChannel": "ALIYUN", "Signature": "c2lnbmF0dXJl", "batch": batch,
            "bornTimestamp": BORN, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4, "flag": 0,
            "producerGroup": "diff_cpp_pg", "properties": props({"TAGS": tags, "WAIT": "true"}), "queueId": 0,
            "reconsumeTimes": "0", "sysFlag": 0, "topic": topic, "unitMode": "0",
        },
    }  # fmt: skip


async def sc_cpp_dialect(s: Side) -> dict[str, Any]:
    """What the C++ 1.2.3 client sends (§10 items 2, 3, 6): numeric extFields, code 10 for everything, ordinals."""
    topic = s.unique("DiffCpp")
    await create_topic(s, topic, queues=1)
    out: dict[str, Any] = {}
    out["send"] = await raw_request(s, cpp_send_header(topic, tags="10"), b"cpp-body")
    out["send_tag_b"] = await raw_request(s, cpp_send_header(topic, tags="B"), b"cpp-b")
    await settle(s, topic, 0)
    group = s.unique("cg_cpp")
    hb = {"clientID": "4242-127.0.0.1@DEFAULT", "consumerDataSet": [{
        "consumeFromWhere": 0, "consumeType": 1, "groupName": group, "messageModel": 1,
        "subscriptionDataSet": [{"subString": "10", "subVersion": "1700000000123", "topic": topic,
                                 "tagsSet": ["10"], "codeSet": [10]}],
    }]}  # fmt: skip
    cpp_ext = {"AccessKey": "", "OnsChannel": "ALIYUN", "Signature": "x"}
    # on the pooled connection: a consumer's registration lives as long as its heartbeat's channel
    out["heartbeat"] = observe(s, await s.b(RC.HEART_BEAT, cpp_ext, orjson.dumps(hb) + b"\n", language="CPP",
                                            version=63))  # fmt: skip
    out["connections"] = observe(s, await s.b(RC.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}),
                                 variable=["clientAddr"])  # fmt: skip
    # a Java-style pull relying on the heartbeat's subscription
    out["pull_by_heartbeat"] = pull_view(s, await pull(s, topic, 0, 0, consumerGroup=group, sysFlag=0,
                                                       subscription="<drop>", subVersion=0))  # fmt: skip
    return out


async def sc_cpp_batch_flag(s: Side) -> dict[str, Any]:
    """C++ 1.2.3 batches: code 10 with batch "1" (Java's Boolean.parseBoolean reads it as false)."""
    topic = s.unique("DiffCppB")
    await create_topic(s, topic, queues=1)
    items = [BatchItem(0, f"cb{i}".encode(), {"UNIQ_KEY": f"{i + 16:032X}"}) for i in range(2)]
    out = {"send": await raw_request(s, cpp_send_header(topic, batch="1"), encode_batch(items))}
    await settle(s, topic, 0)
    out["pull"] = pull_view(s, await pull(s, topic, 0, 0))
    return out


async def sc_long_poll(s: Side) -> dict[str, Any]:
    """A pull parked at the end of the queue (SUSPEND flag) is answered when a message arrives."""
    topic = s.unique("DiffPoll")
    await create_topic(s, topic, queues=1)
    await send(s, topic, b"p0")
    parked = asyncio.ensure_future(pull(s, topic, 0, 1, sysFlag=4 | 2, suspendTimeoutMillis=15000))
    await asyncio.sleep(0.5)
    out: dict[str, Any] = {"parked": parked.done()}
    await send(s, topic, b"p1")
    out["woken"] = pull_view(s, await asyncio.wait_for(parked, 15))
    return out


def commit_log_offset(resp: Any) -> int:
    """The commit-log offset in a send answer's offset message id (what clients decode for transactions)."""
    return int(resp.ext_fields["msgId"][16:], 16)


async def records_when_there(s: Side, topic: str, queue: int, count: int, limit: float = 15.0) -> dict[str, Any]:
    """Pull ``topic``/``queue`` from 0 once ``count`` messages have arrived there (delays, requeues)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while loop.time() < deadline:
        got = await s.b(RC.GET_MAX_OFFSET, {"topic": topic, "queueId": queue})
        if not isinstance(got, str) and got.code == 0 and int(got.ext_fields["offset"]) >= count:
            break
        await asyncio.sleep(0.1)
    return observe(s, await pull(s, topic, queue, 0), body="records")


async def sc_transactions(s: Side) -> dict[str, Any]:
    """Half messages and END_TRANSACTION: commit, rollback, a wrong producer group, an unknown offset."""
    topic = s.unique("DiffTx")
    await create_topic(s, topic, queues=1)
    out: dict[str, Any] = {}
    half_props = {"UNIQ_KEY": "0A000001000018B4AAC20000000000A1", "WAIT": "true", "TRAN_MSG": "true",
                  "PGROUP": "diff_tx_pg", "TAGS": "tx"}  # fmt: skip
    halves = []
    for name in ("commit", "rollback", "wrong_group", "unknown"):
        resp = await s.b(RC.SEND_MESSAGE_V2, v2(send_ext(topic, p=half_props, sysFlag=4, producerGroup="diff_tx_pg")),
                         f"half-{name}".encode())  # fmt: skip
        out[f"half_{name}"] = observe(s, resp, variable=["queueOffset"])  # the half topic is shared
        halves.append(resp)

    def end(resp: Any, how: int, **over: Any) -> dict[str, Any]:
        ext = {"producerGroup": "diff_tx_pg", "tranStateTableOffset": resp.ext_fields["queueOffset"],
               "commitLogOffset": commit_log_offset(resp), "commitOrRollback": how, "fromTransactionCheck": "false",
               "msgId": half_props["UNIQ_KEY"]}  # fmt: skip
        ext.update(over)
        return ext

    out["end_commit"] = observe(s, await s.b(RC.END_TRANSACTION, end(halves[0], 8)))
    out["end_rollback"] = observe(s, await s.b(RC.END_TRANSACTION, end(halves[1], 12)))
    out["end_wrong_group"] = observe(s, await s.b(RC.END_TRANSACTION, end(halves[2], 8, producerGroup="other_pg")))
    out["end_unknown_offset"] = observe(s, await s.b(RC.END_TRANSACTION, end(halves[3], 8,
                                                                              commitLogOffset=1 << 40)))  # fmt: skip
    out["end_not_type"] = observe(s, await s.b(RC.END_TRANSACTION, end(halves[3], 0), timeout=2.0))
    out["real_topic"] = await records_when_there(s, topic, 0, 1)
    committed = records(await pull(s, topic, 0, 0))
    out["prepared_offset_is_the_halfs"] = [r.prepared_transaction_offset for r in committed] == [
        commit_log_offset(halves[0])
    ]
    return out


async def sc_delay_and_send_back(s: Side) -> dict[str, Any]:
    """A delay-level message through SCHEDULE_TOPIC_XXXX, and CONSUMER_SEND_MSG_BACK to the dead-letter queue."""
    topic = s.unique("DiffDelay")
    await create_topic(s, topic, queues=1)
    out: dict[str, Any] = {}
    delayed = {"UNIQ_KEY": "0A000001000018B4AAC20000000000D1", "WAIT": "true", "DELAY": "1"}
    resp = await send(s, topic, b"later", p=delayed, wait=False)
    out["delayed_send"] = observe(s, resp, variable=["queueOffset"])  # SCHEDULE_TOPIC_XXXX's, shared
    original = await send(s, topic, b"failed", p={"UNIQ_KEY": "0A000001000018B4AAC20000000000D2", "TAGS": "f"})
    group = s.unique("cg_back")
    back = {"offset": commit_log_offset(original), "group": group, "delayLevel": -1, "originTopic": topic,
            "originMsgId": "0A000001000018B4AAC20000000000D2", "maxReconsumeTimes": 16}  # fmt: skip
    out["send_back_to_dlq"] = observe(s, await s.b(RC.CONSUMER_SEND_MSG_BACK, back))
    out["send_back_unknown_group_offset"] = observe(s, await s.b(RC.CONSUMER_SEND_MSG_BACK,
                                                                 {**back, "offset": 1 << 40}))  # fmt: skip
    out["dlq"] = await records_when_there(s, f"%DLQ%{group}", 0, 1)
    out["dlq_route"] = own_broker_only(observe(s, await route(s, f"%DLQ%{group}")))
    # an ORIGIN_MESSAGE_ID that is blank is replaced by the looked-up message's offset id (UtilAll.isBlank)
    blank = await send(s, topic, b"blank", p={"UNIQ_KEY": "0A000001000018B4AAC20000000000D3", "ORIGIN_MESSAGE_ID": " "})
    blank_group = s.unique("cg_blank")
    out["send_back_blank_origin"] = observe(s, await s.b(RC.CONSUMER_SEND_MSG_BACK,
                                                         {**back, "group": blank_group,
                                                          "offset": commit_log_offset(blank)}))  # fmt: skip
    out["dlq_blank_origin"] = await records_when_there(s, f"%DLQ%{blank_group}", 0, 1)
    out["delivered"] = await records_when_there(s, topic, 0, 3)
    return out


async def sc_query_and_view(s: Side) -> dict[str, Any]:
    """QUERY_MESSAGE by key and by unique key, VIEW_MESSAGE_BY_ID: answers, header fields, records."""
    topic = s.unique("DiffQuery")
    await create_topic(s, topic, queues=1)
    uk = "0A000001000018B4AAC20000000000E1"
    sent = await send(s, topic, b"find me", p={"UNIQ_KEY": uk, "KEYS": "alpha beta", "WAIT": "true"})
    q = {"topic": topic, "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 4_000_000_000_000}
    out: dict[str, Any] = {}
    # the index is written after the consume queue: wait for it as a client would retry
    for _ in range(50):
        found = await s.b(RC.QUERY_MESSAGE, {**q, "key": "beta"})
        if not isinstance(found, str) and found.code == 0:
            break
        await asyncio.sleep(0.1)
    out["by_key"] = observe(s, found, body="records")
    out["by_unique_key"] = observe(s, await s.b(RC.QUERY_MESSAGE, {**q, "key": uk, "_UNIQUE_KEY_QUERY": "true"}),
                                   body="records")  # fmt: skip
    out["by_missing_key"] = observe(s, await s.b(RC.QUERY_MESSAGE, {**q, "key": "gamma"}))
    out["view_by_id"] = observe(s, await s.b(RC.VIEW_MESSAGE_BY_ID, {"offset": commit_log_offset(sent)}),
                                body="records")  # fmt: skip
    return out


async def sc_values_out_of_range(s: Side) -> dict[str, Any]:
    """Header integers wider than their Java type and values Java stores but rocketq refuses (offsets, queue
    counts): the codes on both sides, and what each then holds."""
    topic = s.unique("DiffRange")
    out: dict[str, Any] = {"create": await create_topic(s, topic, queues=2)}
    await send(s, topic, b"r")
    group = s.unique("cg_range")
    upd = {"consumerGroup": group, "topic": topic, "queueId": 0, "commitOffset": 1}

    async def query(queue: int = 0) -> dict[str, Any]:
        ext = {"consumerGroup": group, "topic": topic, "queueId": queue}
        return observe(s, await s.b(RC.QUERY_CONSUMER_OFFSET, ext))

    out["update"] = observe(s, await s.b(RC.UPDATE_CONSUMER_OFFSET, upd))
    # a Long field beyond 64 bits: Java's decode leaves it null and the commit fails on it, as rocketq refuses it
    out["update_offset_2^70"] = observe(s, await s.b(RC.UPDATE_CONSUMER_OFFSET, {**upd, "commitOffset": 2**70}))
    out["update_negative_offset"] = observe(s, await s.b(RC.UPDATE_CONSUMER_OFFSET, {**upd, "commitOffset": -1}))
    out["query_after_negative"] = await query()
    # an Integer field beyond 32 bits on a send (Java's FastCodesHeader parse throws)
    born = {**v2(send_ext(topic)), "g": 2**70}
    out["send_born_2^70"] = observe(s, await s.b(RC.SEND_MESSAGE_V2, born, b"late"))
    queue_2_31 = {**v2(send_ext(topic)), "e": 2**31}
    out["send_queue_2^31"] = observe(s, await s.b(RC.SEND_MESSAGE_V2, queue_2_31, b"late"))
    # topicSysFlag beyond 32 bits: Java logs it and creates the topic with flag 0
    flagged = s.unique("DiffRangeFlag")
    out["create_sys_flag_2^70"] = observe(s, await s.b(RC.UPDATE_AND_CREATE_TOPIC,
                                                       topic_ext(flagged, topicSysFlag=2**70)))  # fmt: skip
    # more queues than rocketq's maxTopicQueueNums (1024)
    wide = s.unique("DiffRangeWide")
    wide_ext = topic_ext(wide, readQueueNums=2000, writeQueueNums=2000)
    out["create_2000_queues"] = observe(s, await s.b(RC.UPDATE_AND_CREATE_TOPIC, wide_ext))
    for name in (flagged, wide):  # leave the shared Java broker as it was
        await s.b(RC.DELETE_TOPIC_IN_BROKER, {"topic": name})
    return out
