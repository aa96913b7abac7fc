"""The controller's state machine: registration, election rules, epochs, fencing, in-sync set changes,
heartbeat expiry (injected clock) and persistence across a restart."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from rocketq.codes import ControllerResponseCode as CRC
from rocketq.codes import ResponseCode
from rocketq.protocol.controller_headers import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    CleanBrokerDataRequestHeader,
    ElectMasterRequestHeader,
    GetNextBrokerIdRequestHeader,
    MasterInfoHeader,
    RegisterBrokerToControllerRequestHeader,
)
from rocketq.replication.controller.config import ControllerConfig
from rocketq.replication.controller.manager import decode_sync_state_set
from rocketq.replication.controller.service import Controller
from rocketq.replication.controller.state import ControllerState, ElectMaster, event_from_json, event_to_json
from rocketq.replication.controller.store import FileMetadataStore, MetadataStoreError

CLUSTER, GROUP = "C", "broker-a"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def addr(i: int) -> str:
    return f"10.0.0.{i}:10911"


async def join(c: Controller, broker_id: int) -> None:
    """What a broker does at start: next id, apply it, register, heartbeat."""
    nxt = c.next_broker_id(GetNextBrokerIdRequestHeader(cluster_name=CLUSTER, broker_name=GROUP))
    assert nxt.ok and nxt.header is not None
    assert nxt.header.to_ext()["nextBrokerId"] == str(broker_id)
    applied = await c.apply_broker_id(
        ApplyBrokerIdRequestHeader(
            cluster_name=CLUSTER,
            broker_name=GROUP,
            applied_broker_id=broker_id,
            register_check_code=f"{addr(broker_id)};{broker_id}",
        )
    )
    assert applied.ok, applied.remark
    reg = await c.register_broker(
        RegisterBrokerToControllerRequestHeader(
            cluster_name=CLUSTER, broker_name=GROUP, broker_id=broker_id, broker_address=addr(broker_id)
        )
    )
    assert reg.ok, reg.remark
    beat(c, broker_id)


def beat(c: Controller, broker_id: int, *, epoch: int = 0, max_offset: int = 0, priority: int = 0) -> None:
    d = c.heartbeat(
        BrokerHeartbeatRequestHeader(
            cluster_name=CLUSTER,
            broker_addr=addr(broker_id),
            broker_name=GROUP,
            broker_id=broker_id,
            epoch=epoch,
            max_offset=max_offset,
            heartbeat_timeout_mills=3000,
            election_priority=priority,
        )
    )
    assert d.ok


async def elect(
    c: Controller, broker_id: int | None, *, designate: bool = False
) -> tuple[int, MasterInfoHeader | None]:
    d = await c.elect_master(
        ElectMasterRequestHeader(
            cluster_name=CLUSTER, broker_name=GROUP, broker_id=broker_id, designate_elect=designate
        )
    )
    return d.code, d.header if isinstance(d.header, MasterInfoHeader) else None


async def alter(c: Controller, master: int, master_epoch: int, ids: set[int], set_epoch: int) -> int:
    d = await c.alter_sync_state_set(
        AlterSyncStateSetRequestHeader(broker_name=GROUP, master_broker_id=master, master_epoch=master_epoch),
        frozenset(ids),
        set_epoch,
    )
    return d.code


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def three(clock: Clock) -> Controller:
    """Brokers 1, 2, 3 registered and alive; 1 elected first; in-sync set {1, 2, 3}."""
    c = Controller(ControllerConfig(), clock=clock)
    for i in (1, 2, 3):
        await join(c, i)
    code, header = await elect(c, 1)
    assert code == ResponseCode.SUCCESS and header is not None and header.master_broker_id == 1
    assert await alter(c, 1, 1, {1, 2, 3}, 1) == ResponseCode.SUCCESS
    return c


def group(c: Controller):  # type: ignore[no-untyped-def]
    return c.state.groups[GROUP]


async def test_ids_are_assigned_from_one_and_a_taken_id_is_refused(clock: Clock) -> None:
    c = Controller(ControllerConfig(), clock=clock)
    await join(c, 1)
    await join(c, 2)
    taken = await c.apply_broker_id(
        ApplyBrokerIdRequestHeader(
            cluster_name=CLUSTER, broker_name=GROUP, applied_broker_id=2, register_check_code="10.9.9.9:1;5"
        )
    )
    assert taken.code == CRC.CONTROLLER_BROKER_ID_INVALID
    first_elsewhere = await c.apply_broker_id(
        ApplyBrokerIdRequestHeader(
            cluster_name=CLUSTER, broker_name="other", applied_broker_id=3, register_check_code="x:1;1"
        )
    )
    assert first_elsewhere.code == CRC.CONTROLLER_BROKER_ID_INVALID
    unknown = await c.register_broker(
        RegisterBrokerToControllerRequestHeader(
            cluster_name=CLUSTER, broker_name=GROUP, broker_id=9, broker_address="x:1"
        )
    )
    assert unknown.code == CRC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED


async def test_first_election_goes_to_the_asker_and_epochs_start_at_one(clock: Clock) -> None:
    c = Controller(ControllerConfig(), clock=clock)
    await join(c, 1)
    await join(c, 2)
    code, header = await elect(c, 2)
    assert code == ResponseCode.SUCCESS and header is not None
    assert (header.master_broker_id, header.master_address, header.master_epoch, header.sync_state_set_epoch) == (
        2,
        addr(2),
        1,
        1,
    )
    assert group(c).sync_state_set == {2}
    # asking again: the alive master stays, MASTER_STILL_EXIST with its epoch
    code, header = await elect(c, 1)
    assert code == CRC.CONTROLLER_MASTER_STILL_EXIST and header is not None and header.master_broker_id == 2
    assert group(c).master_epoch == 1


async def test_register_answers_the_alive_master(three: Controller, clock: Clock) -> None:
    d = await three.register_broker(
        RegisterBrokerToControllerRequestHeader(
            cluster_name=CLUSTER, broker_name=GROUP, broker_id=3, broker_address="10.0.0.33:10911"
        )
    )
    assert d.ok and d.header is not None
    assert d.header.to_ext() == {"clusterName": CLUSTER, "brokerName": GROUP, "masterBrokerId": "1",
                                 "masterAddress": addr(1), "masterEpoch": "1", "syncStateSetEpoch": "2"}  # fmt: skip
    assert group(three).addresses[3] == "10.0.0.33:10911"  # the address change is an event, applied


async def test_election_picks_from_the_in_sync_set_by_epoch_then_offset_then_priority(
    three: Controller, clock: Clock
) -> None:
    clock.now += 5
    beat(three, 2, epoch=1, max_offset=100, priority=5)
    beat(three, 3, epoch=1, max_offset=100, priority=1)
    await three.scan()  # 1 expired: the controller elects
    g = group(three)
    assert g.master_id == 3 and g.master_epoch == 2 and g.sync_state_set == {3} and g.sync_state_set_epoch == 3
    # a later election (3 dies, 2 ahead by offset) keeps increasing both epochs
    assert await alter(three, 3, 2, {2, 3}, 3) == ResponseCode.SUCCESS
    clock.now += 5
    beat(three, 2, epoch=1, max_offset=200)
    await three.scan()
    g = group(three)
    assert (g.master_id, g.master_epoch, g.sync_state_set, g.sync_state_set_epoch) == (2, 3, {2}, 5)


async def test_only_in_sync_replicas_are_elected_unless_unclean(clock: Clock) -> None:
    for unclean, expected in ((False, None), (True, 2)):
        c = Controller(ControllerConfig(enable_elect_unclean_master=unclean), clock=clock)
        await join(c, 1)
        await join(c, 2)
        assert (await elect(c, 1))[0] == ResponseCode.SUCCESS  # in-sync set {1}: 2 never caught up
        clock.now += 5
        beat(c, 2)
        decisions = await c.scan()
        assert len(decisions) == 1
        assert group(c).master_id == expected
        if expected is None:
            assert decisions[0].code == CRC.CONTROLLER_MASTER_NOT_AVAILABLE
            assert group(c).master_epoch == 2  # the loss of the master is recorded (fencing the old one)
            assert (await elect(c, 2))[0] == CRC.CONTROLLER_ELECT_MASTER_FAILED  # a broker's own ask fails too


async def test_a_stale_master_epoch_and_a_stale_set_epoch_are_fenced(three: Controller, clock: Clock) -> None:
    clock.now += 5
    beat(three, 2, max_offset=10)
    beat(three, 3)
    await three.scan()
    assert group(three).master_id == 2 and group(three).master_epoch == 2
    beat(three, 1)  # the old master comes back and still believes it leads at epoch 1
    assert await alter(three, 1, 1, {1, 2}, 1) == CRC.CONTROLLER_INVALID_MASTER
    assert await alter(three, 2, 1, {1, 2}, 3) == CRC.CONTROLLER_FENCED_MASTER_EPOCH
    assert await alter(three, 2, 2, {1, 2}, 2) == CRC.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
    assert await alter(three, 2, 2, {1, 2}, 3) == ResponseCode.SUCCESS
    assert group(three).sync_state_set == {1, 2} and group(three).sync_state_set_epoch == 4


async def test_in_sync_set_changes_are_checked(three: Controller, clock: Clock) -> None:
    assert await alter(three, 1, 1, {1, 2, 3}, 2) == CRC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED  # unchanged
    assert await alter(three, 1, 1, {2, 3}, 2) == CRC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED  # without the master
    assert await alter(three, 1, 1, {1, 7}, 2) == CRC.CONTROLLER_INVALID_REPLICAS
    clock.now += 5
    beat(three, 1)
    beat(three, 2)
    assert await alter(three, 1, 1, {1, 3}, 2) == CRC.CONTROLLER_BROKER_NOT_ALIVE
    d = await three.alter_sync_state_set(
        AlterSyncStateSetRequestHeader(broker_name=GROUP, master_broker_id=1, master_epoch=1), frozenset({1, 2}), 2
    )
    assert d.ok and d.header is not None and d.header.to_ext() == {"newSyncStateSetEpoch": "3"}
    assert decode_sync_state_set(d.body) == (frozenset({1, 2}), 3)


async def test_heartbeat_expiry_triggers_an_election_only_when_the_master_is_dead(
    three: Controller, clock: Clock
) -> None:
    clock.now += 2.9  # inside the 3 s timeout: nothing happens
    assert await three.scan() == [] and group(three).master_id == 1
    clock.now += 0.2
    beat(three, 1)
    beat(three, 3)
    assert await three.scan() == [] and group(three).master_id == 1  # 2 expired, but 2 was no master
    assert not three.liveness.is_alive(CLUSTER, GROUP, 2)
    clock.now += 3.1
    beat(three, 3)
    [decision] = await three.scan()
    assert decision.ok and group(three).master_id == 3
    assert [n.master_id for n in three.notices] == [1, 3]  # first election, then the failover
    assert three.notices[-1].member_addresses == (addr(1), addr(2), addr(3))


async def test_designated_election_switches_to_an_alive_in_sync_replica(three: Controller) -> None:
    code, header = await elect(three, 2, designate=True)
    assert code == ResponseCode.SUCCESS and header is not None and header.master_broker_id == 2
    assert group(three).master_epoch == 2
    code, _ = await elect(three, 3, designate=True)  # 3 left the in-sync set at the switch
    assert code == CRC.CONTROLLER_ELECT_MASTER_FAILED


async def test_clean_broker_data(three: Controller, clock: Clock) -> None:
    alive = await three.clean_broker_data(CleanBrokerDataRequestHeader(broker_name=GROUP, broker_id_set_to_clean="2"))
    assert alive.code == CRC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    clock.now += 5
    beat(three, 1)
    beat(three, 3)
    await three.scan()
    gone = await three.clean_broker_data(CleanBrokerDataRequestHeader(broker_name=GROUP, broker_id_set_to_clean="2"))
    assert gone.ok and set(group(three).addresses) == {1, 3}


async def test_state_survives_a_restart_and_a_failed_write_changes_nothing(tmp_path: Path, clock: Clock) -> None:
    store = FileMetadataStore(tmp_path)
    c = Controller(ControllerConfig(), store, clock=clock)
    for i in (1, 2):
        await join(c, i)
    await elect(c, 1)
    assert await alter(c, 1, 1, {1, 2}, 1) == ResponseCode.SUCCESS
    before = c.state.to_json()
    again = Controller(ControllerConfig(), FileMetadataStore(tmp_path), clock=clock)
    assert again.state.to_json() == before
    assert again.state.groups[GROUP].sync_state_set == {1, 2} and again.state.groups[GROUP].master_epoch == 1
    # nothing is alive after the restart until heartbeats come: the old master is kept, not replaced, and a
    # slave heard first does not replace it while the master may still be on its way (one heartbeat timeout)
    assert await again.scan() == [] and again.state.groups[GROUP].master_id == 1
    beat(again, 2, max_offset=5)
    assert await again.scan() == [] and again.state.groups[GROUP].master_id == 1
    clock.now += 9
    beat(again, 2, max_offset=5)
    assert await again.scan() == [] and again.state.groups[GROUP].master_id == 1
    clock.now += 2  # the grace is over and the master never came
    beat(again, 2, max_offset=5)
    await again.scan()
    assert again.state.groups[GROUP].master_id == 2 and again.state.groups[GROUP].master_epoch == 2

    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    c.store = FileMetadataStore(blocker)  # its directory is a file: the write fails
    beat(c, 1)  # the change itself is valid: only its write fails
    with pytest.raises(MetadataStoreError):
        await c.alter_sync_state_set(
            AlterSyncStateSetRequestHeader(broker_name=GROUP, master_broker_id=1, master_epoch=1), frozenset({1}), 2
        )
    assert c.state.to_json() == before


async def test_an_unreadable_state_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "controller-state.json").write_text("{not json")
    with pytest.raises(MetadataStoreError):
        FileMetadataStore(tmp_path).load()


async def test_events_round_trip_through_json() -> None:
    event = ElectMaster(GROUP, 3)
    assert event_from_json(json.loads(json.dumps(event_to_json(event)))) == event
    with pytest.raises(ValueError):
        event_from_json({"type": "Nope"})
    assert ControllerState.from_json({"groups": []}).groups == {}


async def test_a_closed_connection_is_the_death_of_the_brokers_on_it(three: Controller, clock: Clock) -> None:
    conn_1, conn_2 = object(), object()
    for broker_id, conn in ((1, conn_1), (2, conn_2)):
        d = three.heartbeat(
            BrokerHeartbeatRequestHeader(
                cluster_name=CLUSTER, broker_addr=addr(broker_id), broker_name=GROUP, broker_id=broker_id, max_offset=9
            ),
            conn,
        )
        assert d.ok
    assert await three.on_channel_closed(object()) == []  # nobody heartbeated over it
    assert await three.on_channel_closed(conn_2) == [] and group(three).master_id == 1  # a slave: no election
    [decision] = await three.on_channel_closed(conn_1)  # the master: elected at once, no timeout waited
    assert decision.ok and group(three).master_id == 3 and group(three).master_epoch == 2


class SlowStore:
    """A store whose commits wait for the test's signal (a replicated store waiting for its quorum)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.committed: list[list[object]] = []

    def load(self) -> ControllerState:
        return ControllerState()

    async def commit(self, state: ControllerState, events: list[Any]) -> None:
        await self.release.wait()
        self.committed.append(list(events))


async def test_changes_are_decided_one_at_a_time_and_answered_after_the_commit(clock: Clock) -> None:
    store = SlowStore()
    c = Controller(ControllerConfig(), store, clock=clock)

    def apply(code: str) -> ApplyBrokerIdRequestHeader:
        return ApplyBrokerIdRequestHeader(
            cluster_name=CLUSTER, broker_name=GROUP, applied_broker_id=1, register_check_code=code
        )

    first = asyncio.ensure_future(c.apply_broker_id(apply("10.0.0.1:1;1")))
    second = asyncio.ensure_future(c.apply_broker_id(apply("10.0.0.9:1;9")))
    await asyncio.sleep(0)
    assert not first.done() and c.state.groups == {}  # nothing applied before the store said so
    store.release.set()
    a, b = await first, await second
    assert a.ok and b.code == CRC.CONTROLLER_BROKER_ID_INVALID  # decided after the first was applied
    assert len(store.committed) == 1 and c.state.groups[GROUP].addresses == {1: "10.0.0.1:1"}
