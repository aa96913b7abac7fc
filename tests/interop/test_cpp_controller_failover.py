"""The Apache C++ client across a 5.x controller failover: a SYNC_MASTER + slave in controller mode (processes),
the master killed with SIGKILL while the C++ producer sends. The slave is elected at once; the C++ producer
reaches it when its own route refresh (every 30 s, pollNameServerInterval) names the new master, and the C++
push consumer gets every acknowledged key, the ones sent before the kill included (from the new master)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cppharness import Driver, start_driver, wait_until  # type: ignore[import-not-found]

from rocketq.remoting.client import RemotingClient
from rocketq.replication.controller.client import ControllerClient
from rocketq.testing.procs import ControllerGroup

TOPIC = "CppCtlFailover"


@pytest.fixture
async def group(tmp_path: Path) -> AsyncIterator[ControllerGroup]:
    g = ControllerGroup(tmp_path / "group")
    try:
        await g.start()
        yield g
    finally:
        await g.stop()


async def test_cpp_client_across_a_controller_failover(
    group: ControllerGroup, drivers: list[Driver], tmp_path: Path
) -> None:
    ns = group.namesrv.addr
    rc = RemotingClient()
    ctl = ControllerClient(rc, ns)
    try:
        info = await ctl.replica_info(group.broker_name)
        async with asyncio.timeout(30):
            while info.sync_state_set != frozenset({1, 2}):
                await asyncio.sleep(0.05)
                info = await ctl.replica_info(group.broker_name)
        producer = await start_driver(
            "produce", "--topic", TOPIC, "--group", "PG_CPP_CTL", "--count", "1200", "--mode", "sync",
            "--keys-prefix", "c-", "--interval-ms", "50", "--continue-on-error", "--timeout", "100",
            "--send-timeout-ms", "1000", namesrv=ns, home=tmp_path / "p",
        )  # fmt: skip
        drivers.append(producer)
        # the topic is created by the first send (autoCreateTopicEnable on the replicas)
        await wait_until(lambda: len(producer.messages) >= 40, 60, "sends before the kill")
        victim = group.by_addr(info.master_address)
        assert victim is not None
        killed, before = time.monotonic(), len(producer.lines)
        await victim.kill9()
        async with asyncio.timeout(20):
            while (await ctl.replica_info(group.broker_name)).master_address in (None, victim.addr):
                await asyncio.sleep(0.02)
        elected = time.monotonic() - killed
        # the first acknowledged send after the kill: when the C++ client's own route refresh moved it
        await wait_until(lambda: any(m.get("status") == "OK" for m in producer.lines[before:] if "msg_id" in m),
                         60, "a C++ send acknowledged by the new master")  # fmt: skip
        moved = time.monotonic() - killed
        await victim.start()  # the old master rejoins as a slave
        await wait_until(lambda: sum(m.get("status") == "OK" for m in producer.lines[before:]) >= 40, 60,
                         "sends after the move")  # fmt: skip
        await producer.kill()
    finally:
        await rc.close()
    acked = {m["keys"] for m in producer.messages if m["status"] == "OK"}
    consumer = await start_driver(
        "push-consume", "--topic", TOPIC, "--group", "G_CPP_CTL", "--expect", str(len(acked)), "--timeout", "60",
        namesrv=ns, home=tmp_path / "c",
    )  # fmt: skip
    drivers.append(consumer)
    await wait_until(lambda: acked <= {m.get("keys") for m in consumer.messages}, 60, "every acknowledged key")
    print(f"\nC++ client across a controller failover: elected {elected:.2f}s after the kill, first C++ SEND_OK "
          f"{moved:.1f}s after it; {len(acked)} acknowledged, {len(producer.errors())} failed sends")  # fmt: skip
