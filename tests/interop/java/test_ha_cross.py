"""Replication across implementations, with the Java 4.9 broker from Maven: a Java slave follows a rocketq
master, and a rocketq slave follows a Java master; both end with the same commit log, consume queues and
index files as their master (the HA frames are the wire contract between them)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol import fastjson
from rocketq.remoting.client import RemotingClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.java import JavaCluster
from rocketq.testing.wire import Wire

# the same file geometry on both sides, so the files can be compared one for one
SIZES = {"mappedFileSizeCommitLog": 1024 * 1024, "mappedFileSizeConsumeQueue": 1000 * 20, "maxHashSlotNum": 1000,
         "maxIndexNum": 4000}  # fmt: skip
JAVA_SIZES = {k: str(v) for k, v in SIZES.items()}


@pytest.fixture
async def rc() -> AsyncIterator[RemotingClient]:
    client = RemotingClient()
    yield client
    await client.close()


async def load(wire: Wire, n: int) -> None:
    for i in range(n):
        resp = await wire.send("THaX", b"j%04d" % i * (1 + i % 30), queue_id=i % 4, props={"KEYS": f"k{i} all"})
        assert resp.code == ResponseCode.SUCCESS, resp.remark


def written(root: Path, sub: str) -> dict[str, bytes]:
    """Files under ``root/sub`` holding data (Java also pre-creates the next, empty commit-log file);
    index files by position (their names are creation times)."""
    base = root / sub
    found = [(str(p.relative_to(base)), p.read_bytes()) for p in sorted(base.rglob("*")) if p.is_file()]
    found = [(name, data) for name, data in found if data.count(0) != len(data)]
    return {f"#{i}": data for i, (_, data) in enumerate(found)} if sub == "index" else dict(found)


def assert_same_store(slave_root: Path, master_root: Path) -> None:
    for sub in ("commitlog", "consumequeue", "index"):
        mine, theirs = written(slave_root, sub), written(master_root, sub)
        assert theirs and sorted(mine) == sorted(theirs), sub
        assert mine == theirs, f"{sub} differs"


async def test_a_java_slave_follows_a_rocketq_master(tmp_path: Path, rc: RemotingClient) -> None:
    async with EmbeddedCluster(tmp_path / "rq", haSendHeartbeatInterval=500, **SIZES) as cluster:
        master = cluster.broker
        java = JavaCluster(tmp_path / "java", broker_name="broker-a", broker_settings={
            "brokerRole": "SLAVE", "brokerId": "1", "haSendHeartbeatInterval": "500",
            "haMasterAddress": f"127.0.0.1:{master.config.haListenPort}", **JAVA_SIZES,
        })  # fmt: skip
        await asyncio.to_thread(java.start)
        try:
            await load(Wire(rc, cluster.broker_addr), 300)
            top = master.store.get_max_phy_offset()
            async with asyncio.timeout(60):  # the Java slave's reports: the first one after its heartbeat interval
                while max((c.ack_offset for c in master.ha.master.connections), default=-1) < top:
                    await asyncio.sleep(0.05)
            assert [c.request_offset for c in master.ha.master.connections] == [0]
            await asyncio.sleep(1.5)  # its reput thread builds the consume queues and index from what it acked
        finally:
            await asyncio.to_thread(java.stop)
    assert_same_store(tmp_path / "java" / "store", tmp_path / "rq" / "broker-a")


async def test_a_rocketq_slave_follows_a_java_master(tmp_path: Path, rc: RemotingClient) -> None:
    java = JavaCluster(tmp_path / "java", broker_name="broker-a", broker_settings={
        "haSendHeartbeatInterval": "500", **JAVA_SIZES,
    })  # fmt: skip
    await asyncio.to_thread(java.start)
    try:
        async with EmbeddedCluster(tmp_path / "rq", brokers=0) as cluster:
            cfg = cluster.slave_config(0, 1, haMasterAddress=f"127.0.0.1:{java.broker_port + 1}",
                                       haSendHeartbeatInterval=500, **SIZES)  # fmt: skip
            slave = await cluster.start_broker(0, cfg)
            wire = Wire(rc, java.broker_addr)
            await load(wire, 300)
            async with asyncio.timeout(60):
                while True:
                    resp = await wire.call(RequestCode.GET_BROKER_RUNTIME_INFO)
                    top = int(fastjson.loads(resp.body)["table"]["commitLogMaxOffset"]) if resp.code == 0 else -1
                    if top > 0 and slave.store.get_max_phy_offset() == top:
                        break
                    await asyncio.sleep(0.1)
            assert slave.ha.client.connects == 1
            await asyncio.sleep(1.5)  # the Java master's consume queues and index are written by its own reput
    finally:
        await asyncio.to_thread(java.stop)
    assert_same_store(tmp_path / "rq" / "broker-a-s1", tmp_path / "java" / "store")
