"""What a SYNC_FLUSH broker acknowledged survives kill -9 of the real process."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from rocketq.codes import RequestCode
from rocketq.remoting.client import RemotingClient
from rocketq.testing.process import StandaloneProcess
from rocketq.testing.wire import Wire, records

pytestmark = pytest.mark.crash

SYNC = ("flushDiskType=SYNC_FLUSH", "mappedFileSizeCommitLog=1048576", "mappedFileSizeConsumeQueue=2000")


async def start_standalone(data: Path, *settings: str) -> tuple[asyncio.subprocess.Process, str]:
    server = await StandaloneProcess.start(data, *SYNC, *settings)
    return server.proc, server.broker_addr


async def test_acknowledged_messages_survive_sigkill(tmp_path: Path) -> None:
    acked: dict[int, bytes] = {}
    sent: set[bytes] = set()
    twice: list[int] = []  # queue offsets acknowledged to two sends (gather keeps a task's assertion quiet)
    for cycle in range(4):  # three cycles of sends and kills, then one more start that only checks
        proc, addr = await start_standalone(tmp_path)
        rc = RemotingClient()
        try:
            wire = Wire(rc, addr)
            # Everything acknowledged in earlier cycles is still there, byte for byte.
            got: dict[int, bytes] = {}
            offset = 0
            while True:
                resp = await wire.pull("Durable", 0, offset, max_nums=32)
                if resp.code != 0:
                    break
                for m in records(resp):
                    got[m.queue_offset] = m.body
                offset = int(resp.ext_fields["nextBeginOffset"])
            lost = sorted(o for o, body in acked.items() if got.get(o) != body)
            assert not lost, f"cycle {cycle}: lost or changed {lost[:5]}"
            # A message flushed just before the kill may be stored without its answer having
            # left (the producer would retry it): allowed, but only whole messages that were sent.
            assert set(got.values()) <= sent, f"cycle {cycle}: stored a body nobody sent"
            assert len(set(got.values())) == len(got), f"cycle {cycle}: a message stored twice"
            assert sorted(got) == list(range(len(got))), f"cycle {cycle}: a hole in the queue"
            if cycle == 3:
                break

            # Send concurrently (group commit) and kill -9 while sends are in flight.
            async def send(i: int, wire: Wire = wire, cycle: int = cycle) -> None:
                body = f"cycle{cycle}-msg{i}-".encode() * 20
                sent.add(body)
                resp = await wire.send("Durable", body, queue_id=0)
                if resp.code == 0:
                    offset = int(resp.ext_fields["queueOffset"])
                    if offset in acked:
                        twice.append(offset)
                    acked[offset] = body

            tasks = [asyncio.create_task(send(i)) for i in range(300)]
            await asyncio.sleep(0.3)
            proc.send_signal(signal.SIGKILL)
            await asyncio.gather(*tasks, return_exceptions=True)
            await proc.wait()
            assert not twice, f"cycle {cycle}: offsets acknowledged twice {twice[:5]}"
        finally:
            await rc.close()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert acked  # the loop really acknowledged messages before each kill


async def test_periodically_persisted_offsets_survive_sigkill(tmp_path: Path) -> None:
    """The consumer-offset file is written off the event loop every interval; what it wrote survives kill -9."""
    q = {"consumerGroup": "gk", "topic": "Durable", "queueId": "0"}
    server = await StandaloneProcess.start(tmp_path, *SYNC, "consumerOffsetPersistIntervalMills=100")
    rc = RemotingClient()
    try:
        wire = Wire(rc, server.broker_addr)
        for i in range(3):
            assert (await wire.send("Durable", f"m{i}".encode(), queue_id=0)).code == 0
        assert (await wire.call(RequestCode.UPDATE_CONSUMER_OFFSET, {**q, "commitOffset": "2"})).code == 0
        offsets = tmp_path / "store" / "config" / "consumerOffset.json"
        async with asyncio.timeout(10):  # written by the periodic persister, not at shutdown
            while not (offsets.exists() and b'"Durable@gk"' in offsets.read_bytes()):
                await asyncio.sleep(0.05)
        server.kill9()
        await server.proc.wait()
    finally:
        await rc.close()
        server.kill9()

    server = await StandaloneProcess.start(tmp_path, *SYNC)
    rc = RemotingClient()
    try:
        resp = await Wire(rc, server.broker_addr).call(RequestCode.QUERY_CONSUMER_OFFSET, q)
        assert resp.code == 0 and resp.ext_fields["offset"] == "2"
    finally:
        await rc.close()
        await server.stop()
