"""Apache RocketMQ's official 5.x Node.js client (npm ``rocketmq-client-nodejs@1.0.8``, scripts/v5-node-client.sh,
``make interop-v5``) against rocketq's gRPC endpoint, each scenario its own ``node`` process (nodeclient.js):
a Producer's messages received by a SimpleConsumer, acked, and gone."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rocketq.client import AdminClient
from rocketq.testing.process import StandaloneProcess

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.interop]

NODE5 = Path(os.environ.get("ROCKETQ_NODE5_DIR", Path.home() / ".cache" / "rocketq" / "node5"))
DRIVER = Path(__file__).with_name("nodeclient.js")
WAIT = 90.0  # a bound on a driver's run, not a threshold


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[StandaloneProcess]:
    if not (NODE5 / "node_modules" / "rocketmq-client-nodejs").exists() or shutil.which("node") is None:
        pytest.fail(f"the Node.js 5.x client is missing under {NODE5}: run `make interop-v5`")
    data = tmp_path_factory.mktemp("node5-standalone")
    proc = await StandaloneProcess.start(data, grpc=True, log_path=data / "standalone.log")
    async with AdminClient(namesrv_addr=proc.namesrv_addr) as admin, asyncio.timeout(30):
        while not await admin.brokers():
            await asyncio.sleep(0.1)
    try:
        yield proc
    finally:
        await proc.stop()


async def drive(server: StandaloneProcess, *args: str) -> list[dict[str, Any]]:
    env = {**os.environ, "ROCKETQ_NODE5_DIR": str(NODE5), "ROCKETQ_V5_WAIT": "60"}
    proc = await asyncio.create_subprocess_exec(
        "node", str(DRIVER), server.grpc_addr, *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(proc.communicate(), WAIT)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, f"nodeclient {' '.join(args)} exited {proc.returncode}:\n{err.decode()[-3000:]}"
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


async def test_node_producer_and_simple_consumer(server: StandaloneProcess) -> None:
    topic = f"N5-{uuid.uuid4().hex[:8]}"
    async with AdminClient(namesrv_addr=server.namesrv_addr) as admin:
        await admin.create_topic(topic, read_queue_nums=2, write_queue_nums=2)
    sent = await drive(server, "produce", topic, "4")
    assert [s["body"] for s in sent] == [f"node-{i}" for i in range(4)] and all(s["message_id"] for s in sent)
    got = await drive(server, "simple", f"n5g-{uuid.uuid4().hex[:6]}", topic, "4")
    acked = {g["body"]: g for g in got if g["event"] == "acked"}
    assert sorted(acked) == [f"node-{i}" for i in range(4)]
    first = acked["node-0"]
    assert (first["attempt"], first["tag"], first["keys"], first["properties"].get("k")) == (1, "TagN", ["key-0"], "v0")
    assert [g["count"] for g in got if g["event"] == "after"] == [0]
