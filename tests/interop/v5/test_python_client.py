"""Apache RocketMQ's official 5.x Python client (PyPI ``rocketmq-python-client==5.1.2``, in ``.venv-v5py``,
``make interop-v5``) against rocketq's gRPC endpoint, each client in its own process (pyclient.py): Producer
(normal, FIFO, delay, transactions with commit, rollback and orphan recovery), SimpleConsumer (receive, ack,
change invisible duration, redelivery with attempt + 1, FIFO order per message group), PushConsumer (a failed
message retried), and four consumers — two 5.x Python processes, two rocketq SimpleConsumers — sharing one
queue."""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rocketq.client import AdminClient
from rocketq.client.simple_consumer import SimpleConsumer
from rocketq.testing.process import StandaloneProcess

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.interop]

sys.path.insert(0, str(Path(__file__).parent))  # the shared drivers (v5drivers.py)

from v5drivers import REPO, VENV_PY, python_client  # noqa: E402

SETTINGS = ["reviveInterval=100", "transactionTimeOut=1000", "transactionCheckInterval=500"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not VENV_PY.exists():
        pytest.fail(f"{VENV_PY} is missing: run `make interop-v5` (scripts/v5-python-venv.sh)")
    return tmp_path_factory.mktemp("v5py-home")  # the client logs under ~/logs/rocketmq_python


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[StandaloneProcess]:
    data = tmp_path_factory.mktemp("v5-standalone")
    proc = await StandaloneProcess.start(data, *SETTINGS, grpc=True, log_path=data / "standalone.log")
    async with AdminClient(namesrv_addr=proc.namesrv_addr) as admin, asyncio.timeout(30):
        while not await admin.brokers():  # the broker's first registration has reached the name server
            await asyncio.sleep(0.1)
    try:
        yield proc
    finally:
        await proc.stop()


async def topic(server: StandaloneProcess, queues: int = 4) -> str:
    name = f"V5-{uuid.uuid4().hex[:8]}"
    async with AdminClient(namesrv_addr=server.namesrv_addr) as admin:
        await admin.create_topic(name, read_queue_nums=queues, write_queue_nums=queues)
    return name


async def drive(home: Path, server: StandaloneProcess, *args: str) -> list[dict[str, Any]]:
    return await python_client(home, server.grpc_addr, *args)


async def test_producer_normal_fifo_delay_and_a_simple_consumer(home: Path, server: StandaloneProcess) -> None:
    t = await topic(server)
    sent = []
    for kind in ("normal", "fifo", "delay"):
        sent += await drive(home, server, "produce", t, kind, "3")
    assert [s["body"] for s in sent] == [f"{k}-{i}" for k in ("normal", "fifo", "delay") for i in range(3)]
    assert all(len(s["message_id"]) == 34 for s in sent)  # the client's own ids are kept
    got = await drive(home, server, "simple", f"v5g-{uuid.uuid4().hex[:6]}", t, "9")
    acked = {g["body"]: g for g in got if g["event"] == "acked"}
    assert sorted(acked) == sorted(s["body"] for s in sent)
    assert [g["count"] for g in got if g["event"] == "after"] == [0]  # acked: nothing comes back
    fifo = acked["fifo-1"]
    assert (fifo["tag"], fifo["keys"], fifo["group"], fifo["attempt"]) == ("TagA", ["key-1"], "group-1", 1)
    assert fifo["properties"].get("k") == "v1" and fifo["topic"] == t


async def test_transactions_commit_rollback_and_orphan_recovery(home: Path, server: StandaloneProcess) -> None:
    t = await topic(server)
    await drive(home, server, "produce", t, "tx-commit", "2")
    await drive(home, server, "produce", t, "tx-rollback", "2")
    orphan = await drive(home, server, "produce", t, "tx-orphan", "1")
    assert orphan[-1] == {"checked": ["tx-orphan-0"]}  # the broker asked the producer over Telemetry
    got = await drive(home, server, "simple", f"v5tx-{uuid.uuid4().hex[:6]}", t, "3")
    assert sorted(g["body"] for g in got if g["event"] == "acked") == ["tx-commit-0", "tx-commit-1", "tx-orphan-0"]


async def test_unacked_comes_back_with_attempt_two(home: Path, server: StandaloneProcess) -> None:
    t = await topic(server, queues=1)
    await drive(home, server, "produce", t, "normal", "1")
    got = await drive(home, server, "redeliver", f"v5r-{uuid.uuid4().hex[:6]}", t)
    assert [(g["event"], g["body"], g["attempt"]) for g in got] == [("first", "normal-0", 1), ("again", "normal-0", 2)]


async def test_fifo_order_per_message_group(home: Path, server: StandaloneProcess) -> None:
    t = await topic(server)
    group = f"v5f-{uuid.uuid4().hex[:6]}"
    async with AdminClient(namesrv_addr=server.namesrv_addr) as admin:
        await admin.update_subscription_group(group, consume_message_orderly=True)
    await drive(home, server, "produce", t, "fifo", "6")
    got = await drive(home, server, "fifo", group, t, "6")
    per_group: dict[str, list[str]] = {}
    for g in got:
        per_group.setdefault(g["group"], []).append(g["body"])
    assert per_group == {"group-0": ["fifo-0", "fifo-2", "fifo-4"], "group-1": ["fifo-1", "fifo-3", "fifo-5"]}


async def test_push_consumer_retries_a_failed_message(home: Path, server: StandaloneProcess) -> None:
    t = await topic(server, queues=2)
    await drive(home, server, "produce", t, "normal", "2")
    got = await drive(home, server, "push", f"v5p-{uuid.uuid4().hex[:6]}", t, "2")
    attempts = got[-1]["attempts"]
    assert {body: a[:2] for body, a in attempts.items()} == {"normal-0": [1, 2], "normal-1": [1, 2]}


async def test_four_consumers_mixed_share_one_queue(home: Path, server: StandaloneProcess) -> None:
    t = await topic(server, queues=1)
    await drive(home, server, "produce", t, "normal", "40")
    group = f"v5mix-{uuid.uuid4().hex[:6]}"
    rocketq_got: list[str] = []
    stop = time.monotonic() + 30

    async def rocketq_consumer() -> None:
        c = SimpleConsumer(group, namesrv_addr=server.namesrv_addr, subscriptions={t: "*"}, await_duration=0.5,
                           invisible_duration=30.0)  # fmt: skip
        await c.start()
        mine = 0
        try:
            # At most 10 each: the 5.x processes start seconds later on a loaded machine, and the two in-process
            # consumers would otherwise drain the queue before them; the other 20 must go to the 5.x clients.
            while time.monotonic() < stop and len(rocketq_got) < 40 and mine < 10:
                for m in await c.receive(min(2, 10 - mine)):
                    rocketq_got.append(m.body.decode())
                    mine += 1
                    await c.ack(m)
                await asyncio.sleep(0.05)  # leave the 5.x processes their share
        finally:
            await c.shutdown()

    py = [drive(home, server, "simple", group, t, "40") for _ in range(2)]
    results = await asyncio.gather(*py, rocketq_consumer(), rocketq_consumer())
    python_got = [g["body"] for r in results[:2] for g in r if g["event"] == "acked"]
    every = Counter(python_got + rocketq_got)
    assert every == Counter(f"normal-{i}" for i in range(40))  # each delivered to exactly one of the four
    assert python_got and rocketq_got


async def test_cpp_4x_producer_to_5x_consumer_and_5x_producer_to_cpp_push_consumer(
    home: Path, server: StandaloneProcess, tmp_path: Path
) -> None:
    sys.path.insert(0, str(REPO / "tests" / "interop"))
    from cppharness import start_driver

    t = await topic(server)
    cpp = await start_driver("produce", "--topic", t, "--group", "PG_CPP5", "--count", "3", "--mode", "sync",
                             "--body", "cpp-{i}", "--timeout", "60", namesrv=server.namesrv_addr,
                             home=tmp_path / "cpp-produce")  # fmt: skip
    assert await cpp.wait() == 0, cpp.errors()
    got = await drive(home, server, "simple", f"v5c-{uuid.uuid4().hex[:6]}", t, "3")
    assert sorted(g["body"] for g in got if g["event"] == "acked") == ["cpp-0", "cpp-1", "cpp-2"]

    t2 = await topic(server)
    consumer = await start_driver("push-consume", "--topic", t2, "--group", "G_CPP5", "--expect", "3", "--timeout",
                                  "90", namesrv=server.namesrv_addr, home=tmp_path / "cpp-consume")  # fmt: skip
    try:
        async with asyncio.timeout(60):
            await consumer.started.wait()
        await drive(home, server, "produce", t2, "normal", "3")
        assert await consumer.wait() == 0, consumer.errors()
    finally:
        await consumer.kill()
    assert sorted(m["body"] for m in consumer.messages) == ["normal-0", "normal-1", "normal-2"]
