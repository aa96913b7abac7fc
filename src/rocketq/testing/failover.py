"""Kill -9 cycles of a controller-mode group under load from the rocketq producer, and the read-back of every
acknowledged key (the failover test and ``benchmarks/failover_bench.py`` share it).

One cycle: wait until the in-sync set holds every replica, ``kill -9`` the master, time the controller's
election and the producer's first acknowledged send after the kill, start the killed broker again (it cuts
what its successor never had and follows it). At the end every key answered SEND_OK is read back from the
last master's consume queues.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from rocketq.client import Message, Producer, SendStatus
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol import fastjson
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.replication.controller.client import ControllerClient, MasterInfo
from rocketq.testing.procs import BrokerProcess, ControllerGroup
from rocketq.testing.wire import Wire, records

log = logging.getLogger(__name__)

QUEUES = 4


@dataclass(slots=True)
class Cycle:
    elected_s: float  # kill → the controller names another master
    first_send_s: float  # kill → the producer's first SEND_OK sent after the kill
    master_epoch: int


@dataclass(slots=True)
class FailoverReport:
    cycles: list[Cycle] = field(default_factory=list)
    acked: set[str] = field(default_factory=set)
    not_acked: int = 0  # answered with another status (stored on the master only) or failed
    lost: set[str] = field(default_factory=set)  # acknowledged, not found afterwards
    stored: int = 0


class _Load:
    """``senders`` tasks sending unique keys; SEND_OK keys are kept with the time of their answer."""

    def __init__(self, producer: Producer, topic: str, senders: int, pause: float) -> None:
        self.producer = producer
        self.topic = topic
        self.acked: set[str] = set()
        self.last_ok = 0.0
        self.not_acked = 0
        self._sent_after: float | None = None
        self.first_ok_after: float | None = None
        self.going = asyncio.Event()
        self.going.set()
        self._tasks = [asyncio.create_task(self._run(i, pause)) for i in range(senders)]

    def watch_from(self, t: float) -> None:
        """Record the answer time of the first SEND_OK for a send started at or after ``t``."""
        self._sent_after, self.first_ok_after = t, None

    async def _run(self, n: int, pause: float) -> None:
        loop = asyncio.get_running_loop()
        i = 0
        while True:
            await self.going.wait()
            key = f"k{n}-{i}"
            i += 1
            started = loop.time()
            try:
                result = await self.producer.send(Message(self.topic, key.encode(), keys=[key]))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the master is gone: the route moves on its next refresh
                log.debug("failover.send_failed key=%s: %s", key, exc)
                self.not_acked += 1
                await asyncio.sleep(0.05)
                continue
            if result.status is SendStatus.SEND_OK:
                self.acked.add(key)
                now = loop.time()
                self.last_ok = now
                if self._sent_after is not None and started >= self._sent_after and self.first_ok_after is None:
                    self.first_ok_after = now
            else:
                self.not_acked += 1
            await asyncio.sleep(pause)

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(BaseException):
                await t


async def _until(probe: Callable[[], Awaitable[bool]], timeout: float, what: str, step: float = 0.02) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not await probe():
                await asyncio.sleep(step)
    except TimeoutError:
        raise TimeoutError(f"timed out after {timeout}s waiting for {what}") from None


async def _info(ctl: ControllerClient, name: str) -> MasterInfo | None:
    try:
        return await ctl.replica_info(name)
    except Exception:  # the controller is busy or the group is not known yet
        return None


async def _create_topic(rc: RemotingClient, addrs: list[str], topic: str) -> None:
    ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(QUEUES), "writeQueueNums": str(QUEUES),
           "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}  # fmt: skip
    for addr in addrs:  # on the master (a slave refuses; a new master creates it at the first send to it)
        resp = await rc.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, dict(ext)))
        if resp.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"topic creation on {addr}: {resp.code} {resp.remark}")


async def _max_offset(rc: RemotingClient, addr: str) -> int:
    resp = await Wire(rc, addr).call(RequestCode.GET_BROKER_RUNTIME_INFO)
    return int(fastjson.loads(resp.body)["table"]["commitLogMaxOffset"]) if resp.code == 0 else -1


async def read_back(rc: RemotingClient, addr: str, topic: str) -> set[str]:
    """Every key in ``topic``'s queues on ``addr``, pulled from offset 0 to the end."""
    keys: set[str] = set()
    wire = Wire(rc, addr)
    for q in range(16):  # every queue a master may have made (auto-created ones included)
        offset = 0
        for _ in range(1_000_000):  # bounded: each round advances or ends
            resp = await wire.pull(topic, q, offset, max_nums=32)
            if resp.code != ResponseCode.SUCCESS:
                break
            found = records(resp)
            if not found:
                break
            keys.update(r.body.decode() for r in found)
            offset = int(resp.ext_fields["nextBeginOffset"])
    return keys


async def run_cycles(
    group: ControllerGroup, cycles: int, *, topic: str = "TFailover", senders: int = 4, pause: float = 0.01,
    step_timeout: float = 30.0, on_cycle: Callable[[int, Cycle], None] | None = None,
) -> FailoverReport:  # fmt: skip
    """``cycles`` kill -9 failovers of ``group`` (started) under load; the report's ``lost`` must be empty."""
    ns = group.namesrv.addr
    everyone = frozenset(range(1, group.replicas + 1))
    rc = RemotingClient()
    ctl = ControllerClient(rc, ns)
    report = FailoverReport()
    # the client's own defaults: the 30 s route poll, and a refresh as soon as a connection to a broker fails
    producer = Producer("fo-producer", namesrv_addr=ns, send_msg_timeout=2.0)
    load: _Load | None = None
    current: MasterInfo | None = None

    async def all_in_sync() -> bool:
        nonlocal current
        current = await _info(ctl, group.broker_name)
        return current is not None and current.master_address is not None and current.sync_state_set == everyone

    try:
        await _until(all_in_sync, step_timeout, "the in-sync set to hold every replica")
        assert current is not None and current.master_address is not None
        await _create_topic(rc, [current.master_address], topic)
        await producer.start()
        load = _Load(producer, topic, senders, pause)
        for c in range(cycles):
            # the restarted broker rejoins the in-sync set under the load (a candidate once it caught up to within
            # a report, a member once it holds what the master acknowledged alone: docs/replication.md)
            await _until(all_in_sync, step_timeout, f"cycle {c}: every replica in the in-sync set")
            assert current is not None
            cycle, victim = await _one_cycle(group, ctl, load, current, c, step_timeout)
            report.cycles.append(cycle)
            if on_cycle is not None:
                on_cycle(c, cycle)
            await victim.start()
        await load.stop()
        await _until(all_in_sync, step_timeout, "the last old master back in the in-sync set")
        assert current is not None and current.master_address is not None
        master = current.master_address

        async def caught_up() -> bool:
            tops = [await _max_offset(rc, b.addr) for b in group.brokers]
            return len(set(tops)) == 1 and tops[0] > 0

        await _until(caught_up, step_timeout, "every replica at the master's end")
        stored = await read_back(rc, master, topic)
        report.acked, report.not_acked = load.acked, load.not_acked
        report.stored = len(stored)
        report.lost = load.acked - stored
        return report
    finally:
        if load is not None:
            await load.stop()
        await producer.shutdown()
        await rc.close()


async def _one_cycle(
    group: ControllerGroup, ctl: ControllerClient, load: _Load, current: MasterInfo, c: int, step_timeout: float
) -> tuple[Cycle, BrokerProcess]:
    """Kill the master under load; wait for the election and the producer's first SEND_OK after the kill."""
    loop = asyncio.get_running_loop()
    base = len(load.acked)
    await _until(_const(lambda: len(load.acked) >= base + 20), step_timeout, f"cycle {c}: load")
    victim = group.by_addr(current.master_address)
    assert victim is not None, current
    epoch = current.master_epoch
    killed = loop.time()
    load.watch_from(killed)
    await victim.kill9()
    elected = 0.0

    async def new_master() -> bool:
        nonlocal elected
        info = await _info(ctl, group.broker_name)
        if info is not None and info.master_epoch > epoch and info.master_address not in (None, victim.addr):
            elected = loop.time()
            return True
        return False

    await _until(new_master, step_timeout, f"cycle {c}: an election")
    await _until(_const(lambda: load.first_ok_after is not None), step_timeout, f"cycle {c}: a send")
    assert load.first_ok_after is not None
    return Cycle(elected - killed, load.first_ok_after - killed, epoch + 1), victim


def _const(predicate: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return predicate()

    return probe


def summary(cycles: list[Cycle]) -> str:
    if not cycles:
        return "no cycles"
    el = sorted(c.elected_s for c in cycles)
    fs = sorted(c.first_send_s for c in cycles)
    return (f"{len(cycles)} cycles: elected median {el[len(el) // 2]:.2f}s max {el[-1]:.2f}s; first SEND_OK median "
            f"{fs[len(fs) // 2]:.2f}s max {fs[-1]:.2f}s")  # fmt: skip
