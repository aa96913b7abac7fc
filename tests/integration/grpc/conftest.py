"""An embedded broker with its gRPC endpoint on an ephemeral port, and a client made of rocketq's own stubs
(never the rocketmq-python-client package: its protos would clash with ours in one process)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import grpc
import pytest_asyncio

from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.proto import messaging_service_pb2_grpc as svc_grpc
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.protocol.bodies import TopicConfig
from rocketq.testing.cluster import EmbeddedCluster

TOPIC = "GrpcTopic"
GROUP = "GrpcGroup"


class Client:
    def __init__(self, address: str, client_id: str | None = None, extra: list[tuple[str, str]] | None = None) -> None:
        self.address = address
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = svc_grpc.MessagingServiceStub(self.channel)
        self.client_id = client_id if client_id is not None else f"test@{uuid.uuid4().hex[:8]}"
        self.extra = extra or []

    def md(self) -> list[tuple[str, str]]:
        out = [("x-mq-language", "PYTHON"), ("x-mq-protocol", "GRPC_V2"), ("x-mq-client-version", "5.1.2")]
        if self.client_id:
            out.append(("x-mq-client-id", self.client_id))
        return out + self.extra

    def endpoints(self) -> pb.Endpoints:
        host, _, port = self.address.rpartition(":")
        return pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host=host, port=int(port))])

    async def close(self) -> None:
        await self.channel.close()


def message(topic: str = TOPIC, body: bytes = b"hello", **system: object) -> pb.Message:
    sp = pb.SystemProperties(message_id=uuid.uuid4().hex.upper(), body_encoding=pb.IDENTITY,
                             message_type=pb.NORMAL)  # fmt: skip
    for key, value in system.items():
        if key in ("delivery_timestamp", "born_timestamp"):
            getattr(sp, key).FromMilliseconds(int(value))  # type: ignore[call-overload]
        elif key == "keys":
            sp.keys.extend(value)  # type: ignore[call-overload]
        else:
            setattr(sp, key, value)
    return pb.Message(topic=pb.Resource(name=topic), system_properties=sp, body=body)


def settings_producer(topics: list[str]) -> svc.TelemetryCommand:
    return svc.TelemetryCommand(settings=pb.Settings(
        client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name=t) for t in topics]),
    ))  # fmt: skip


def settings_consumer(group: str, topic: str, client_type: int = pb.SIMPLE_CONSUMER) -> svc.TelemetryCommand:
    return svc.TelemetryCommand(settings=pb.Settings(
        client_type=client_type,  # type: ignore[arg-type]
        subscription=pb.Subscription(group=pb.Resource(name=group), subscriptions=[pb.SubscriptionEntry(
            topic=pb.Resource(name=topic), expression=pb.FilterExpression(type=pb.TAG, expression="*"))]),
    ))  # fmt: skip


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster() -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(grpcServerEnable=True, maxMessageSize=64 * 1024, transactionCheckInterval=600_000,
                               reviveInterval=200) as c:  # fmt: skip
        c.broker.topics.update(TopicConfig(TOPIC, 4, 4))
        endpoint = c.broker.grpc
        assert endpoint is not None
        endpoint.consumer.min_polling_ms = 200  # tests wait in fractions of a second, not Java's 5 s floor
        yield c


@pytest_asyncio.fixture(loop_scope="module")
async def client(cluster: EmbeddedCluster) -> AsyncIterator[Client]:
    assert cluster.broker.grpc is not None
    c = Client(f"127.0.0.1:{cluster.broker.grpc.port}")
    try:
        yield c
    finally:
        await c.close()
