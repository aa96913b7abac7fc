"""The Java 4.9 client keeps producing and consuming across a master's kill -9, with its slave reads and offset
commits to the slave.

Shape: a rocketq name server, broker group ``broker-a`` = a master in its own process (``rocketq broker``, so
the kill is a real SIGKILL) and an in-process slave, and a master-only group ``broker-b`` in process. The driver
(scenario ``failover``, tests/interop/java/src/FailoverScenario.java) lowers the Java client's
``pollNameServerInterval`` to 1 s (Java's default is 30 s; the rocketq client needs no such setting, it
refreshes on a connection failure). It sends and consumes, suspends its consumer and sends a backlog, then
waits while the test kills ``broker-a``'s master once the slave holds that backlog; afterwards every send must
succeed (on ``broker-b``), every message — ``broker-a``'s backlog from the slave — must be consumed, and the
consumer's offsets for ``broker-a``'s queues must be committed to the slave.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from javaharness import java_cp

from rocketq.client import AdminClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.java import DRIVER_MAIN, TOOL_HEAP, java_env
from rocketq.testing.process import start_broker_process

TOPIC = "TJavaFailover"
GROUP = "cg-java-failover"
COUNT = 30
BROKER = {"slaveSyncIntervalMills": 300, "haSendHeartbeatInterval": 200, "haReconnectInterval": 100}


async def until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.05)


async def start_master_process(store: Path, namesrv: str) -> tuple[asyncio.subprocess.Process, str]:
    return await start_broker_process(
        namesrv, "brokerName=broker-a", f"storePathRootDir={store}", "registerNameServerPeriod=1000",
        "fastListenPortEnable=false", "mappedFileSizeCommitLog=4194304", "mappedFileSizeConsumeQueue=20000",
        "maxHashSlotNum=1000", "maxIndexNum=4000", "haSendHeartbeatInterval=200",
    )  # fmt: skip


async def test_the_java_client_keeps_producing_and_consuming_across_a_master_kill(tmp_path: Path) -> None:
    async with EmbeddedCluster(tmp_path, brokers=0, **BROKER) as cluster:
        master, master_addr = await start_master_process(tmp_path / "master-a", cluster.namesrv_addr)
        driver: asyncio.subprocess.Process | None = None
        try:
            await until(lambda: cluster.namesrv is not None
                        and "broker-a" in cluster.namesrv.route_info.broker_addr_table)  # fmt: skip
            slave = await cluster.start_slave(0)
            broker_b = await cluster.start_broker(1)
            async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
                for addr in (master_addr, broker_b.config.broker_addr):
                    await admin.create_topic(TOPIC, broker_addr=addr, read_queue_nums=2, write_queue_nums=2)
            await until(lambda: slave.topics.get(TOPIC) is not None)  # SlaveSynchronize copied it

            ready, go = tmp_path / "ready", tmp_path / "go"
            (tmp_path / "java-home").mkdir()
            driver = await asyncio.create_subprocess_exec(
                "java", *TOOL_HEAP, f"-Duser.home={tmp_path / 'java-home'}",
                f"-Drocketmq.client.logRoot={tmp_path / 'java-home' / 'logs'}", "-cp", java_cp(), DRIVER_MAIN,
                "failover", "--namesrv", cluster.namesrv_addr, "--topic", TOPIC, "--group", GROUP,
                "--count", str(COUNT), "--ready-file", str(ready), "--go-file", str(go), "--poll-ms", "1000",
                "--timeout", "90", "--linger-ms", "2500",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=java_env(None),
                start_new_session=True,
            )  # fmt: skip
            communicate = asyncio.ensure_future(driver.communicate())
            await until(lambda: ready.exists() or communicate.done(), timeout=90)
            assert ready.exists(), "the driver ended before its backlog was sent"
            # the slave holds broker-a's backlog before its master dies
            async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
                a_sent = {s.message_queue.queue_id: s.max_offset for s in await admin.topic_status(TOPIC)
                          if s.message_queue.broker_name == "broker-a"}  # fmt: skip
            assert sum(a_sent.values()) > 0
            await until(lambda: all(slave.store.get_max_offset_in_queue(TOPIC, q) >= n for q, n in a_sent.items()))

            master.send_signal(signal.SIGKILL)
            await master.wait()
            # the name server drops the dead master when its connection closes
            await until(lambda: 0 not in cluster.namesrv.route_info.broker_addr_table["broker-a"].broker_addrs)
            go.touch()
            async with asyncio.timeout(120):
                out, err = await communicate
            lines = [json.loads(x) for x in out.decode(errors="replace").splitlines() if x.startswith("{")]
            assert driver.returncode == 0, err.decode(errors="replace")[-3000:]
        finally:
            if driver is not None and driver.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    driver.send_signal(signal.SIGKILL)
                await driver.wait()
            if master.returncode is None:
                master.kill()
                await master.wait()

        sends = [x for x in lines if x.get("event") in ("sent", "send-error")]
        errors = [x for x in sends if x["event"] == "send-error"]
        assert not errors, errors[:3]
        by_phase = _by(sends, "mode")
        assert {p: len(v) for p, v in by_phase.items()} == {"a": COUNT, "b": COUNT, "c": COUNT}
        assert {x["brokerName"] for x in by_phase["c"]} == {"broker-b"}  # no master, no sends to broker-a
        received = {x["keys"] for x in lines if x.get("event") == "received"}
        assert received == {x["keys"] for x in sends}
        assert lines[-1].get("done") and lines[-1].get("complete"), lines[-1]
        # broker-a's backlog was read from the slave, and the consumer committed its offsets there, every
        # queue read to its end
        assert slave.store.stats_service.get_transferred > 0
        committed = slave.offsets.offsets_of(GROUP, TOPIC)
        for q in (0, 1):
            assert committed.get(q) == slave.store.get_max_offset_in_queue(TOPIC, q) > 0


def _by(rows: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(str(r[key]), []).append(r)
    return out


pytestmark = pytest.mark.java
