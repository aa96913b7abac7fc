"""QueryRoute, Telemetry settings, SendMessage of every type, and the error statuses, over real gRPC."""

from __future__ import annotations

import asyncio
import time

import pytest
from tests.integration.grpc.conftest import TOPIC, Client, message, settings_consumer, settings_producer

from rocketq.grpc.producer import group_queue
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.grpc.server import GrpcBindError, GrpcEndpoint
from rocketq.protocol.bodies import TopicConfig
from rocketq.protocol.message import MessageRecord
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")


def stored(cluster: EmbeddedCluster, topic: str, message_id: str) -> MessageRecord:
    """The record of ``message_id`` in any queue of ``topic`` (by its UNIQ_KEY)."""
    broker = cluster.broker
    tc = broker.topics.get(topic)
    assert tc is not None
    for qid in range(tc.read_queue_nums):
        for offset in range(broker.store.get_max_offset_in_queue(topic, qid)):
            rec = broker.pop_service.read(topic, qid, offset)
            if rec is not None and rec.properties.get("UNIQ_KEY") == message_id:
                return rec
    raise AssertionError(f"{message_id} not stored in {topic}")


async def test_route_lists_this_brokers_queues_with_the_requested_endpoints(client: Client) -> None:
    resp = await client.stub.QueryRoute(
        svc.QueryRouteRequest(topic=pb.Resource(name=TOPIC), endpoints=client.endpoints()), metadata=client.md()
    )
    assert resp.status.code == pb.OK
    assert [q.id for q in resp.message_queues] == [0, 1, 2, 3]
    for q in resp.message_queues:
        assert q.permission == pb.READ_WRITE
        assert q.broker.id == 0 and q.broker.name == "broker-a"
        assert q.broker.endpoints == client.endpoints()
        assert list(q.accept_message_types) == [pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION]


@pytest.mark.parametrize(
    ("topic", "code"),
    [("NoSuchTopic", pb.TOPIC_NOT_FOUND), ("rmq_sys_anything", pb.ILLEGAL_TOPIC), ("bad topic", pb.ILLEGAL_TOPIC),
     ("TBW102", pb.ILLEGAL_TOPIC)],
)  # fmt: skip
async def test_route_refusals(client: Client, topic: str, code: int) -> None:
    resp = await client.stub.QueryRoute(svc.QueryRouteRequest(topic=pb.Resource(name=topic)), metadata=client.md())
    assert resp.status.code == code


async def test_every_rpc_needs_a_client_id(cluster: EmbeddedCluster) -> None:
    assert cluster.broker.grpc is not None
    anonymous = Client(f"127.0.0.1:{cluster.broker.grpc.port}", client_id="")
    try:
        route = await anonymous.stub.QueryRoute(svc.QueryRouteRequest(topic=pb.Resource(name=TOPIC)),
                                                metadata=anonymous.md())  # fmt: skip
        send = await anonymous.stub.SendMessage(svc.SendMessageRequest(messages=[message()]), metadata=anonymous.md())
        assert route.status.code == send.status.code == pb.CLIENT_ID_REQUIRED
    finally:
        await anonymous.close()


async def test_producer_settings_reply(client: Client) -> None:
    call = client.stub.Telemetry(metadata=client.md())
    await call.write(settings_producer([TOPIC]))
    reply = await asyncio.wait_for(call.read(), 10)
    await call.done_writing()
    assert reply.status.code == pb.OK
    s = reply.settings
    assert s.publishing.max_body_size == 64 * 1024 and s.publishing.validate_message_type
    assert [t.name for t in s.publishing.topics] == [TOPIC]
    assert s.backoff_policy.max_attempts == 3
    assert s.backoff_policy.exponential_backoff.initial.ToMilliseconds() == 10
    assert s.backoff_policy.exponential_backoff.max.ToMilliseconds() == 1000


async def test_consumer_settings_reply_carries_the_groups_retry_policy(client: Client) -> None:
    call = client.stub.Telemetry(metadata=client.md())
    await call.write(settings_consumer("SettingsGroup", TOPIC))
    reply = await asyncio.wait_for(call.read(), 10)
    await call.done_writing()
    s = reply.settings
    assert reply.status.code == pb.OK
    assert s.subscription.receive_batch_size == 32
    assert s.subscription.long_polling_timeout.ToMilliseconds() == 20_000
    assert s.subscription.fifo is False
    assert s.backoff_policy.max_attempts == 17
    assert [d.ToMilliseconds() for d in s.backoff_policy.customized_backoff.next][:3] == [1000, 5000, 10000]
    assert len(s.backoff_policy.customized_backoff.next) == 18


async def test_telemetry_refuses_settings_without_a_kind(client: Client) -> None:
    call = client.stub.Telemetry(metadata=client.md())
    await call.write(svc.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER)))
    await call.done_writing()
    with pytest.raises(Exception) as info:
        async for _ in call:
            pass
    assert "publishing or subscription" in str(info.value)


async def test_normal_send_stores_the_proxys_properties(cluster: EmbeddedCluster, client: Client) -> None:
    msg = message(tag="TagA", keys=["k1", "k2"], born_timestamp=1_700_000_000_000, born_host="10.0.0.9")
    msg.user_properties["color"] = "red"
    resp = await client.stub.SendMessage(svc.SendMessageRequest(messages=[msg]), metadata=client.md())
    assert resp.status.code == pb.OK
    (entry,) = resp.entries
    assert entry.status.code == pb.OK
    assert entry.message_id == msg.system_properties.message_id and entry.transaction_id == ""
    rec = stored(cluster, TOPIC, entry.message_id)
    assert rec.queue_offset == entry.offset
    p = rec.properties
    assert (p["TAGS"], p["KEYS"], p["PGROUP"], p["color"]) == ("TagA", "k1 k2", TOPIC, "red")
    assert (p["__BORNHOST"], p["BORN_TIMESTAMP"], p["RECONSUME_TIME"]) == ("10.0.0.9", "1700000000000", "0")
    assert rec.born_timestamp == 1_700_000_000_000 and rec.body == b"hello"


async def test_fifo_sends_of_one_group_land_on_its_hash_queue(cluster: EmbeddedCluster, client: Client) -> None:
    queues = set()
    for _ in range(3):
        msg = message(message_group="order-42", message_type=pb.FIFO)
        resp = await client.stub.SendMessage(svc.SendMessageRequest(messages=[msg]), metadata=client.md())
        assert resp.status.code == pb.OK
        rec = stored(cluster, TOPIC, resp.entries[0].message_id)
        assert rec.properties["__SHARDINGKEY"] == "order-42"
        queues.add(rec.queue_id)
    assert queues == {group_queue("order-42", 4)}


async def test_delay_send_goes_to_the_timer_with_its_delivery_time(cluster: EmbeddedCluster, client: Client) -> None:
    due = int(time.time() * 1000) + 60_000
    msg = message(delivery_timestamp=due, message_type=pb.DELAY)
    resp = await client.stub.SendMessage(svc.SendMessageRequest(messages=[msg]), metadata=client.md())
    assert resp.status.code == pb.OK
    rec = stored(cluster, "rmq_sys_wheel_timer", resp.entries[0].message_id)
    assert rec.properties["TIMER_DELIVER_MS"] == str(due) and rec.properties["REAL_TOPIC"] == TOPIC


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"body": b""}, pb.MESSAGE_BODY_EMPTY),
        ({"body": b"x" * (64 * 1024 + 1)}, pb.MESSAGE_BODY_TOO_LARGE),
        ({"topic": "NoSuchTopic"}, pb.TOPIC_NOT_FOUND),
        ({"topic": "bad topic"}, pb.ILLEGAL_TOPIC),
        ({"tag": "a|b"}, pb.ILLEGAL_MESSAGE_TAG),
        ({"message_id": " "}, pb.ILLEGAL_MESSAGE_ID),
        ({"message_group": "g" * 64}, pb.ILLEGAL_MESSAGE_GROUP),
        ({"delivery_timestamp": int(time.time() * 1000) + 2 * 86_400_000}, pb.ILLEGAL_DELIVERY_TIME),
        ({"property": ("UNIQ_KEY", "x")}, pb.ILLEGAL_MESSAGE_PROPERTY_KEY),
    ],
)
async def test_send_refusals(client: Client, change: dict[str, object], code: int) -> None:
    topic = str(change.pop("topic", TOPIC))
    body = change.pop("body", b"hello")
    prop = change.pop("property", None)
    msg = message(topic=topic, body=body, **change)  # type: ignore[arg-type]
    if prop is not None:
        msg.user_properties[prop[0]] = prop[1]  # type: ignore[index]
    resp = await client.stub.SendMessage(svc.SendMessageRequest(messages=[msg]), metadata=client.md())
    assert resp.status.code == code, resp.status.message


async def test_messages_of_two_topics_in_one_request_are_corrupted(client: Client) -> None:
    req = svc.SendMessageRequest(messages=[message(), message(topic="Other")])
    resp = await client.stub.SendMessage(req, metadata=client.md())
    assert resp.status.code == pb.MESSAGE_CORRUPTED


async def test_a_taken_grpc_port_is_a_clear_error(cluster: EmbeddedCluster) -> None:
    broker = cluster.broker
    assert broker.grpc is not None
    second = GrpcEndpoint(broker.ctx, broker.send_service, broker.transactions, broker.pop_service, None,
                          host="127.0.0.1", port=broker.grpc.port)  # fmt: skip
    with pytest.raises(GrpcBindError, match=f"cannot listen on 127.0.0.1:{broker.grpc.port}"):
        await second.start()


async def test_namespaced_resources_are_ns_percent_name(cluster: EmbeddedCluster, client: Client) -> None:
    cluster.broker.topics.update(TopicConfig("ns1%NsTopic", 1, 1))
    topic = pb.Resource(resource_namespace="ns1", name="NsTopic")
    resp = await client.stub.QueryRoute(svc.QueryRouteRequest(topic=topic), metadata=client.md())
    assert resp.status.code == pb.OK and resp.message_queues[0].topic == topic
    msg = message(topic="NsTopic")
    msg.topic.resource_namespace = "ns1"
    sent = await client.stub.SendMessage(svc.SendMessageRequest(messages=[msg]), metadata=client.md())
    assert sent.status.code == pb.OK
    assert stored(cluster, "ns1%NsTopic", sent.entries[0].message_id).properties["PGROUP"] == "ns1%NsTopic"
