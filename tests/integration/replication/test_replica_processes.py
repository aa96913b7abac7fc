"""Replication between processes: ``rocketq standalone --replicas 2`` serves a master and a slave that end
byte-identical; a slave process killed with -9 restarts, recovers its own end and resumes from it."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.broker.config_views import store_config_from
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol import fastjson
from rocketq.remoting.client import RemotingClient
from rocketq.store import MessageStore
from rocketq.testing.process import StandaloneProcess
from rocketq.testing.wire import Wire

SMALL = ("mappedFileSizeCommitLog=65536", "mappedFileSizeConsumeQueue=1000", "haSendHeartbeatInterval=200",
         "haReconnectInterval=100", "registerNameServerPeriod=1000", "fastListenPortEnable=false",
         "maxHashSlotNum=1000", "maxIndexNum=4000")  # fmt: skip
_SLAVE_LINE = re.compile(rb"slave 1 of broker \S+ listening on .*, advertised as ([\d.]+:\d+)")
_BROKER_LINE = re.compile(rb"broker \S+ listening on .*, advertised as ([\d.]+:\d+)")


@pytest.fixture
async def rc() -> AsyncIterator[RemotingClient]:
    client = RemotingClient()
    yield client
    await client.close()


async def max_offset(rc: RemotingClient, addr: str) -> int:
    resp = await Wire(rc, addr).call(RequestCode.GET_BROKER_RUNTIME_INFO)
    assert resp.code == ResponseCode.SUCCESS
    return int(fastjson.loads(resp.body)["table"]["commitLogMaxOffset"])


async def synced(rc: RemotingClient, master: str, slave: str, timeout: float = 30) -> int:
    async with asyncio.timeout(timeout):
        while True:
            m, s = await max_offset(rc, master), await max_offset(rc, slave)
            if m == s > 0:
                return m
            await asyncio.sleep(0.05)


async def load(rc: RemotingClient, addr: str, n: int, start: int = 0) -> None:
    wire = Wire(rc, addr)
    for i in range(start, start + n):
        resp = await wire.send("TProc", b"p%05d" % i * (1 + i % 40), queue_id=i % 4, props={"KEYS": f"k{i}"})
        assert resp.code == ResponseCode.SUCCESS


def same_files(a: Path, b: Path, subs: tuple[str, ...] = ("commitlog", "consumequeue", "index")) -> None:
    for sub in subs:
        mine = [p.read_bytes() for p in sorted((a / sub).rglob("*")) if p.is_file()]
        theirs = [p.read_bytes() for p in sorted((b / sub).rglob("*")) if p.is_file()]
        assert mine and mine == theirs, f"{sub} differs"


async def test_standalone_with_two_replicas(tmp_path: Path, rc: RemotingClient) -> None:
    proc = await StandaloneProcess.start(tmp_path, *SMALL, "--replicas", "2")
    try:
        assert proc.proc.stdout is not None
        line = await asyncio.wait_for(proc.proc.stdout.readline(), 30)
        m = _SLAVE_LINE.search(line)
        assert m is not None, line
        slave = m.group(1).decode()
        await load(rc, proc.broker_addr, 300)
        top = await synced(rc, proc.broker_addr, slave)
        assert top > 65536  # two commit-log files
        refused = await Wire(rc, slave).send("TProc", b"x")
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
    finally:
        assert await proc.stop() == 0
    same_files(tmp_path / "store", tmp_path / "store-slave1")


async def start_slave(store: Path, namesrv: str) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "--log-level", "WARNING", "broker", "-n", namesrv, "listenPort=0",
        "listenHost=127.0.0.1", "brokerIP1=127.0.0.1", "brokerRole=SLAVE", "brokerId=1",
        f"storePathRootDir={store}", *SMALL, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        m = _BROKER_LINE.search(line)
        assert m is not None, line
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
    return proc, m.group(1).decode()


async def test_a_slave_killed_with_minus_9_resumes_from_its_own_end(tmp_path: Path, rc: RemotingClient) -> None:
    master = await StandaloneProcess.start(tmp_path / "m", *SMALL)
    slave_proc: asyncio.subprocess.Process | None = None
    try:
        slave_proc, slave = await start_slave(tmp_path / "s", master.namesrv_addr)
        await load(rc, master.broker_addr, 200)
        first = await synced(rc, master.broker_addr, slave)
        for round_ in range(2):
            slave_proc.kill()  # -9: no final flush, the abort marker stays
            await slave_proc.wait()
            await load(rc, master.broker_addr, 100, start=1000 * (round_ + 1))
            slave_proc, slave = await start_slave(tmp_path / "s", master.namesrv_addr)
            assert await synced(rc, master.broker_addr, slave) > first
        slave_proc.terminate()
        assert await slave_proc.wait() == 0
    finally:
        if slave_proc is not None and slave_proc.returncode is None:
            slave_proc.kill()
            await slave_proc.wait()
        assert await master.stop() == 0
    # After a crash the store indexes the last indexed message again (it cannot know whether all of its keys
    # reached the file), so the index may hold one duplicate entry: the same answers, not the same bytes.
    same_files(tmp_path / "m" / "store", tmp_path / "s", ("commitlog", "consumequeue"))
    answers = []
    for root in (tmp_path / "m" / "store", tmp_path / "s"):
        cfg = BrokerConfig.from_mapping(dict(kv.split("=", 1) for kv in SMALL) | {"storePathRootDir": str(root)})
        with MessageStore(store_config_from(cfg)) as store:
            answers.append([sorted(m.commit_log_offset for m in store.query_message("TProc", f"k{i}", 32, 0, 2**62))
                            for i in (0, 7, 199, 1000, 1099, 2050)])  # fmt: skip
    assert answers[0] == answers[1] and all(answers[0])
