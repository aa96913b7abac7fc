"""Both Java reference brokers (4.9.7 and 5.3.3, ``JavaCluster``) start here, and rocketq's own SDK sends to
and pulls from each: the peers ``benchmarks/java_peer.py`` measures rocketq against."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from javaharness import running_java_cluster

from rocketq.client import AdminClient, LitePullConsumer, Message, MessageExt, Producer, SendStatus
from rocketq.codes import RequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.testing.java import JavaCluster

# The version every answer of the broker carries: MQVersion.Version ordinals of V4_9_7 and V5_3_3.
VERSION = {"4.9": 407, "5": 479}


@pytest.fixture(scope="module")
def java5_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaCluster]:
    yield from running_java_cluster(tmp_path_factory.mktemp("java5-broker"), version="5", timeout=120)


@pytest.fixture(params=["4.9", "5"])
def java_cluster(request: pytest.FixtureRequest) -> JavaCluster:
    name = "java_broker" if request.param == "4.9" else "java5_broker"
    cluster: JavaCluster = request.getfixturevalue(name)
    return cluster


async def test_rocketq_sdk_round_trip(java_cluster: JavaCluster) -> None:
    topic = f"JavaPeer-{uuid.uuid4().hex[:8]}"
    ns = java_cluster.namesrv_addr
    remoting = RemotingClient()
    try:  # (GET_BROKER_RUNTIME_INFO would say it too, but a 4.9 broker fails it in its first 10 s)
        answer = await remoting.invoke(java_cluster.broker_addr, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG))
    finally:
        await remoting.close()
    assert (answer.code, answer.version) == (0, VERSION[java_cluster.version])
    async with AdminClient(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, cluster=java_cluster.cluster_name, read_queue_nums=4, write_queue_nums=4)

    async with Producer(f"pg-{topic}", namesrv_addr=ns, send_msg_timeout=30.0) as producer:
        one = await producer.send(Message(topic, b"single", tags="TagA", keys="k-1", properties={"p": "v"}))
        [batch] = await producer.send_batch([Message(topic, f"b{i}".encode(), keys=f"kb-{i}") for i in range(3)])
    assert one.status is SendStatus.SEND_OK and batch.status is SendStatus.SEND_OK
    wanted = {one.message_queue: one.queue_offset, batch.message_queue: batch.queue_offset}

    consumer = LitePullConsumer(f"cg-{topic}", namesrv_addr=ns, poll_timeout=1.0, pull_batch_size=32)
    consumer.assign(wanted)
    await consumer.start()
    got: list[MessageExt] = []
    try:
        for mq, offset in wanted.items():
            await consumer.seek(mq, offset)
        for _ in range(60):  # up to ~60 s of one-second polls
            got += await consumer.poll(timeout=1.0)
            if len(got) >= 4:
                break
    finally:
        await consumer.shutdown()

    by_body = {m.body: m for m in got}
    assert set(by_body) == {b"single", b"b0", b"b1", b"b2"}
    single = by_body[b"single"]
    assert (single.topic, single.tags, single.keys, single.properties.get("p")) == (topic, "TagA", ["k-1"], "v")
    assert single.msg_id == one.msg_id and single.queue_offset == one.queue_offset
    batched = [by_body[f"b{i}".encode()] for i in range(3)]
    assert [m.queue_offset for m in batched] == [batch.queue_offset + i for i in range(3)]
    assert [m.keys for m in batched] == [["kb-0"], ["kb-1"], ["kb-2"]]
