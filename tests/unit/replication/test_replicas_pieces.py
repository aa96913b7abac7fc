"""Controller mode's pieces: the broker-id metadata files, the HA handshake frame that names a slave, the
confirm offset over the in-sync set, the broker keys, the in-sync set upkeep and the role changes (with fakes
for the store and the controller)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.broker.role import BrokerRole, BrokerRoleState
from rocketq.errors import ConfigError
from rocketq.replication.config import HAConfig
from rocketq.replication.controller.client import MasterInfo
from rocketq.replication.controller.epoch import EpochCache, EpochEntry, EpochFile
from rocketq.replication.frames import HANDSHAKE, decode_handshake, encode_handshake
from rocketq.replication.replicas import BrokerMetadataFile, ReplicasConfig, ReplicasManager
from rocketq.replication.service import HAService


def test_the_temporary_metadata_file_becomes_the_final_one(tmp_path: Path) -> None:
    meta = BrokerMetadataFile(tmp_path)
    assert meta.load() is None and meta.load_temp() is None
    meta.write_temp("c", "b", 3, "127.0.0.1:10911;1700000000000")
    assert meta.load() is None  # applied only after APPLY_BROKER_ID answered
    assert meta.load_temp() == (3, "127.0.0.1:10911;1700000000000")
    meta.promote_temp("c", "b", 3)
    assert meta.load() == 3 and meta.load_temp() is None
    assert BrokerMetadataFile(tmp_path).load() == 3  # read back by a restarted broker


@pytest.mark.parametrize("text", ["", "{", "[]", '{"brokerId": 0}', '{"brokerId": "2"}'])
def test_a_damaged_metadata_file_reads_as_none(tmp_path: Path, text: str) -> None:
    meta = BrokerMetadataFile(tmp_path)
    meta.path.write_text(text)
    meta.temp.write_text(text)
    assert meta.load() is None and meta.load_temp() is None


def test_the_handshake_frame_is_java_5s_layout() -> None:
    frame = encode_handshake(7)
    assert len(frame) == HANDSHAKE.size == 16
    assert frame == bytes.fromhex("00000001" "0000" "0000" "0000000000000007")
    assert decode_handshake(frame) == 7
    with pytest.raises(ValueError):
        decode_handshake(bytes.fromhex("00000002" "0000" "0000" "0000000000000007"))  # a TRANSFER state
    with pytest.raises(ValueError):
        decode_handshake(bytes(16))  # broker id 0 is no slave


def test_controller_mode_needs_a_controller_address() -> None:
    with pytest.raises(ConfigError, match="controllerAddr"):
        BrokerConfig.from_mapping({"enableControllerMode": "true"})
    cfg = BrokerConfig.from_mapping({"enableControllerMode": "true", "controllerAddr": "a:1; b:2;"})
    assert cfg.controller_addrs == ["a:1", "b:2"]
    with pytest.raises(ConfigError, match="brokerHeartbeatInterval"):
        BrokerConfig.from_mapping({"brokerHeartbeatInterval": "0"})


class _Store:
    def get_max_phy_offset(self) -> int:
        return 1000


def test_the_confirm_offset_is_the_slowest_ack_of_the_in_sync_set() -> None:
    ha = HAService(_Store(), HAConfig())  # type: ignore[arg-type]
    assert ha.confirm_offset() == 1000  # 4.9 mode: the store's end
    ha.controller_mode, ha.self_id = True, 1
    ha.sync_state_set = frozenset({1})
    assert ha.confirm_offset() == 1000  # the master alone
    ha.sync_state_set = frozenset({1, 2, 3})
    ha.slave_acks = {2: 700, 3: 900, 4: 100}  # 4 is connected but not in the set
    assert ha.confirm_offset() == 700
    del ha.slave_acks[2]
    assert ha.confirm_offset() == 0  # a member not heard from yet holds nothing we know of
    ha.all_ack = False  # Java's default: the master alone confirms
    assert ha.confirm_offset() == 1000


class _Conn:
    def __init__(self, slave_id: int, ack: int) -> None:
        self.slave_id, self.ack_offset = slave_id, ack


class _Role:
    is_master, is_slave, epoch = True, False, 1


class _Controller:
    def __init__(self) -> None:
        self.proposals: list[tuple[frozenset[int], int]] = []

    async def alter_sync_state_set(
        self, name: str, master: int, epoch: int, ids: frozenset[int], set_epoch: int
    ) -> int:
        self.proposals.append((ids, set_epoch))
        return set_epoch + 1


class _Top:
    top = 1000

    def get_max_phy_offset(self) -> int:
        return self.top

    def set_visible_limit(self, limit: object) -> None:
        pass


class _Master:
    """A ReplicasManager that is the master (id 1) of a group whose in-sync set is itself, on a fake store and
    controller, with ``time.monotonic`` at ``now[0]``."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = [100.0]
        monkeypatch.setattr("rocketq.replication.replicas.time.monotonic", lambda: self.now[0])
        self.store = _Top()
        self.ha = HAService(self.store, HAConfig())  # type: ignore[arg-type]
        cfg = ReplicasConfig("c", "b", "127.0.0.1:1", ("127.0.0.1:2",), tmp_path, max_time_slave_not_catchup_ms=15_000)
        self.rm = ReplicasManager(cfg, _Role(), self.store, self.ha, None)  # type: ignore[arg-type]
        self.ctl = _Controller()
        self.rm.controller, self.rm.broker_id = self.ctl, 1  # type: ignore[assignment]
        self.rm.master = MasterInfo(1, "127.0.0.1:1", 1, frozenset({1}), 1)
        self.rm._set_isr(frozenset({1}), 1)
        self.ha.controller_mode, self.ha.self_id = True, 1


async def test_the_in_sync_set_grows_with_a_caught_up_slave_and_drops_one_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = _Master(tmp_path, monkeypatch)
    now, store, ha, rm, ctl = m.now, m.store, m.ha, m.rm, m.ctl
    rm.epochs.append(1, 400)
    slow, fast = _Conn(2, 300), _Conn(3, 1000)
    ha.master.connections = {slow, fast}  # type: ignore[assignment]
    for c in (slow, fast):
        ha.slave_acks[c.slave_id] = c.ack_offset

    await rm.check_sync_state_set()  # 3 reached the confirm offset (1000) and the epoch start; 2 did not
    assert ctl.proposals == [(frozenset({1, 3}), 1)] and ha.sync_state_set == frozenset({1, 3})
    slow.ack_offset = ha.slave_acks[2] = 1000
    await rm.check_sync_state_set()
    assert ha.sync_state_set == frozenset({1, 2, 3}) and ctl.proposals[-1] == (frozenset({1, 2, 3}), 2)
    assert ha.confirm_offset() == 1000

    store.top = 5000  # 3 keeps up, 2 stops acking: at 110 it still holds what the master held at the last check
    fast.ack_offset = ha.slave_acks[3] = 5000
    now[0] += 10
    await rm.check_sync_state_set()
    now[0] += 10
    await rm.check_sync_state_set()
    assert ha.sync_state_set == frozenset({1, 2, 3}) and ha.confirm_offset() == 1000  # behind for 10 s only
    now[0] += 6
    await rm.check_sync_state_set()
    assert ha.sync_state_set == frozenset({1, 3}) and ha.confirm_offset() == 5000
    assert len(ctl.proposals) == 3


class _Log(_Top):
    def __init__(self, top: int) -> None:
        self.top = top
        self.cuts: list[int] = []
        self.limit: object = "unset"

    def truncate_to(self, offset: int) -> int:
        self.cuts.append(offset)
        self.top = offset
        return 0

    def drop_replica_tail(self) -> int:
        return 0

    def set_visible_limit(self, limit: object) -> None:
        self.limit = limit


async def test_roles_follow_the_controller_and_a_stale_notice_changes_nothing(tmp_path: Path) -> None:
    store = _Log(900)
    ha = HAService(store, HAConfig())  # type: ignore[arg-type]
    role = BrokerRoleState(BrokerRole.SLAVE, broker_id=2)
    cfg = ReplicasConfig("c", "b", "127.0.0.1:20", ("127.0.0.1:9",), tmp_path)
    rm = ReplicasManager(cfg, role, store, ha, None)  # type: ignore[arg-type]
    rm.broker_id = 2
    rm.epochs.append(1, 0)
    rm.epochs.append(2, 500)  # this broker led epoch 2 from 500 and wrote up to 900

    async def fetch(addr: str) -> tuple[EpochCache, int]:
        assert addr == "127.0.0.1:10"
        return EpochCache([EpochEntry(1, 0), EpochEntry(3, 700)]), 1200  # the new master never had epoch 2

    rm._fetch_epochs = fetch  # type: ignore[method-assign]
    rm.on_namesrv_result("127.0.0.1:10", "127.0.0.1:11")
    assert ha.client.master_address is None  # nothing to follow before the controller named a master
    await rm.apply(MasterInfo(1, "127.0.0.1:10", 3, frozenset({1}), 1))
    assert role.is_slave and role.epoch == 3 and role.master_addr == "127.0.0.1:10"
    assert store.cuts == [500]  # epoch 1 is shared and ends at 500 here (where epoch 2 began)
    assert [(e.epoch, e.start_offset) for e in rm.epochs.entries] == [(1, 0)]  # 3 starts past this log's end
    assert store.limit is None and ha.client.master_address == "127.0.0.1:11"  # now it follows

    await rm.apply(MasterInfo(2, "127.0.0.1:20", 2, frozenset({2}), 1))  # a stale notice: epoch 2 < 3
    assert role.is_slave and role.epoch == 3

    store.top = 800  # it copied the master up to 800, then the master died and it was elected
    await rm.apply(MasterInfo(2, "127.0.0.1:20", 4, frozenset({2}), 2))
    assert role.is_master and role.broker_id == 0 and role.epoch == 4
    assert ha.client.master_address is None
    assert [(e.epoch, e.start_offset) for e in rm.epochs.entries] == [(1, 0), (3, 700), (4, 800)]
    assert [(e.epoch, e.start_offset) for e in EpochFile(tmp_path).load().entries] == [(1, 0), (3, 700), (4, 800)]
    assert callable(store.limit) and ha.sync_state_set == frozenset({2})


async def test_a_slave_joins_under_a_steady_load_once_it_holds_what_was_acknowledged_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The master's end never stands still under load, so a returning slave is never exactly at it: it becomes
    a candidate once an ack reaches the end as it stood at its previous ack (sends wait for it from then on),
    and joins once it holds the end as it stood then — everything acknowledged by the master alone."""
    m = _Master(tmp_path, monkeypatch)
    store, ha, rm, ctl = m.store, m.ha, m.rm, m.ctl
    rm.epochs.append(1, 0)
    slave = _Conn(2, 0)
    ha.master.connections = {slave}  # type: ignore[assignment]

    def ack(offset: int, top_after: int) -> None:  # the slave reports; meanwhile the producers move the end
        slave.ack_offset = ha.slave_acks[2] = offset
        rm.on_slave_ack(2, offset)
        store.top = top_after

    ack(500, 1_500)  # the end was 1,000
    ack(900, 2_000)  # short of the end seen at its previous ack (1,000)
    ack(1_400, 2_500)  # short of 1,500: a slave a round behind never becomes a candidate
    assert ha.candidates == frozenset() and ha.confirm_offset() == 2_500
    await rm.check_sync_state_set()
    assert ctl.proposals == []
    ack(2_100, 3_000)  # reached 2,000, the end at its previous ack: a candidate that must reach 2,500
    assert ha.candidates == frozenset({2}) and ha.confirm_offset() == 2_100  # sends wait for it from now on
    await rm.check_sync_state_set()  # 2,100 < 2,500: the controller is not asked yet
    assert ctl.proposals == [] and ha.sync_state_set == frozenset({1})
    ack(2_600, 3_500)  # it holds 2,500 (on a started manager this asks at once; here the check runs by hand)
    await rm.check_sync_state_set()
    assert ctl.proposals == [(frozenset({1, 2}), 1)] and ha.sync_state_set == frozenset({1, 2})
    assert ha.candidates == frozenset() and ha.confirm_offset() == 2_600


async def test_a_candidate_that_does_not_catch_up_in_time_stops_holding_sends_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = _Master(tmp_path, monkeypatch)
    now, store, ha, rm = m.now, m.store, m.ha, m.rm
    slave = _Conn(2, 900)
    ha.master.connections = {slave}  # type: ignore[assignment]
    rm.on_slave_ack(2, 900)  # the end is 1,000
    store.top = 2_000
    slave.ack_offset = ha.slave_acks[2] = 1_000
    rm.on_slave_ack(2, 1_000)  # reached the end seen at its previous ack: a candidate that must reach 2,000
    assert ha.candidates == frozenset({2}) and ha.confirm_offset() == 1_000
    now[0] += 10
    await rm.check_sync_state_set()
    assert ha.candidates == frozenset({2})  # still within haMaxTimeSlaveNotCatchup
    now[0] += 6  # ... and then it stalls past it: sends stop waiting for it
    await rm.check_sync_state_set()
    assert ha.candidates == frozenset() and ha.confirm_offset() == 2_000 and ha.sync_state_set == frozenset({1})
