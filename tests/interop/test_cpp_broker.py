"""The Apache C++ client (rocketmq-client-cpp 1.2.3 in PyPI's rocketmq==0.4.4) against our name server + broker."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from cppharness import Driver, create_topic, start_driver, wait_until  # type: ignore[import-not-found]

from rocketq.codes import RequestCode
from rocketq.remoting.client import RemotingClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire

N = 10_000


def members(cluster: EmbeddedCluster, group: str) -> int:
    info = cluster.broker.consumers.get(group)
    return len(info.channels) if info else 0


def by_id(msgs: list[dict]) -> dict[str, dict]:
    return {m["msg_id"]: m for m in msgs}


async def test_ten_thousand_messages_clustering_broadcasting_backlog_and_pull(
    cluster: EmbeddedCluster, drivers: list[Driver], tmp_path: Path
) -> None:
    ns = cluster.namesrv_addr
    topic = "InteropTopic"
    common = ["--topic", topic, "--read-prop", "color", "--read-prop", "idx"]
    await create_topic(cluster, topic)
    # Two clustering consumers of one group and two broadcasting consumers, all before producing.
    for i in range(2):
        drivers.append(await start_driver(
            "push-consume", *common, "--group", "G_CLUSTER", "--expect", "0", "--timeout", "240",
            "--instance-name", f"c{i}", namesrv=ns, home=tmp_path / f"c{i}", name=f"cluster{i}",
        ))  # fmt: skip
    for i in range(2):
        drivers.append(await start_driver(
            "push-consume", *common, "--group", "G_BROADCAST", "--mode", "broadcasting", "--expect", str(N),
            "--timeout", "240", "--instance-name", f"b{i}", namesrv=ns, home=tmp_path / f"b{i}", name=f"bcast{i}",
        ))  # fmt: skip
    for d in drivers:
        await asyncio.wait_for(d.started.wait(), 30)
    await wait_until(lambda: members(cluster, "G_CLUSTER") == 2, 30, "both clustering consumers to join")
    await wait_until(lambda: members(cluster, "G_BROADCAST") == 2, 30, "both broadcasting consumers to join")
    # Give the C++ rebalance (triggered by NOTIFY_CONSUMER_IDS_CHANGED) a moment to split the queues.
    await asyncio.sleep(1.5)

    producer = await start_driver(
        "produce", "--topic", topic, "--group", "PG_INTEROP", "--count", str(N), "--mode", "sync",
        "--tags", "TagA,TagB", "--keys-prefix", "key-", "--prop", "color=blue", "--prop", "idx={i}",
        "--body", "body-{i}", "--timeout", "180", namesrv=ns, home=tmp_path / "p",
    )  # fmt: skip
    drivers.append(producer)
    assert await producer.wait(200) == 0, producer.errors()[:3]
    sent = producer.messages
    assert len(sent) == N and all(m["status"] == "OK" for m in sent)
    sent_ids = {m["msg_id"] for m in sent}
    assert len(sent_ids) == N

    c0, c1 = drivers[0], drivers[1]
    await wait_until(lambda: len({m["msg_id"] for m in c0.messages + c1.messages}) >= N, 120, "clustering consumers")
    b0, b1 = drivers[2], drivers[3]
    await wait_until(lambda: b0.done is not None and b1.done is not None, 120, "broadcasting consumers")
    await asyncio.sleep(2)  # late duplicates would show up here

    # Clustering: exactly once in total, split between the two members.
    counts = Counter(m["msg_id"] for m in c0.messages + c1.messages)
    assert set(counts) == sent_ids
    assert max(counts.values()) == 1, [k for k, v in counts.items() if v > 1][:5]
    assert c0.messages and c1.messages
    # Bodies, tags, keys and properties intact.
    for m in c0.messages[:200] + c1.messages[:200]:
        i = int(m["props"]["idx"])
        assert m["body"] == f"body-{i}"
        assert m["tags"] == ("TagA" if i % 2 == 0 else "TagB")
        assert m["keys"] == f"key-{i}"
        assert m["props"]["color"] == "blue"
    # Broadcasting: each member receives all of them.
    for b in (b0, b1):
        assert {m["msg_id"] for m in b.messages} == sent_ids

    # A new group started on the existing backlog receives all of it.
    late = await start_driver(
        "push-consume", *common, "--group", "G_LATE", "--expect", str(N), "--timeout", "120",
        namesrv=ns, home=tmp_path / "late",
    )  # fmt: skip
    drivers.append(late)
    assert await late.wait(150) == 0, late.lines[-5:]
    assert {m["msg_id"] for m in late.messages} == sent_ids

    # A pull consumer reading each queue from offset 0 gets all of them.
    puller = await start_driver(
        "pull-consume", *common, "--group", "G_PULL", "--expect", str(N), "--timeout", "120",
        namesrv=ns, home=tmp_path / "pull",
    )  # fmt: skip
    drivers.append(puller)
    assert await puller.wait(150) == 0, puller.lines[-5:]
    pulled = puller.messages
    assert {m["msg_id"] for m in pulled} == sent_ids
    m = next(x for x in pulled if x["props"].get("idx") == "7")
    assert (m["body"], m["tags"], m["keys"], m["props"]["color"]) == ("body-7", "TagB", "key-7", "blue")

    # The clustering group's offsets reach the end, then survive a broker restart.
    tc = cluster.broker.topics.get(topic)
    assert tc is not None
    maxima = {q: cluster.broker.store.get_max_offset_in_queue(topic, q) for q in range(tc.read_queue_nums)}
    await wait_until(lambda: cluster.broker.offsets.offsets_of("G_CLUSTER", topic) == maxima, 30, "committed offsets")
    for d in (c0, c1):
        await d.kill()
    broker = await cluster.restart_broker()
    rc = RemotingClient()
    try:
        wire = Wire(rc, broker.config.broker_addr)
        for q, mx in maxima.items():
            resp = await wire.call(
                RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "G_CLUSTER", "topic": topic, "queueId": q}
            )
            assert resp.code == 0 and int(resp.ext_fields["offset"]) == mx
    finally:
        await rc.close()


async def test_orderly_send_and_orderly_consume(
    cluster: EmbeddedCluster, drivers: list[Driver], tmp_path: Path
) -> None:
    ns = cluster.namesrv_addr
    await create_topic(cluster, "OrderTopic")
    consumer = await start_driver(
        "push-consume", "--topic", "OrderTopic", "--group", "G_ORDER", "--orderly", "--expect", "200",
        "--timeout", "90", "--read-prop", "shard", "--read-prop", "seq", namesrv=ns, home=tmp_path / "oc",
    )  # fmt: skip
    drivers.append(consumer)
    await asyncio.wait_for(consumer.started.wait(), 30)
    await wait_until(lambda: members(cluster, "G_ORDER") == 1, 30, "the orderly consumer to join")
    producer = await start_driver(
        "produce", "--topic", "OrderTopic", "--group", "PG_ORDER", "--count", "200", "--mode", "orderly",
        "--shard-count", "4", "--prop", "seq={i}", "--timeout", "60", namesrv=ns, home=tmp_path / "op",
    )  # fmt: skip
    drivers.append(producer)
    assert await producer.wait(90) == 0, producer.lines[-5:]
    assert await consumer.wait(120) == 0, consumer.lines[-5:]
    per_queue: dict[int, list[int]] = {}
    for m in consumer.messages:
        per_queue.setdefault(m["queue_id"], []).append(int(m["props"]["seq"]))
    assert sum(len(v) for v in per_queue.values()) >= 200
    for seqs in per_queue.values():
        assert seqs == sorted(seqs)


async def test_oneway_and_batch_send(cluster: EmbeddedCluster, drivers: list[Driver], tmp_path: Path) -> None:
    ns = cluster.namesrv_addr
    oneway = await start_driver(
        "produce", "--topic", "OneTopic", "--group", "PG1", "--count", "50", "--mode", "oneway", "--timeout", "60",
        namesrv=ns, home=tmp_path / "ow",
    )  # fmt: skip
    batch = await start_driver(
        "produce", "--topic", "BatchTopic", "--group", "PG2", "--count", "64", "--mode", "batch",
        "--batch-size", "16", "--keys-prefix", "bk-", "--timeout", "60", namesrv=ns, home=tmp_path / "bt",
    )  # fmt: skip
    drivers.extend([oneway, batch])
    assert await oneway.wait(90) == 0, oneway.lines[-5:]
    assert await batch.wait(90) == 0, batch.lines[-5:]
    store = cluster.broker.store
    await wait_until(
        lambda: sum(store.get_max_offset_in_queue("OneTopic", q) for q in range(4)) == 50, 20, "oneway messages"
    )
    assert sum(store.get_max_offset_in_queue("BatchTopic", q) for q in range(4)) == 64
    puller = await start_driver(
        "pull-consume", "--topic", "BatchTopic", "--group", "G_B", "--expect", "64", "--timeout", "60",
        namesrv=ns, home=tmp_path / "bp",
    )  # fmt: skip
    drivers.append(puller)
    assert await puller.wait(90) == 0, puller.lines[-5:]
    assert sorted(m["keys"] for m in puller.messages) == sorted(f"bk-{i}" for i in range(64))
