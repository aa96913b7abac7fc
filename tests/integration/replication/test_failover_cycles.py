"""The Done-when test of automatic failover: a SYNC_MASTER and its slave in 5.x controller mode (the controller
embedded in the name server), each a separate process. 20 times: the master is killed with -9 under load from
the rocketq producer, the slave is elected, the old master restarts, cuts what its successor never had and
rejoins as a slave. Afterwards every key answered SEND_OK is read back from the last master, and a rocketq push
consumer running throughout has received every one."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.client import ClientConfig, ConsumeFromWhere, MessageExt, PushConsumer
from rocketq.testing.failover import run_cycles, summary
from rocketq.testing.procs import ControllerGroup

CYCLES = int(os.environ.get("ROCKETQ_FAILOVER_CYCLES", "20"))


@pytest.fixture
async def group(tmp_path: Path) -> AsyncIterator[ControllerGroup]:
    g = ControllerGroup(tmp_path)
    try:
        await g.start()
        yield g
    finally:
        await g.stop()


async def test_kill_9_the_master_20_times_and_lose_no_acknowledged_message(group: ControllerGroup) -> None:
    # a rocketq push consumer reads through every failover too (from the first offset: a new master may not
    # know the group's committed offset, and re-reading is allowed)
    got: set[str] = set()

    def listener(msgs: list[MessageExt], _context: object) -> None:
        got.update(m.body.decode() for m in msgs)

    consumer = PushConsumer("fo-consumer", consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                            config=ClientConfig(namesrv_addr=group.namesrv.addr, poll_name_server_interval=0.2,
                                                heartbeat_broker_interval=0.5),
                            rebalance_interval=1, broker_suspend_max_time=1)  # fmt: skip
    consumer.subscribe("TFailover", "*")
    consumer.register_message_listener(listener)
    await consumer.start()
    try:
        report = await run_cycles(group, CYCLES, topic="TFailover", senders=4, pause=0.03)
        async with asyncio.timeout(60):
            while not report.acked <= got:
                await asyncio.sleep(0.1)
    finally:
        await consumer.shutdown()
    print(f"\n{summary(report.cycles)}; {len(report.acked)} acknowledged, {report.not_acked} not, "
          f"{report.stored} stored")  # fmt: skip
    assert len(report.cycles) == CYCLES
    assert len({c.master_epoch for c in report.cycles}) == CYCLES  # a new master epoch every time
    assert len(report.acked) > 20 * CYCLES
    assert report.lost == set(), f"{len(report.lost)} acknowledged keys lost: {sorted(report.lost)[:10]}"
    # every old master cut what its successor never had: the two commit logs are the same bytes
    logs = [[p.read_bytes() for p in sorted((b.store / "commitlog").iterdir())] for b in group.brokers]
    assert logs[0] and logs[0] == logs[1]
