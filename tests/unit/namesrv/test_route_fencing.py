"""Controller-mode fencing in the name server (Java 5.x ``RouteInfoManager.registerBroker``): a registration
for a broker id held by another alive address with a higher ``stateVersion`` (master epoch) is refused."""

from __future__ import annotations

import json

from rocketq.namesrv.route_info import RouteInfoManager
from rocketq.protocol.bodies import DataVersion
from rocketq.protocol.route import TopicConfigSerializeWrapper, decode_data_version

A, B = "10.0.0.1:10911", "10.0.0.2:10911"


def wrap(state_version: int, counter: int = 1) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(DataVersion(1700000000000, counter, state_version), {})


def reg(rim: RouteInfoManager, addr: str, broker_id: int, state_version: int) -> None:
    ha = addr.replace("10911", "10912")
    rim.register_broker("C", addr, "broker-a", broker_id, ha, wrap(state_version), None, None)


def test_a_stale_master_is_refused_and_dropped() -> None:
    rim = RouteInfoManager(clock=lambda: 1000.0, broker_expiry=120.0)
    reg(rim, A, 0, 1)  # A leads at epoch 1, B follows
    reg(rim, B, 1, 1)
    reg(rim, B, 0, 2)  # B elected at epoch 2: takes id 0
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: B}
    reg(rim, A, 0, 1)  # A comes back believing it still leads
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: B}
    assert A not in rim.broker_live_table
    reg(rim, A, 1, 1)  # as a slave it is welcome, and the slave learns the new master
    result = rim.register_broker("C", A, "broker-a", 1, None, wrap(1), None, None)
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: B, 1: A}
    assert result.master_addr == B


def test_an_equal_or_newer_state_version_replaces_the_holder() -> None:
    rim = RouteInfoManager(clock=lambda: 1000.0, broker_expiry=120.0)
    reg(rim, A, 0, 3)
    reg(rim, B, 0, 3)
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: B}
    reg(rim, A, 0, 4)
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: A}


def test_state_version_on_the_wire_only_when_used() -> None:
    assert DataVersion(5, 6).to_json() == {"counter": 6, "timestamp": 5}  # 4.9's bytes unchanged
    assert DataVersion(5, 6, 7).to_json() == {"counter": 6, "timestamp": 5, "stateVersion": 7}
    raw = json.loads(json.dumps(DataVersion(5, 6, 7).to_json()))
    assert decode_data_version(raw) == DataVersion(5, 6, 7) == DataVersion.from_json(raw)
