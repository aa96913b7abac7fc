"""Our Python client and the Apache C++ client read each other's messages, compressed bodies included."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cppharness import Driver, create_topic, start_driver, wait_until  # type: ignore[import-not-found]

from rocketq.client import ConsumeFromWhere, LitePullConsumer, Message, Producer
from rocketq.testing import EmbeddedCluster

N = 40
BIG = 6000  # above the 4 KiB compression threshold of both clients


def body(i: int) -> str:
    text = f"message-{i}-"
    return (text * (BIG // len(text) + 1))[:BIG] if i % 2 else text


async def test_cpp_push_consumer_reads_what_our_producer_sent(
    cluster: EmbeddedCluster, drivers: list[Driver], tmp_path: Path
) -> None:
    ns = cluster.namesrv_addr
    await create_topic(cluster, "FromPython")
    consumer = await start_driver(
        "push-consume", "--topic", "FromPython", "--group", "G_CPP_READS", "--expect", str(N), "--timeout", "60",
        "--read-prop", "idx", namesrv=ns, home=tmp_path / "c",
    )  # fmt: skip
    drivers.append(consumer)
    await asyncio.wait_for(consumer.started.wait(), 30)
    await wait_until(lambda: cluster.broker.consumers.get("G_CPP_READS") is not None, 30, "the C++ consumer")
    async with Producer("py-producer", namesrv_addr=ns) as producer:
        sent = []
        for i in range(N):
            msg = Message("FromPython", body(i).encode(), tags="T" + str(i % 3), keys=[f"k{i}"])
            msg.properties["idx"] = str(i)
            sent.append((await producer.send(msg)).msg_id)
    assert await consumer.wait(90) == 0, consumer.lines[-5:]
    got = {m["props"]["idx"]: m for m in consumer.messages}
    assert len(got) == N
    for i in range(N):
        m = got[str(i)]
        assert m["body"] == body(i)  # the C++ client inflated our zlib bodies
        assert m["tags"] == f"T{i % 3}" and m["keys"] == f"k{i}"
        assert m["msg_id"] == sent[i]  # our UNIQ_KEY is what C++ shows as the message id


async def test_our_consumer_reads_what_the_cpp_producer_sent(
    cluster: EmbeddedCluster, drivers: list[Driver], tmp_path: Path
) -> None:
    ns = cluster.namesrv_addr
    producer = await start_driver(
        "produce", "--topic", "FromCpp", "--group", "PG_CPP", "--count", str(N), "--tags", "A,B",
        "--keys-prefix", "ck-", "--prop", "idx={i}", "--body", "cpp-{i}-", "--body-size", str(BIG),
        "--timeout", "60", namesrv=ns, home=tmp_path / "p",
    )  # fmt: skip
    drivers.append(producer)
    assert await producer.wait(90) == 0, producer.lines[-5:]
    sent_ids = {m["msg_id"] for m in producer.messages}
    consumer = LitePullConsumer(
        "G_PY_READS", namesrv_addr=ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe("FromCpp", "*")
    await consumer.start()
    got = {}
    try:
        async with asyncio.timeout(60):
            while len(got) < N:
                for m in await consumer.poll(timeout=1.0):
                    got[m.msg_id] = m
    finally:
        await consumer.shutdown()
    assert set(got) == sent_ids
    for m in got.values():
        i = int(m.properties["idx"])
        expected = f"cpp-{i}-".encode()
        assert m.body.startswith(expected) and len(m.body) == BIG  # inflated
        assert m.tags == ("A" if i % 2 == 0 else "B") and m.keys == [f"ck-{i}"]
    assert any(m.sys_flag & 0x1 for m in got.values())  # the C++ client really compressed them
