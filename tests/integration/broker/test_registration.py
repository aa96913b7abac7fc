"""A slave broker learns its master's addresses from the name server's REGISTER_BROKER answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketq.protocol.route import RegisterBrokerResult
from rocketq.testing import EmbeddedCluster


async def test_slave_reads_master_and_ha_address_from_the_answer(tmp_path: Path) -> None:
    async with EmbeddedCluster(tmp_path) as cluster:
        master = cluster.broker
        assert master.registration.last_result == RegisterBrokerResult()  # a master is told nothing

        cfg = cluster.broker_config(0)
        cfg.brokerId = 1
        cfg.brokerRole = "SLAVE"
        cfg.storePathRootDir = str(tmp_path / "broker-a-slave")
        slave = await cluster.start_broker(1, cfg)
        expected = RegisterBrokerResult(
            master_addr=master.config.broker_addr, ha_server_addr=f"127.0.0.1:{master.config.ha_port}"
        )
        assert slave.registration.last_result == expected

        seen: list[RegisterBrokerResult] = []
        slave.registration.on_result = seen.append
        slave.registration.kick()
        async with asyncio.timeout(10):
            while not seen:
                await asyncio.sleep(0.01)
        assert seen[0] == expected
