"""ReceiveMessage / Ack / ChangeInvisibleDuration / ForwardToDLQ on the broker's POP service, and
transactions: EndTransaction and the broker's orphan check reaching the producer over Telemetry."""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid

import pytest
from google.protobuf import duration_pb2
from tests.integration.grpc.conftest import Client, message, settings_consumer, settings_producer

from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.protocol.bodies import TopicConfig
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")


def fresh_topic(cluster: EmbeddedCluster) -> str:
    name = f"T{uuid.uuid4().hex[:10]}"
    cluster.broker.topics.update(TopicConfig(name, 2, 2))
    return name


async def send(client: Client, msg: pb.Message) -> svc.SendResultEntry:
    resp = await client.stub.SendMessage(svc.SendMessageRequest(messages=[msg]), metadata=client.md())
    assert resp.status.code == pb.OK, resp.status.message
    return resp.entries[0]


async def receive(client: Client, group: str, topic: str, *, invisible_s: int = 30, poll_ms: int = 300,
                  auto_renew: bool = False) -> tuple[list[int], list[pb.Message]]:  # fmt: skip
    req = svc.ReceiveMessageRequest(
        group=pb.Resource(name=group), message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=0),
        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"), batch_size=16, auto_renew=auto_renew,
        long_polling_timeout=duration_pb2.Duration(seconds=poll_ms // 1000, nanos=(poll_ms % 1000) * 1_000_000),
    )  # fmt: skip
    if not auto_renew:
        req.invisible_duration.FromSeconds(invisible_s)
    statuses, messages, ends = [], [], 0
    async for frame in client.stub.ReceiveMessage(req, metadata=client.md(), timeout=10):
        kind = frame.WhichOneof("content")
        if kind == "status":
            statuses.append(frame.status.code)
        elif kind == "message":
            messages.append(frame.message)
        else:
            ends += 1
    assert ends == 1  # every stream ends with its delivery timestamp
    return statuses, messages


async def test_receive_ack_and_change_invisible(cluster: EmbeddedCluster, client: Client) -> None:
    topic = fresh_topic(cluster)
    statuses, got = await receive(client, "G1", topic)
    assert statuses == [pb.MESSAGE_NOT_FOUND] and got == []
    sent = await send(client, message(topic=topic, body=b"payload", tag="TagA"))
    statuses, got = await receive(client, "G1", topic)
    assert statuses == [pb.OK] and len(got) == 1
    m = got[0]
    sp = m.system_properties
    assert m.topic.name == topic and m.body == b"payload" and sp.tag == "TagA"
    assert sp.message_id == sent.message_id and sp.delivery_attempt == 1
    assert sp.body_digest.type == pb.MD5 and sp.body_digest.checksum == hashlib.md5(b"payload").hexdigest().upper()
    assert sp.body_encoding == pb.IDENTITY and sp.message_type == pb.NORMAL
    assert len(sp.receipt_handle.split(" ")) == 9
    change = svc.ChangeInvisibleDurationRequest(group=pb.Resource(name="G1"), topic=pb.Resource(name=topic),
                                                receipt_handle=sp.receipt_handle, message_id=sp.message_id)
    change.invisible_duration.FromSeconds(20)
    changed = await client.stub.ChangeInvisibleDuration(change, metadata=client.md())
    assert changed.status.code == pb.OK
    assert changed.receipt_handle and changed.receipt_handle != sp.receipt_handle
    ack = svc.AckMessageRequest(group=pb.Resource(name="G1"), topic=pb.Resource(name=topic), entries=[
        svc.AckMessageEntry(message_id=sp.message_id, receipt_handle=changed.receipt_handle)])  # fmt: skip
    acked = await client.stub.AckMessage(ack, metadata=client.md())
    assert acked.status.code == pb.OK and acked.entries[0].status.code == pb.OK
    inflight = {(c.group, c.topic): c.inflight for c in cluster.broker.pop_service.inflight("G1")}
    assert inflight[("G1", topic)] == 0


async def test_settlement_refusals(cluster: EmbeddedCluster, client: Client) -> None:
    topic = fresh_topic(cluster)
    group, res = pb.Resource(name="G2"), pb.Resource(name=topic)
    bad = svc.AckMessageRequest(group=group, topic=res, entries=[svc.AckMessageEntry(message_id="x",
                                                                                      receipt_handle="garbage")])
    resp = await client.stub.AckMessage(bad, metadata=client.md())
    assert resp.entries[0].status.code == pb.INVALID_RECEIPT_HANDLE and resp.status.code == pb.INVALID_RECEIPT_HANDLE
    await send(client, message(topic=topic))
    _, got = await receive(client, "G2", topic, invisible_s=10)
    change = svc.ChangeInvisibleDurationRequest(group=group, topic=res, message_id="x",
                                                receipt_handle=got[0].system_properties.receipt_handle)
    change.invisible_duration.FromSeconds(13 * 3600)
    assert (await client.stub.ChangeInvisibleDuration(change, metadata=client.md())).status.code == \
        pb.ILLEGAL_INVISIBLE_TIME  # fmt: skip
    req = svc.ReceiveMessageRequest(group=group, message_queue=pb.MessageQueue(topic=res), batch_size=1)
    req.invisible_duration.FromSeconds(1)  # below the 10 s floor of a simple consumer
    frames = [f async for f in client.stub.ReceiveMessage(req, metadata=client.md(), timeout=10)]
    assert frames[0].status.code == pb.ILLEGAL_INVISIBLE_TIME and frames[-1].HasField("delivery_timestamp")


async def test_forward_to_dead_letter_queue(cluster: EmbeddedCluster, client: Client) -> None:
    topic = fresh_topic(cluster)
    sent = await send(client, message(topic=topic, body=b"poison"))
    _, got = await receive(client, "G3", topic)
    sp = got[0].system_properties
    req = svc.ForwardMessageToDeadLetterQueueRequest(group=pb.Resource(name="G3"), topic=pb.Resource(name=topic),
                                                     receipt_handle=sp.receipt_handle, message_id=sp.message_id,
                                                     delivery_attempt=1, max_delivery_attempts=1)  # fmt: skip
    resp = await client.stub.ForwardMessageToDeadLetterQueue(req, metadata=client.md())
    assert resp.status.code == pb.OK
    dlq = cluster.broker.pop_service.read("%DLQ%G3", 0, 0)
    assert dlq is not None and dlq.properties["UNIQ_KEY"] == sent.message_id and dlq.body == b"poison"


async def test_auto_renew_keeps_a_push_consumers_message_invisible(cluster: EmbeddedCluster, client: Client) -> None:
    endpoint = cluster.broker.grpc
    assert endpoint is not None
    topic = fresh_topic(cluster)
    await send(client, message(topic=topic))
    _, got = await receive(client, "G4", topic, auto_renew=True)
    sp = got[0].system_properties
    assert len(endpoint.renewals) >= 1
    # a pass "70 s later" renews it (it expires within the 10 s ahead window by then)
    assert endpoint.renewals.renew_due(now_ms=int(time.time() * 1000) + 55_000) >= 1
    ack = svc.AckMessageRequest(group=pb.Resource(name="G4"), topic=pb.Resource(name=topic), entries=[
        svc.AckMessageEntry(message_id=sp.message_id, receipt_handle=sp.receipt_handle)])  # fmt: skip
    acked = await client.stub.AckMessage(ack, metadata=client.md())  # the old handle: the endpoint uses the newest
    assert acked.entries[0].status.code == pb.OK
    assert not any(key[2] == sp.message_id for key in endpoint.renewals._table)


async def test_transaction_commit_and_rollback(cluster: EmbeddedCluster, client: Client) -> None:
    topic = fresh_topic(cluster)
    committed = await send(client, message(topic=topic, body=b"yes", message_type=pb.TRANSACTION))
    rolled = await send(client, message(topic=topic, body=b"no", message_type=pb.TRANSACTION))
    assert committed.transaction_id == committed.message_id
    statuses, got = await receive(client, "G5", topic)
    assert statuses == [pb.MESSAGE_NOT_FOUND] and got == []  # half messages are not visible
    for entry, resolution in ((committed, pb.COMMIT), (rolled, pb.ROLLBACK)):
        resp = await client.stub.EndTransaction(svc.EndTransactionRequest(
            topic=pb.Resource(name=topic), message_id=entry.message_id, transaction_id=entry.transaction_id,
            resolution=resolution, source=pb.SOURCE_CLIENT,  # type: ignore[arg-type]
        ), metadata=client.md())  # fmt: skip
        assert resp.status.code == pb.OK, resp.status.message
    _, got = await receive(client, "G5", topic)
    assert [m.body for m in got] == [b"yes"]
    blank = await client.stub.EndTransaction(svc.EndTransactionRequest(topic=pb.Resource(name=topic),
                                                                       resolution=pb.COMMIT), metadata=client.md())
    assert blank.status.code == pb.INVALID_TRANSACTION_ID


async def test_orphaned_transaction_is_checked_over_telemetry(cluster: EmbeddedCluster, client: Client) -> None:
    topic = fresh_topic(cluster)
    call = client.stub.Telemetry(metadata=client.md())
    await call.write(settings_producer([topic]))
    assert (await asyncio.wait_for(call.read(), 10)).status.code == pb.OK
    orphan = await send(client, message(topic=topic, body=b"orphan", tag="T", message_type=pb.TRANSACTION))
    # the broker's check pass, as if the transaction timeout had passed
    sent = cluster.broker.transactions.check_once(now_ms=int(time.time() * 1000) + 3_600_000)
    assert sent >= 1
    command = await asyncio.wait_for(call.read(), 10)
    recover = command.recover_orphaned_transaction_command
    assert recover.transaction_id == orphan.transaction_id
    assert recover.message.topic.name == topic and recover.message.body == b"orphan"
    assert recover.message.system_properties.message_id == orphan.message_id
    resp = await client.stub.EndTransaction(svc.EndTransactionRequest(
        topic=pb.Resource(name=topic), message_id=recover.message.system_properties.message_id,
        transaction_id=recover.transaction_id, resolution=pb.COMMIT, source=pb.SOURCE_SERVER_CHECK,
    ), metadata=client.md())  # fmt: skip
    assert resp.status.code == pb.OK, resp.status.message
    _, got = await receive(client, "G6", topic)
    assert [m.body for m in got] == [b"orphan"]
    await call.done_writing()


async def test_heartbeat_needs_settings_and_termination_unregisters(cluster: EmbeddedCluster) -> None:
    assert cluster.broker.grpc is not None
    c = Client(f"127.0.0.1:{cluster.broker.grpc.port}")
    try:
        hb = await c.stub.Heartbeat(svc.HeartbeatRequest(client_type=pb.SIMPLE_CONSUMER, group=pb.Resource(
            name="G7")), metadata=c.md())  # fmt: skip
        assert hb.status.code == pb.UNRECOGNIZED_CLIENT_TYPE
        call = c.stub.Telemetry(metadata=c.md())
        await call.write(settings_consumer("G7", "GrpcTopic"))
        assert (await asyncio.wait_for(call.read(), 10)).status.code == pb.OK
        hb = await c.stub.Heartbeat(svc.HeartbeatRequest(client_type=pb.SIMPLE_CONSUMER, group=pb.Resource(
            name="G7")), metadata=c.md())  # fmt: skip
        assert hb.status.code == pb.OK
        info = cluster.broker.consumers.get("G7")
        assert info is not None and c.client_id in info.channels and "GrpcTopic" in info.subscriptions
        bye = await c.stub.NotifyClientTermination(svc.NotifyClientTerminationRequest(group=pb.Resource(name="G7")),
                                                   metadata=c.md())  # fmt: skip
        assert bye.status.code == pb.OK
        assert cluster.broker.consumers.get("G7") is None
        await call.done_writing()
    finally:
        await c.close()


async def test_an_expired_producer_is_registered_again_by_its_heartbeat(cluster: EmbeddedCluster) -> None:
    assert cluster.broker.grpc is not None
    topic = fresh_topic(cluster)
    c = Client(f"127.0.0.1:{cluster.broker.grpc.port}")
    try:
        call = c.stub.Telemetry(metadata=c.md())
        await call.write(settings_producer([topic]))
        assert (await asyncio.wait_for(call.read(), 10)).status.code == pb.OK
        channel = cluster.broker.producers.any_channel(topic)
        assert channel is not None and channel.client_id == c.client_id
        cluster.broker.producers.scan_expired(-1.0)  # as if it had been silent past clientChannelExpiredTimeMills
        assert cluster.broker.producers.any_channel(topic) is None
        hb = await c.stub.Heartbeat(svc.HeartbeatRequest(client_type=pb.PRODUCER), metadata=c.md())
        assert hb.status.code == pb.OK
        again = cluster.broker.producers.any_channel(topic)
        assert again is not None and again.client_id == c.client_id and not again.conn.closed
        call.cancel()
    finally:
        await c.close()


async def test_assignments_and_fifo_groups(cluster: EmbeddedCluster, client: Client) -> None:
    topic = fresh_topic(cluster)
    res = pb.Resource(name=topic)
    plain = await client.stub.QueryAssignment(svc.QueryAssignmentRequest(topic=res, group=pb.Resource(name="G8"),
                                                                          endpoints=client.endpoints()),
                                              metadata=client.md())  # fmt: skip
    assert plain.status.code == pb.OK
    assert [a.message_queue.id for a in plain.assignments] == [-1]
    assert plain.assignments[0].message_queue.broker.endpoints == client.endpoints()
    cluster.broker.groups.update(SubscriptionGroupConfig("G9", consume_message_orderly=True))
    fifo = await client.stub.QueryAssignment(svc.QueryAssignmentRequest(topic=res, group=pb.Resource(name="G9"),
                                                                         endpoints=client.endpoints()),
                                             metadata=client.md())  # fmt: skip
    assert [a.message_queue.id for a in fifo.assignments] == [0, 1]
    bodies = [f"m{i}".encode() for i in range(3)]
    for body in bodies:
        await send(client, message(topic=topic, body=body, message_group="order-1", message_type=pb.FIFO))
    _, got = await receive(client, "G9", topic)
    assert [m.body for m in got] == bodies  # one queue, in order
    assert all(m.system_properties.message_group == "order-1" for m in got)
    _, blocked = await receive(client, "G9", topic)
    assert blocked == []  # the queue waits while its popped messages are un-acked
    ack = svc.AckMessageRequest(group=pb.Resource(name="G9"), topic=res, entries=[
        svc.AckMessageEntry(message_id=sp.message_id, receipt_handle=sp.receipt_handle)
        for sp in (m.system_properties for m in got)])  # fmt: skip
    assert (await client.stub.AckMessage(ack, metadata=client.md())).status.code == pb.OK
