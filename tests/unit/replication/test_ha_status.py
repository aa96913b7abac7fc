"""GET_BROKER_HA_STATUS's in-sync flag: the fall-behind rule in 4.9 mode, the controller's set in controller mode."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from rocketq.replication import HAConfig, HAService
from rocketq.replication.status import ha_runtime_info


@dataclass(eq=False)  # hashable by identity, as the master's connections are
class FakeConnection:
    peer: str
    ack_offset: int
    slave_id: int | None
    transfer_from: int = 0


def service(top: int, *conns: tuple[int | None, int]) -> HAService:
    store: Any = SimpleNamespace(get_max_phy_offset=lambda: top)
    ha = HAService(store, HAConfig(slave_fallbehind_max=1_000))
    for n, (slave_id, ack) in enumerate(conns):
        conn: Any = FakeConnection(f"127.0.0.1:{5000 + n}", ack, slave_id)
        ha.master.connections.add(conn)
    return ha


def flags(ha: HAService) -> list[bool]:
    return [c["inSync"] for c in ha_runtime_info(ha, is_slave=False)["haConnectionInfo"]]


def test_outside_controller_mode_a_slave_is_in_sync_within_the_fall_behind_limit() -> None:
    assert flags(service(10_000, (None, 9_500), (None, 8_000), (None, -1))) == [True, False, False]


def test_in_controller_mode_the_in_sync_set_decides_not_the_gap() -> None:
    ha = service(10_000, (2, 10_000), (3, 2_000))
    ha.controller_mode, ha.sync_state_set = True, frozenset({1, 3})
    # broker 2 acked everything but is not (yet) in the set; broker 3 lags but the controller holds it in
    assert flags(ha) == [False, True]
    assert ha_runtime_info(ha, is_slave=False)["inSyncSlaveNums"] == 1
