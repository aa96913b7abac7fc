"""Controller mode's small pieces: the broker-id metadata files, the HA handshake frame that names a slave,
the confirm offset over the in-sync set, and the broker keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.errors import ConfigError
from rocketq.replication.config import HAConfig
from rocketq.replication.frames import HANDSHAKE, decode_handshake, encode_handshake
from rocketq.replication.replicas import BrokerMetadataFile
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
