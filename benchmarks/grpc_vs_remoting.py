"""gRPC against remoting, and rocketq's gRPC endpoint against Apache RocketMQ 5.3.3's proxy, in one run.

    .venv/bin/python benchmarks/grpc_vs_remoting.py [--seconds 5] [--inflight 1,64] [--no-java]

Targets, each started here on 127.0.0.1 ephemeral ports and stopped at the end:
* rocketq remoting: ``rocketq standalone`` through rocketq's asyncio client (Producer.send, SimpleConsumer over
  the remoting POP codes, receive 32 + ack);
* rocketq gRPC: the same broker's gRPC endpoint, through grpc.aio with rocketq's stubs (SendMessage,
  ReceiveMessage 32 + AckMessage) — the wire the 5.x SDKs use, without their client-side overhead;
* Java gRPC: Apache RocketMQ 5.3.3's proxy in local mode (``rocketq.testing.java5proxy``, needs
  ``make interop-java``), the same grpc.aio client.
Scenarios: sends of 1 KiB with N in flight for ``--seconds`` each; then a receive-and-ack drain of what was sent.
Figures are messages per second, printed side by side; ratios only compare within this run.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc

from rocketq.client import AdminClient, Message, Producer
from rocketq.client.simple_consumer import SimpleConsumer
from rocketq.codes import RequestCode
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.proto import messaging_service_pb2_grpc as svc_grpc
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.remoting.client import RemotingClient
from rocketq.testing.process import StandaloneProcess
from rocketq.testing.wire import Wire

BODY = b"x" * 1024


async def timed(seconds: float, inflight: int, one: Callable[[], Awaitable[object]]) -> float:
    """Messages per second with ``inflight`` workers calling ``one`` for ``seconds``."""
    done = 0
    stop = time.monotonic() + seconds

    async def worker() -> None:
        nonlocal done
        while time.monotonic() < stop:
            await one()
            done += 1

    start = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(inflight)))
    return done / (time.monotonic() - start)


class GrpcTarget:
    def __init__(self, addr: str) -> None:
        self.channel = grpc.aio.insecure_channel(addr)
        self.stub = svc_grpc.MessagingServiceStub(self.channel)
        self.md = [("x-mq-client-id", f"bench@{uuid.uuid4().hex[:8]}"), ("x-mq-language", "PYTHON"),
                   ("x-mq-protocol", "GRPC_V2"), ("x-mq-client-version", "5.1.2")]  # fmt: skip
        host, _, port = addr.rpartition(":")
        self.endpoints = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host=host, port=int(port))])

    async def settings(self, command: svc.TelemetryCommand) -> None:
        """Open a Telemetry stream with ``command`` and wait for the server's settings reply (kept open)."""
        queue: asyncio.Queue[svc.TelemetryCommand | None] = asyncio.Queue()
        await queue.put(command)

        async def requests():  # type: ignore[no-untyped-def]
            while (item := await queue.get()) is not None:
                yield item

        self.stream = self.stub.Telemetry(requests(), metadata=self.md)
        await self.stream.read()

    async def send(self, topic: str) -> None:
        sp = pb.SystemProperties(message_id=uuid.uuid4().hex.upper(), body_encoding=pb.IDENTITY,
                                 message_type=pb.NORMAL)  # fmt: skip
        msg = pb.Message(topic=pb.Resource(name=topic), system_properties=sp, body=BODY)
        resp = await self.stub.SendMessage(svc.SendMessageRequest(messages=[msg]), metadata=self.md, timeout=10)
        if resp.status.code != pb.OK:
            raise RuntimeError(f"send: {resp.status.code} {resp.status.message}")

    async def receive_and_ack(self, group: str, topic: str, queue: pb.MessageQueue) -> int:
        req = svc.ReceiveMessageRequest(
            group=pb.Resource(name=group), message_queue=queue, batch_size=32,
            filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
        )  # fmt: skip
        req.invisible_duration.FromSeconds(30)
        req.long_polling_timeout.FromSeconds(5)
        entries = []
        async for frame in self.stub.ReceiveMessage(req, metadata=self.md, timeout=15):
            if frame.WhichOneof("content") == "message":
                m = frame.message
                entries.append(svc.AckMessageEntry(message_id=m.system_properties.message_id,
                                                   receipt_handle=m.system_properties.receipt_handle))  # fmt: skip
        if entries:
            await self.stub.AckMessage(svc.AckMessageRequest(group=pb.Resource(name=group),
                                                             topic=pb.Resource(name=topic), entries=entries),
                                       metadata=self.md, timeout=10)  # fmt: skip
        return len(entries)

    async def route(self, topic: str) -> pb.MessageQueue:
        req = svc.QueryRouteRequest(topic=pb.Resource(name=topic), endpoints=self.endpoints)
        resp = await self.stub.QueryRoute(req, metadata=self.md)
        return resp.message_queues[0]


async def create_topic(broker_addr: str, namesrv: str, topic: str, java: bool) -> None:
    ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6,
           "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}  # fmt: skip
    if java:
        ext["attributes"] = "+message.type=NORMAL"
    rc = RemotingClient()
    try:
        assert (await Wire(rc, broker_addr).call(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)).code == 0
    finally:
        await rc.close()
    async with AdminClient(namesrv_addr=namesrv) as admin:
        for _ in range(100):
            try:
                await admin.topic_route(topic)
                break
            except Exception:
                await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)


async def grpc_rows(name: str, addr: str, broker: str, namesrv: str, java: bool, args: argparse.Namespace,
                    ) -> dict[str, float]:  # fmt: skip
    topic, group = f"GB-{uuid.uuid4().hex[:6]}", f"gbg-{uuid.uuid4().hex[:6]}"
    await create_topic(broker, namesrv, topic, java)
    target = GrpcTarget(addr)
    out: dict[str, float] = {}
    await target.settings(svc.TelemetryCommand(settings=pb.Settings(
        client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name=topic)]))))  # fmt: skip
    sent = 0
    for n in args.inflight:
        rate = await timed(args.seconds, n, lambda: target.send(topic))
        out[f"send, {n} in flight"] = rate
        sent += int(rate * args.seconds)
    consumer = GrpcTarget(addr)
    await consumer.settings(svc.TelemetryCommand(settings=pb.Settings(
        client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(group=pb.Resource(name=group), subscriptions=[
            pb.SubscriptionEntry(topic=pb.Resource(name=topic),
                                 expression=pb.FilterExpression(type=pb.TAG, expression="*"))]))))  # fmt: skip
    queue = await consumer.route(topic)
    got, start = 0, time.monotonic()
    while time.monotonic() - start < args.seconds * 2:
        counts = await asyncio.gather(*(consumer.receive_and_ack(group, topic, queue) for _ in range(4)))
        got += sum(counts)
        if not any(counts):
            break
    out["receive 32 + ack, 4 in flight"] = got / (time.monotonic() - start)
    await target.channel.close()
    await consumer.channel.close()
    print(f"  {name}: done", file=sys.stderr)
    return out


async def remoting_rows(server: StandaloneProcess, args: argparse.Namespace) -> dict[str, float]:
    topic, group = f"RB-{uuid.uuid4().hex[:6]}", f"rbg-{uuid.uuid4().hex[:6]}"
    await create_topic(server.broker_addr, server.namesrv_addr, topic, False)
    out: dict[str, float] = {}
    async with Producer("rb-pg", namesrv_addr=server.namesrv_addr) as producer:
        for n in args.inflight:
            out[f"send, {n} in flight"] = await timed(args.seconds, n, lambda: producer.send(Message(topic, BODY)))
    consumer = SimpleConsumer(group, namesrv_addr=server.namesrv_addr, subscriptions={topic: "*"},
                              await_duration=1.0, invisible_duration=30.0, init_mode="MIN")  # fmt: skip
    await consumer.start()
    try:
        got, start = 0, time.monotonic()

        async def one() -> int:
            msgs = await consumer.receive(32)
            for m in msgs:
                await consumer.ack(m)
            return len(msgs)

        while time.monotonic() - start < args.seconds * 2:
            counts = await asyncio.gather(*(one() for _ in range(4)))
            got += sum(counts)
            if not any(counts):
                break
        out["receive 32 + ack, 4 in flight"] = got / (time.monotonic() - start)
    finally:
        await consumer.shutdown()
    print("  rocketq remoting: done", file=sys.stderr)
    return out


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--inflight", type=lambda s: [int(x) for x in s.split(",")], default=[1, 64])
    p.add_argument("--no-java", action="store_true", help="skip Apache RocketMQ's proxy")
    args = p.parse_args()
    columns: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="grpc-bench-") as tmp:
        server = await StandaloneProcess.start(Path(tmp) / "rocketq", grpc=True)
        try:
            columns["rocketq remoting"] = await remoting_rows(server, args)
            columns["rocketq gRPC"] = await grpc_rows("rocketq gRPC", server.grpc_addr, server.broker_addr,
                                                      server.namesrv_addr, False, args)  # fmt: skip
        finally:
            await server.stop()
        if not args.no_java:
            from rocketq.testing.java5proxy import JavaProxyCluster

            java = JavaProxyCluster(Path(tmp) / "java").start()
            try:
                columns["Java 5.3.3 proxy gRPC"] = await grpc_rows("Java proxy", java.grpc_addr, java.broker_addr,
                                                                   java.namesrv_addr, True, args)  # fmt: skip
            finally:
                java.stop()
    names = list(columns)
    rows = list(next(iter(columns.values())))
    print(f"{'msg/s':34}" + "".join(f"{n:>24}" for n in names) + f"{'gRPC / remoting':>18}")
    for r in rows:
        ratio = columns["rocketq gRPC"][r] / columns["rocketq remoting"][r] if columns["rocketq remoting"][r] else 0
        print(f"{r:34}" + "".join(f"{columns[n][r]:>24,.0f}" for n in names) + f"{ratio:>17.2f}×")


if __name__ == "__main__":
    asyncio.run(main())
