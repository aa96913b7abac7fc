"""Message trace (4.9 format) written by the rocketq client, read back through the broker's key index.

The decoder here is written from the field tables of the reference (rocketmq-ha-acl-trace.md §4.2), not from
``rocketq.client.trace``, so a mistake in the client's encoder can not hide behind the same mistake in a decoder.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from rocketq.cli.main import main
from rocketq.client import (
    AdminClient,
    ConsumeFromWhere,
    LitePullConsumer,
    LocalTransactionState,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    TransactionProducer,
)
from rocketq.client.errors import NoRouteError
from rocketq.client.trace import query_trace

TOPIC = "TraceT"
TRACE = "RMQ_SYS_TRACE_TOPIC"
WAIT = 30.0

# reference §4.2: field names by position, per record type
FIELDS = {
    "Pub": ["type", "ts", "region", "group", "topic", "msgId", "tags", "keys", "storeHost", "bodyLength", "cost",
            "msgType", "offsetMsgId", "success"],
    "SubBefore": ["type", "ts", "region", "group", "requestId", "msgId", "retryTimes", "keys"],
    "SubAfter": ["type", "requestId", "msgId", "cost", "success", "keys", "contextCode", "ts", "group"],
    "EndTransaction": ["type", "ts", "region", "group", "topic", "msgId", "tags", "keys", "storeHost", "msgType",
                       "transactionId", "state", "fromCheck"],
}  # fmt: skip


def decode(body: bytes) -> list[dict[str, str]]:
    """Records end with 0x02, fields are separated by 0x01; every record must have exactly its table's fields."""
    text = body.decode()
    assert text.endswith("\x02"), "a trace body ends with a record end"
    out = []
    for rec in text.split("\x02")[:-1]:
        parts = rec.split("\x01")
        names = FIELDS[parts[0]]
        assert len(parts) == len(names), (parts[0], parts)
        out.append(dict(zip(names, parts, strict=True)))
    return out


async def trace_messages(admin: AdminClient, msg_id: str, topic: str = TRACE) -> list[MessageExt]:
    """The trace messages keyed by ``msg_id`` (as the console finds them), waiting for the async trace sends."""
    async with asyncio.timeout(WAIT):
        while True:
            try:
                found = await admin.query_message_by_key(topic, msg_id)
            except Exception:  # the trace topic's route may not be there yet
                found = []
            if found:
                return found
            await asyncio.sleep(0.1)


class TxListener:
    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


@pytest.mark.parametrize("cluster", [{"traceTopicEnable": True}], indirect=True)
async def test_pub_sub_and_end_transaction_traces(
    cluster: Any, fast_config: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    broker = cluster.broker_addr
    got: list[MessageExt] = []
    consumer = PushConsumer("trace-cg", config=fast_config(), rebalance_interval=0.5, enable_msg_trace=True,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(lambda msgs, ctx: got.extend(msgs))
    async with Producer("trace-pg", config=fast_config(), enable_msg_trace=True) as producer:
        sent = [await producer.send(Message(TOPIC, b"hello", tags="TagA", keys=["k1", "k2"])),
                await producer.send_async(Message(TOPIC, b"second!", tags="TagB", keys="k3"))]  # fmt: skip
        async with consumer:
            async with asyncio.timeout(WAIT):
                while len({m.msg_id for m in got}) < 2:
                    await asyncio.sleep(0.05)
    tx = TransactionProducer("trace-tx", TxListener(), config=fast_config(), enable_msg_trace=True)
    async with tx:
        tx_result = await tx.send_message_in_transaction(Message(TOPIC, b"tx", tags="TagT", keys="kt"))

    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        for result, body, tags, keys in zip(sent, (b"hello", b"second!"), ("TagA", "TagB"), ("k1 k2", "k3"),
                                            strict=True):  # fmt: skip
            msgs = await trace_messages(admin, result.msg_id)
            for m in msgs:  # the trace message's keys: traced ids and their user keys
                assert m.topic == TRACE and result.msg_id in m.keys and set(keys.split()) <= set(m.keys)
            records = [r for m in msgs for r in decode(m.body) if r["msgId"] == result.msg_id]
            by_type = {r["type"]: r for r in records}
            assert sorted(r["type"] for r in records) == ["Pub", "SubAfter", "SubBefore"], records
            pub, before, after = by_type["Pub"], by_type["SubBefore"], by_type["SubAfter"]
            assert (pub["region"], pub["group"], pub["topic"], pub["tags"], pub["keys"]) == (
                "DefaultRegion", "trace-pg", TOPIC, tags, keys)  # fmt: skip
            assert (pub["storeHost"], pub["bodyLength"], pub["msgType"], pub["success"]) == (
                broker, str(len(body)), "0", "true")  # fmt: skip
            assert pub["offsetMsgId"] == result.offset_msg_id and int(pub["cost"]) >= 0 and int(pub["ts"]) > 0
            assert (before["group"], before["retryTimes"], before["keys"]) == ("trace-cg", "0", keys)
            assert before["region"] == "null"  # no broker-side send hook sets MSG_REGION (as Java's broker)
            assert (after["requestId"], after["group"], after["success"], after["contextCode"], after["keys"]) == (
                before["requestId"], "trace-cg", "true", "0", keys)  # fmt: skip
            assert int(after["ts"]) >= int(before["ts"])

        tx_id = tx_result.send_result.msg_id
        records = [r for m in await trace_messages(admin, tx_id) for r in decode(m.body) if r["msgId"] == tx_id]
        kinds = sorted(r["type"] for r in records)
        assert kinds == ["EndTransaction", "Pub"], records
        end = next(r for r in records if r["type"] == "EndTransaction")
        pub = next(r for r in records if r["type"] == "Pub")
        assert pub["msgType"] == "1"  # the half message
        assert (end["group"], end["topic"], end["tags"], end["keys"], end["storeHost"], end["msgType"]) == (
            "trace-tx", TOPIC, "TagT", "kt", broker, "2")  # fmt: skip
        assert (end["state"], end["fromCheck"], end["region"]) == ("COMMIT_MESSAGE", "false", "DefaultRegion")

        # the library's look-up, and the CLI on top of it
        first = sent[0].msg_id
        found = await query_trace(admin, first)
        assert sorted(r["type"] for r in found) == ["Pub", "SubAfter", "SubBefore"]
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["message", "trace", "-n", cluster.namesrv_addr, "-i", first, "--json"])
    out = capsys.readouterr().out
    assert code == 0
    shown = json.loads(out)
    assert sorted(r["type"] for r in shown) == ["Pub", "SubAfter", "SubBefore"]
    assert {r["msgId"] for r in shown} == {first}
    code = await asyncio.to_thread(main, ["message", "trace", "-n", cluster.namesrv_addr, "-i", first])
    table = capsys.readouterr().out
    assert code == 0 and "SubBefore" in table and "trace-pg" in table
    code = await asyncio.to_thread(main, ["message", "trace", "-n", cluster.namesrv_addr, "-i", "0A" * 16])
    assert code != 0 and "no trace" in capsys.readouterr().err


async def test_a_custom_trace_topic_and_an_untraced_client(cluster: Any, fast_config: Any) -> None:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        await admin.create_topic("MyTrace", read_queue_nums=1, write_queue_nums=1)
        async with Producer("trace-custom", config=fast_config(), enable_msg_trace=True,
                            customized_trace_topic="MyTrace") as producer:  # fmt: skip
            traced = await producer.send(Message(TOPIC, b"x", keys="custom"))
        async with Producer("trace-off", config=fast_config()) as plain:
            untraced = await plain.send(Message(TOPIC, b"y", keys="plain"))
        [m] = await trace_messages(admin, traced.msg_id, "MyTrace")
        [pub] = decode(m.body)
        want = ("Pub", traced.msg_id, "trace-custom", "custom")
        assert (pub["type"], pub["msgId"], pub["group"], pub["keys"]) == want
        # nothing went to the default topic (never even auto-created); the untraced producer wrote no trace
        with pytest.raises(NoRouteError):
            await query_trace(admin, traced.msg_id)
        assert await query_trace(admin, untraced.msg_id, "MyTrace") == []


@pytest.mark.parametrize("cluster", [{"traceTopicEnable": True, "regionId": "EastRegion"}], indirect=True)
async def test_the_pub_record_carries_the_brokers_region(cluster: Any, fast_config: Any) -> None:
    async with Producer("trace-region", config=fast_config(), enable_msg_trace=True) as producer:
        sent = await producer.send(Message(TOPIC, b"r"))
    assert sent.region_id == "EastRegion"
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        [m] = await trace_messages(admin, sent.msg_id)
    [pub] = decode(m.body)
    assert (pub["region"], pub["keys"], pub["tags"]) == ("EastRegion", "null", "null")


@pytest.mark.parametrize("cluster", [{"traceTopicEnable": True, "traceOn": False}], indirect=True)
async def test_a_broker_with_trace_off_gets_no_pub_record(cluster: Any, fast_config: Any) -> None:
    async with Producer("trace-off-broker", config=fast_config(), enable_msg_trace=True) as producer:
        sent = await producer.send(Message(TOPIC, b"q"))
    assert sent.trace_on is False
    # the shutdown flushed whatever was pending, so an empty answer now is final
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        assert await query_trace(admin, sent.msg_id) == []


@pytest.mark.parametrize("cluster", [{"traceTopicEnable": True}], indirect=True)
async def test_batch_send_and_lite_pull_traces(cluster: Any, fast_config: Any) -> None:
    """Java 4.9: a batch send writes one Pub record (joined ids, no tags or keys, the encoded batch's length); the
    lite pull consumer writes SubBefore and SubAfter (success) for each pulled message."""
    topic = "TraceBatchT"
    async with Producer("trace-batch", config=fast_config(), enable_msg_trace=True) as producer:
        [result] = await producer.send_batch([Message(topic, b"b%d" % i, keys=f"bk{i}") for i in range(3)])
    ids = result.msg_id.split(",")
    assert len(ids) == 3
    consumer = LitePullConsumer("trace-lite", config=fast_config(), enable_msg_trace=True,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    consumer.subscribe(topic, "*")
    polled: list[MessageExt] = []
    async with consumer:
        async with asyncio.timeout(WAIT):
            while len(polled) < 3:
                polled.extend(await consumer.poll(0.5))
    assert sorted(m.msg_id for m in polled) == sorted(ids)
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        # the joined ids are one key (Java's way); rocketq keys each id as well
        for key in (result.msg_id, ids[1]):
            msgs = await trace_messages(admin, key)
            pubs = [r for m in msgs for r in decode(m.body) if r["type"] == "Pub"]
            assert len(pubs) == 1, pubs
        [pub] = pubs
        assert (pub["group"], pub["topic"], pub["msgId"], pub["offsetMsgId"]) == (
            "trace-batch", topic, result.msg_id, result.offset_msg_id)  # fmt: skip
        assert (pub["tags"], pub["keys"], pub["msgType"], pub["success"]) == ("null", "null", "0", "true")
        assert int(pub["bodyLength"]) > sum(len(b"b0") for _ in ids)  # the encoded batch, headers included
        for msg_id, m in ((m.msg_id, m) for m in polled):
            records = [r for t in await trace_messages(admin, msg_id) for r in decode(t.body) if r["msgId"] == msg_id]
            by_type = {r["type"]: r for r in records}
            assert set(by_type) == {"SubBefore", "SubAfter"}, records
            before, after = by_type["SubBefore"], by_type["SubAfter"]
            assert (before["group"], before["keys"], before["retryTimes"]) == ("trace-lite", m.properties["KEYS"], "0")
            assert (after["requestId"], after["success"], after["contextCode"], after["group"]) == (
                before["requestId"], "true", "0", "trace-lite")  # fmt: skip
        # the library's look-up finds a batch message's Pub through its own id
        assert sorted(r["type"] for r in await query_trace(admin, ids[0])) == ["Pub", "SubAfter", "SubBefore"]
