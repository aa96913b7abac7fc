"""Apache RocketMQ's Go client (rocketmq-client-go v2) producing to and push-consuming from rocketq.

Each test runs a rocketq EmbeddedCluster in its own event loop and the Go driver as an asyncio subprocess.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from cppharness import create_topic, wait_until  # type: ignore[import-not-found]
from goharness import GoDriver, start  # type: ignore[import-not-found]

from rocketq.client import AdminClient, ConsumeFromWhere, LitePullConsumer, Message, MessageExt, Producer
from rocketq.testing import EmbeddedCluster

N = 24
BIG = 6000  # over rocketq's 4 KiB compression threshold: the Go client has to inflate it
GO_PROPS = {"color": "blue", "note": "héllo wörld"}


def go_props_arg() -> str:
    return ",".join(f"{k}={v}" for k, v in GO_PROPS.items())


def py_body(i: int) -> str:
    text = f"py-{i}-ü-"
    return (text * (BIG // len(text) + 1))[:BIG] if i % 5 == 0 else text


async def start_consumer(
    binary: Path, cluster: EmbeddedCluster, procs: list[GoDriver], cwd: Path, topic: str, group: str, n: int,
    *extra: str, registered: bool = True,
) -> GoDriver:  # fmt: skip
    consumer = await start(binary, "push-consume", "-topic", topic, "-group", group, "-n", str(n), "-timeout", "45",
                           *extra, namesrv=cluster.namesrv_addr, cwd=cwd)  # fmt: skip
    procs.append(consumer)
    if registered:  # a consumer with nothing to wait for may be gone again before this looks
        await wait_until(lambda: cluster.broker.consumers.get(group) is not None, 30, f"the Go consumer {group}")
    return consumer


async def produce_go(
    binary: Path, cluster: EmbeddedCluster, procs: list[GoDriver], cwd: Path, topic: str, n: int
) -> list[dict[str, Any]]:
    producer = await start(binary, "produce", "-topic", topic, "-group", "PG_GO", "-n", str(n), "-tag", "TagGo",
                           "-props", go_props_arg(), namesrv=cluster.namesrv_addr, cwd=cwd)  # fmt: skip
    procs.append(producer)
    assert await producer.wait(60) == 0
    sent = producer.records
    assert [s["i"] for s in sent] == list(range(n))
    assert all(s["status"] == "SEND_OK" for s in sent), [s for s in sent if s.get("status") != "SEND_OK"]
    # Each queue's offsets are dense from 0, in send order.
    per_queue: dict[int, list[int]] = {}
    for s in sent:
        assert s["topic"] == topic and s["brokerName"] == cluster.broker.config.brokerName
        per_queue.setdefault(s["queueId"], []).append(s["queueOffset"])
    assert all(offsets == list(range(len(offsets))) for offsets in per_queue.values()), per_queue
    assert len({s["msgId"] for s in sent}) == n
    return sent


def assert_go_fields(sent: dict[str, Any], tags: str | None, keys: list[str], props: dict[str, str]) -> None:
    i = sent["i"]
    assert tags == "TagGo"
    assert keys == [f"key-{i}", f"alt-{i}"]
    assert props["seq"] == str(i)
    assert {k: props[k] for k in GO_PROPS} == GO_PROPS
    assert props["UNIQ_KEY"] == sent["msgId"]


async def lag_by_queue(cluster: EmbeddedCluster, group: str, topic: str) -> dict[int, tuple[int, int]]:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        progress = await admin.consume_progress(group, topic)
    return {p.message_queue.queue_id: (p.consumer_offset, p.broker_offset) for p in progress}


async def wait_committed(cluster: EmbeddedCluster, group: str, topic: str, queues: int) -> dict[int, tuple[int, int]]:
    """The group's offsets on the broker once every queue's consumer offset reached its max offset.

    The Go client persists offsets with oneway requests as it shuts down, so they may land just after it exits.
    """
    last: dict[int, tuple[int, int]] = {}
    try:
        async with asyncio.timeout(15):
            while True:
                last = await lag_by_queue(cluster, group, topic)
                if len(last) == queues and all(c == b for c, b in last.values()):
                    return last
                await asyncio.sleep(0.2)
    except TimeoutError:
        raise AssertionError(f"{group} on {topic}: (consumer, broker) offsets by queue {last}") from None


async def test_go_producer_messages_reach_our_consumer_intact(
    cluster: EmbeddedCluster, go_driver: Path, go_procs: list[GoDriver], tmp_path: Path
) -> None:
    await create_topic(cluster, "GoToPy")
    sent = await produce_go(go_driver, cluster, go_procs, tmp_path / "p", "GoToPy", N)
    first = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    consumer = LitePullConsumer("G_PY_READS_GO", namesrv_addr=cluster.namesrv_addr, consume_from_where=first)
    consumer.subscribe("GoToPy", "*")
    await consumer.start()
    got: dict[str, MessageExt] = {}
    try:
        async with asyncio.timeout(30):
            while len(got) < N:
                for m in await consumer.poll(timeout=1.0):
                    assert m.msg_id not in got
                    got[m.msg_id] = m
    finally:
        await consumer.shutdown()
    assert set(got) == {s["msgId"] for s in sent}
    for s in sent:
        m = got[s["msgId"]]
        assert m.topic == "GoToPy" and m.body == f"go-body-{s['i']}".encode()
        assert_go_fields(s, m.tags, m.keys, m.properties)
        assert (m.queue_id, m.queue_offset, m.offset_msg_id) == (s["queueId"], s["queueOffset"], s["offsetMsgId"])
        assert m.reconsume_times == 0


async def test_go_push_consumer_reads_what_our_producer_sent_once_and_commits(
    cluster: EmbeddedCluster, go_driver: Path, go_procs: list[GoDriver], tmp_path: Path
) -> None:
    await create_topic(cluster, "PyToGo")
    consumer = await start_consumer(go_driver, cluster, go_procs, tmp_path / "c", "PyToGo", "G_GO_READS", N)
    sent: dict[str, tuple[int, Any]] = {}
    async with Producer("py-producer", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(N):
            msg = Message("PyToGo", py_body(i), tags=f"T{i % 3}", keys=[f"pk{i}", "shared"], properties={"idx": str(i)})
            r = await producer.send(msg)
            sent[r.msg_id] = (i, r)
    assert await consumer.wait(60) == 0
    done = consumer.done
    assert done is not None and not done["timedOut"]
    got = consumer.records
    assert Counter(m["msgId"] for m in got) == Counter(set(sent))  # every message, exactly once
    assert done["deliveries"] == N and done["unique"] == N
    for m in got:
        i, r = sent[m["msgId"]]
        assert m["topic"] == "PyToGo" and m["body"] == py_body(i)
        assert m["tags"] == f"T{i % 3}" and m["keys"] == f"pk{i} shared"
        assert m["properties"]["idx"] == str(i) and m["reconsumeTimes"] == 0
        assert (m["queueId"], m["queueOffset"]) == (r.message_queue.queue_id, r.queue_offset)
        assert m["offsetMsgId"] == r.offset_msg_id and m["storeHost"] == cluster.broker_addr
    committed = await wait_committed(cluster, "G_GO_READS", "PyToGo", 4)
    assert sum(c for c, _ in committed.values()) == N


async def test_go_producer_to_go_consumer_with_one_retry_each(
    cluster: EmbeddedCluster, go_driver: Path, go_procs: list[GoDriver], tmp_path: Path
) -> None:
    n = 10
    await create_topic(cluster, "GoToGo")
    # The Go client reads its group's retry route once as it starts, before its first heartbeat makes the broker
    # create %RETRY%<group>; a new group would see its retry queue only at its next rebalance, 20 s later.
    await create_topic(cluster, "%RETRY%G_GO_RETRY", queues=1)
    sent = {s["msgId"]: s for s in await produce_go(go_driver, cluster, go_procs, tmp_path / "p", "GoToGo", n)}
    consumer = await start_consumer(go_driver, cluster, go_procs, tmp_path / "c", "GoToGo", "G_GO_RETRY", n,
                                    "-retry-once")  # fmt: skip
    assert await consumer.wait(60) == 0
    got = consumer.records
    first = [m for m in got if m["reconsumeTimes"] == 0]
    second = [m for m in got if m["reconsumeTimes"] == 1]
    assert len(got) == 2 * n and consumer.done is not None and consumer.done["unique"] == n
    assert sorted(m["msgId"] for m in first) == sorted(m["msgId"] for m in second) == sorted(sent)
    for m in got:
        s = sent[m["msgId"]]
        assert m["topic"] == "GoToGo" and m["body"] == f"go-body-{s['i']}"  # the client restores RETRY_TOPIC
        assert_go_fields(s, m["tags"], m["keys"].split(" "), m["properties"])
        assert m["acked"] == (m["reconsumeTimes"] == 1)
    for m in first:
        assert (m["queueId"], m["queueOffset"]) == (sent[m["msgId"]]["queueId"], sent[m["msgId"]]["queueOffset"])
    for m in second:  # sent back by the Go client, delivered again through SCHEDULE_TOPIC_XXXX and %RETRY%
        # Java's SendMessageProcessor sets ORIGIN_MESSAGE_ID from the stored message's id: the offset id
        assert m["properties"]["ORIGIN_MESSAGE_ID"] == sent[m["msgId"]]["offsetMsgId"]
        assert m["properties"]["RETRY_TOPIC"] == "GoToGo"
        assert m["offsetMsgId"] != sent[m["msgId"]]["offsetMsgId"]
    await wait_committed(cluster, "G_GO_RETRY", "GoToGo", 4)
    retry = await wait_committed(cluster, "G_GO_RETRY", "%RETRY%G_GO_RETRY", 1)
    assert retry[0][0] == n


async def test_go_push_consumer_tag_expression_is_filtered_by_the_broker(
    cluster: EmbeddedCluster, go_driver: Path, go_procs: list[GoDriver], tmp_path: Path
) -> None:
    await create_topic(cluster, "Tagged")
    async with Producer("py-producer", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(N):
            await producer.send(Message("Tagged", f"t-{i}", tags=f"T{i % 3}", properties={"idx": str(i)}))
    wanted = [i for i in range(N) if i % 3 != 1]
    consumer = await start_consumer(go_driver, cluster, go_procs, tmp_path / "c", "Tagged", "G_GO_TAGS",
                                    len(wanted), "-tags", "T0 || T2", registered=False)  # fmt: skip
    assert await consumer.wait(60) == 0
    assert sorted(int(m["properties"]["idx"]) for m in consumer.records) == wanted
    assert {m["tags"] for m in consumer.records} == {"T0", "T2"}
    # Every delivered message is committed. A queue whose last messages were filtered out may stay behind them:
    # the client commits up to what it received, and learns the pull's next offset only from its next pull,
    # which the broker holds (the Java client does the same).
    last_received: dict[int, int] = {}
    for m in consumer.records:
        last_received[m["queueId"]] = max(last_received.get(m["queueId"], -1), m["queueOffset"])
    committed: dict[int, tuple[int, int]] = {}
    for _ in range(75):
        committed = await lag_by_queue(cluster, "G_GO_TAGS", "Tagged")
        if all(committed.get(q, (-1, 0))[0] > off for q, off in last_received.items()):
            break
        await asyncio.sleep(0.2)
    else:
        raise AssertionError(f"(consumer, broker) offsets {committed}, last received {last_received}")
    assert all(c <= b for c, b in committed.values())
