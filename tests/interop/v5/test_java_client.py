"""Apache RocketMQ's Java 5.x gRPC client (Maven ``rocketmq-client-java`` 5.0.8, pinned in
tests/interop/java/rmq5/pom.xml; ``make interop-java`` compiles tests/interop/v5/java/V5Driver.java) against
rocketq's gRPC endpoint, one JVM per scenario: Producer (normal, FIFO, delay, transaction), SimpleConsumer
(receive, change invisible duration, ack, nothing after), PushConsumer (a failed delivery retried)."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rocketq.client import AdminClient
from rocketq.testing.process import StandaloneProcess

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.interop]

sys.path.insert(0, str(Path(__file__).parent))  # the shared drivers (v5drivers.py)

from v5drivers import DRIVER5, java_client  # noqa: E402


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[StandaloneProcess]:
    if not (DRIVER5 / "V5Driver.class").exists():
        pytest.fail(f"{DRIVER5} has no V5Driver.class: run `make interop-java` (scripts/java-interop.sh)")
    data = tmp_path_factory.mktemp("java5-standalone")
    proc = await StandaloneProcess.start(data, "reviveInterval=100", grpc=True, log_path=data / "standalone.log")
    async with AdminClient(namesrv_addr=proc.namesrv_addr) as admin, asyncio.timeout(30):
        while not await admin.brokers():
            await asyncio.sleep(0.1)
    try:
        yield proc
    finally:
        await proc.stop()


async def drive(server: StandaloneProcess, home: Path, *args: str) -> list[dict[str, Any]]:
    return await java_client(home, server.grpc_addr, *args)


async def topic(server: StandaloneProcess) -> str:
    name = f"J5-{uuid.uuid4().hex[:8]}"
    async with AdminClient(namesrv_addr=server.namesrv_addr) as admin:
        await admin.create_topic(name, read_queue_nums=2, write_queue_nums=2)
    return name


async def test_java_producer_every_kind_and_simple_consumer(server: StandaloneProcess, tmp_path: Path) -> None:
    t = await topic(server)
    sent = []
    for kind in ("normal", "fifo", "delay", "tx"):
        sent += await drive(server, tmp_path, "produce", t, kind, "2")
    assert len({s["message_id"] for s in sent}) == 8
    got = await drive(server, tmp_path, "simple", f"j5g-{uuid.uuid4().hex[:6]}", t, "8")
    acked = {g["body"]: g for g in got if g["event"] == "acked"}
    assert sorted(acked) == sorted(s["body"] for s in sent)
    assert (acked["java-fifo-1"]["group"], acked["java-fifo-1"]["tag"], acked["java-fifo-1"]["attempt"]) == (
        "group-1", "TagJ", 1)  # fmt: skip
    assert [g["count"] for g in got if g["event"] == "after"] == [0]


async def test_java_push_consumer_retries_a_failed_delivery(server: StandaloneProcess, tmp_path: Path) -> None:
    t = await topic(server)
    await drive(server, tmp_path, "produce", t, "normal", "2")
    got = await drive(server, tmp_path, "push", f"j5p-{uuid.uuid4().hex[:6]}", t, "2")
    attempts = got[-1]["attempts"]
    assert {b: a[:2] for b, a in attempts.items()} == {"java-normal-0": [1, 2], "java-normal-1": [1, 2]}
