"""The same 5.x client scenarios against Apache RocketMQ 5.3.3's broker + gRPC proxy in local mode (Maven,
``rocketq.testing.java5proxy``) and against rocketq, compared: send statuses and ids, what a SimpleConsumer
receives and with which delivery attempts, invisible-time redelivery, and the move to the DLQ after the
group's max attempts. Differences found are fixed or listed in docs/rocketmq5.md."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rocketq.client import AdminClient
from rocketq.codes import RequestCode
from rocketq.remoting.client import RemotingClient
from rocketq.testing.java5proxy import JavaProxyCluster
from rocketq.testing.process import StandaloneProcess
from rocketq.testing.wire import Wire

sys.path.insert(0, str(Path(__file__).parent))  # the shared drivers (v5drivers.py)

from v5drivers import java_client, python_client

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.interop]


class Target:
    """One side of the comparison: a name server, a broker and a gRPC endpoint."""

    def __init__(self, name: str, namesrv_addr: str, broker_addr: str, grpc_addr: str, cluster: str) -> None:
        self.name, self.namesrv_addr, self.broker_addr, self.grpc_addr = name, namesrv_addr, broker_addr, grpc_addr
        self.cluster = cluster


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    c = JavaProxyCluster(tmp_path_factory.mktemp("java5proxy"), broker_settings={"timerWheelEnable": "true"})
    c.start()
    try:
        yield Target("java", c.namesrv_addr, c.broker_addr, c.grpc_addr, c.cluster_name)
    finally:
        c.stop()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def ours(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Target]:
    data = tmp_path_factory.mktemp("rocketq-v5diff")
    proc = await StandaloneProcess.start(data, "reviveInterval=100", grpc=True, log_path=data / "standalone.log")
    async with AdminClient(namesrv_addr=proc.namesrv_addr) as admin, asyncio.timeout(30):
        while not await admin.brokers():
            await asyncio.sleep(0.1)
    try:
        yield Target("rocketq", proc.namesrv_addr, proc.broker_addr, proc.grpc_addr, "DefaultCluster")
    finally:
        await proc.stop()


async def topic_on(t: Target, queues: int = 2, kind: str = "NORMAL") -> str:
    """A topic of one ``message.type`` on the target's broker: Java's proxy routes only that type to it (5.3.3
    refuses MIXED: "MIXED message type is not supported"); rocketq ignores the attribute and routes every type
    (docs/grpc.md)."""
    name = f"D5-{uuid.uuid4().hex[:8]}"
    ext = {"topic": name, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues, "perm": 6,
           "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false",
           "attributes": f"+message.type={kind}"}  # fmt: skip
    rc = RemotingClient()
    try:
        assert (await Wire(rc, t.broker_addr).call(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)).code == 0
    finally:
        await rc.close()
    async with AdminClient(namesrv_addr=t.namesrv_addr) as admin, asyncio.timeout(30):
        while True:
            try:
                await admin.topic_route(name)
                break
            except Exception:  # not routed yet
                await asyncio.sleep(0.2)
    await asyncio.sleep(0.5)  # the proxy reads routes through its own cache
    return name


async def both(java: Target, ours: Target, run: Any) -> tuple[Any, Any]:
    return await run(java), await run(ours)


async def test_send_and_simple_consume_agree(java: Target, ours: Target, tmp_path: Path) -> None:
    async def run(t: Target) -> Any:
        seen = []
        for kind, message_type in (("normal", "NORMAL"), ("fifo", "FIFO"), ("delay", "DELAY"), ("tx", "TRANSACTION")):
            topic = await topic_on(t, kind=message_type)
            sent = await java_client(tmp_path, t.grpc_addr, "produce", topic, kind, "2")
            got = await java_client(tmp_path, t.grpc_addr, "simple", f"dg-{uuid.uuid4().hex[:6]}", topic, "2")
            seen.append((sorted(s["body"] for s in sent),
                         sorted((g["body"], g["attempt"], g["tag"], g["group"]) for g in got if g["event"] == "acked"),
                         [g["count"] for g in got if g["event"] == "after"]))  # fmt: skip
        return seen

    theirs, mine = await both(java, ours, run)
    assert mine == theirs


async def test_redelivery_after_the_invisible_time_agrees(java: Target, ours: Target, tmp_path: Path) -> None:
    async def run(t: Target) -> Any:
        topic = await topic_on(t, queues=1)
        await python_client(tmp_path, t.grpc_addr, "produce", topic, "normal", "1")
        got = await python_client(tmp_path, t.grpc_addr, "redeliver", f"dr-{uuid.uuid4().hex[:6]}", topic)
        return [(g["event"], g["body"], g["attempt"]) for g in got]

    theirs, mine = await both(java, ours, run)
    assert mine == theirs == [("first", "normal-0", 1), ("again", "normal-0", 2)]


async def test_dlq_after_max_attempts_agrees(java: Target, ours: Target, tmp_path: Path) -> None:
    async def run(t: Target) -> Any:
        topic = await topic_on(t, queues=1)
        group = f"dd-{uuid.uuid4().hex[:6]}"
        async with AdminClient(namesrv_addr=t.namesrv_addr) as admin:
            await admin.update_subscription_group(group, cluster=t.cluster, retry_max_times=1)  # 2 deliveries
        await python_client(tmp_path, t.grpc_addr, "produce", topic, "normal", "1")
        got = await python_client(tmp_path, t.grpc_addr, "dlq", group, topic)
        rc = RemotingClient()
        try:
            wire = Wire(rc, t.broker_addr)
            resp = await wire.call(RequestCode.GET_MAX_OFFSET, {"topic": f"%DLQ%{group}", "queueId": 0})
        finally:
            await rc.close()
        return got[-1]["attempts"], int((resp.ext_fields or {}).get("offset", -1)) if resp.code == 0 else resp.code

    theirs, mine = await both(java, ours, run)
    assert mine == theirs == ([1, 2], 1)
