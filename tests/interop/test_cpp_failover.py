"""The Apache C++ client across a master kill (static 4.9 mode): group A is a SYNC_MASTER with a slave, group B a
master alone, each a separate ``rocketq`` process. A's master is killed with SIGKILL while the C++ producer
sends: the producer keeps sending (its retries move to B at once; its own route refresh is every 30 s), the C++
push consumer keeps consuming B, and once A's master is back every acknowledged message has been consumed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cppharness import Driver, start_driver, wait_until  # type: ignore[import-not-found]

from rocketq.codes import RequestCode
from rocketq.protocol import fastjson
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.testing.procs import BrokerProcess, NamesrvProcess

TOPIC = "CppFailover"
N = 150
INTERVAL_MS = 30  # ~4.5 s of sends
COMMON = ("registerNameServerPeriod=1000", "haSendHeartbeatInterval=500", "haReconnectInterval=200",
          "mappedFileSizeCommitLog=1048576")  # fmt: skip


class Groups:
    def __init__(self, ns: NamesrvProcess, a0: BrokerProcess, a1: BrokerProcess, b0: BrokerProcess) -> None:
        self.ns, self.a0, self.a1, self.b0 = ns, a0, a1, b0

    async def stop(self) -> None:
        for p in (self.a1, self.a0, self.b0, self.ns):
            await p.stop()


@pytest.fixture
async def groups(tmp_path: Path) -> AsyncIterator[Groups]:
    ns = NamesrvProcess(tmp_path / "ns", log_path=tmp_path / "ns.log")
    addr = await ns.start()
    a0 = BrokerProcess(tmp_path / "a0", addr, "brokerName=fo-a", "brokerRole=SYNC_MASTER", *COMMON,
                       log_path=tmp_path / "a0.log")  # fmt: skip
    a1 = BrokerProcess(tmp_path / "a1", addr, "brokerName=fo-a", "brokerRole=SLAVE", "brokerId=1", *COMMON,
                       log_path=tmp_path / "a1.log")  # fmt: skip
    b0 = BrokerProcess(tmp_path / "b0", addr, "brokerName=fo-b", *COMMON, log_path=tmp_path / "b0.log")
    g = Groups(ns, a0, a1, b0)
    try:
        await asyncio.gather(a0.start(), b0.start())
        await a1.start()
        yield g
    finally:
        await g.stop()


async def create_topic_on(rc: RemotingClient, brokers: list[str], ns: str, topic: str) -> None:
    ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
           "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}  # fmt: skip
    for b in brokers:
        resp = await rc.invoke(b, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, dict(ext)))
        assert resp.code == 0, resp.remark
    async with asyncio.timeout(20):
        while True:
            resp = await rc.invoke(ns, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
            if resp.code == 0 and len(fastjson.loads(resp.body)["brokerDatas"]) == len(brokers):
                return
            await asyncio.sleep(0.1)


async def test_cpp_client_sends_and_consumes_across_a_master_kill(
    groups: Groups, drivers: list[Driver], tmp_path: Path
) -> None:
    ns = groups.ns.addr
    rc = RemotingClient()
    try:
        await create_topic_on(rc, [groups.a0.addr, groups.b0.addr], ns, TOPIC)
    finally:
        await rc.close()
    consumer = await start_driver(
        "push-consume", "--topic", TOPIC, "--group", "G_CPP_FO", "--expect", "0", "--timeout", "90",
        namesrv=ns, home=tmp_path / "c",
    )  # fmt: skip
    drivers.append(consumer)
    await asyncio.wait_for(consumer.started.wait(), 30)
    producer = await start_driver(
        "produce", "--topic", TOPIC, "--group", "PG_CPP_FO", "--count", str(N), "--mode", "sync",
        "--keys-prefix", "fo-", "--interval-ms", str(INTERVAL_MS), "--continue-on-error", "--timeout", "90",
        "--send-timeout-ms", "3000", namesrv=ns, home=tmp_path / "p",
    )  # fmt: skip
    drivers.append(producer)
    await wait_until(lambda: len(producer.messages) >= N // 3, 60, "a third of the sends")
    killed_at, acked_before, consumed_before = time.monotonic(), len(producer.messages), len(consumer.messages)
    await groups.a0.kill9()
    # the producer keeps going: sends after the kill are acknowledged (by B)
    await wait_until(lambda: len(producer.messages) >= acked_before + 20, 30, "sends after the kill")
    first_after = time.monotonic() - killed_at
    assert await producer.wait(120) == 0 or producer.errors(), "the producer ended without a result"
    acked = {m["keys"] for m in producer.messages if m["status"] == "OK"}
    failed = producer.errors()
    assert len(producer.messages) + len(failed) == N
    assert len(acked) >= N - 5, failed  # a send caught by the kill may fail; the rest move to B
    # the consumer kept consuming while A's master was down (B's queues)
    consumed_during = len(consumer.messages) - consumed_before
    assert consumed_during > 0
    await groups.a0.start()  # A's master back: its unconsumed backlog is delivered
    await wait_until(lambda: acked <= {m.get("keys") for m in consumer.messages}, 90, "every acknowledged key")
    print(f"\nC++ client across a master kill: first {20} sends after the kill within {first_after:.2f}s, "
          f"{len(failed)} failed sends, {consumed_during} consumed while A's master was down")  # fmt: skip
