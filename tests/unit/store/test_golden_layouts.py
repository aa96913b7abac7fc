"""Golden bytes for the on-disk formats, assembled by hand from the reference's byte tables (§4.1, §6).

Each expected value is written field by field as hex; nothing here is produced by the encoder under test.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from types import ModuleType

import pytest

from rocketq.protocol.message import (
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    decode_record,
    encode_host,
    encode_record_raw,
)
from rocketq.store import _appendcodec_py, appendcodec
from rocketq.store.checkpoint import StoreCheckpoint
from rocketq.store.consume_queue import ConsumeQueue
from rocketq.store.index_file import IndexFile, index_file_name, index_file_size
from rocketq.store.mapped_file import offset_to_file_name
from rocketq.store.record import write_blank

TWINS: list[ModuleType] = [_appendcodec_py] + ([appendcodec.compiled] if appendcodec.compiled else [])

T0 = 1_704_164_645_678  # 0x0000018CC820DB2E

# topic "TopicA", body b"Hi", properties "TAGS\x01tagA\x02"; 91 + 2 + 6 + 10 = 109 bytes
GOLDEN_RECORD = bytes.fromhex(
    "0000006D"  # TOTALSIZE 109
    "DAA320A7"  # MAGICCODE
    "4D170E0E"  # BODYCRC crc32(b"Hi") & 0x7FFFFFFF
    "00000003"  # QUEUEID 3
    "00000007"  # FLAG 7
    "0000000000000005"  # QUEUEOFFSET 5
    "0000000000001000"  # PHYSICALOFFSET 4096
    "00000000"  # SYSFLAG
    "0102030405060708"  # BORNTIMESTAMP
    "C0A80001" "000004D2"  # BORNHOST 192.168.0.1:1234
    "1112131415161718"  # STORETIMESTAMP
    "0A000002" "00002A9F"  # STOREHOST 10.0.0.2:10911
    "00000002"  # RECONSUMETIMES 2
    "0000000000000000"  # PREPARED TRANSACTION OFFSET
    "00000002" "4869"  # BODY length 2, "Hi"
    "06" "546F70696341"  # TOPIC length 6, "TopicA"
    "000A" "54414753" "01" "74616741" "02"  # PROPERTIES length 10, "TAGS\x01tagA\x02"
)


@pytest.mark.parametrize("twin", TWINS, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
def test_store_record_writer_matches_golden(twin: ModuleType) -> None:
    mm = mmap.mmap(-1, 4096)
    size = twin.write_record(
        mm, 100, b"Hi", b"\x06TopicA", b"TAGS\x01tagA\x02", 3, 7, 5, 4096, 0, 0x0102030405060708,
        encode_host(("192.168.0.1", 1234)), 0x1112131415161718, encode_host(("10.0.0.2", 10911)), 2, 0,
    )
    assert size == 109
    assert mm[100 : 100 + 109] == GOLDEN_RECORD
    assert mm[100 + 109 : 100 + 120] == bytes(11)


def test_protocol_codec_matches_golden() -> None:
    raw = encode_record_raw(
        topic_b=b"TopicA", body=b"Hi", props_b=b"TAGS\x01tagA\x02", queue_id=3, flag=7, queue_offset=5,
        commit_log_offset=4096, sys_flag=0, born_timestamp=0x0102030405060708, born_host=("192.168.0.1", 1234),
        store_timestamp=0x1112131415161718, store_host=("10.0.0.2", 10911), reconsume_times=2,
        prepared_transaction_offset=0, crc=None,
    )
    assert raw == GOLDEN_RECORD
    rec = decode_record(GOLDEN_RECORD)
    assert (rec.topic, rec.body, rec.queue_id, rec.flag, rec.queue_offset, rec.commit_log_offset) == (
        "TopicA", b"Hi", 3, 7, 5, 4096,
    )
    assert rec.properties == {"TAGS": "tagA"}
    assert rec.born_host == ("192.168.0.1", 1234) and rec.store_host == ("10.0.0.2", 10911)


@pytest.mark.parametrize("twin", TWINS, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
def test_store_writer_equals_protocol_codec_for_ipv6_hosts(twin: ModuleType) -> None:
    born, store = ("::1", 7), ("fe80::2", 10911)
    mm = mmap.mmap(-1, 4096)
    size = twin.write_record(
        mm, 0, b"body", b"\x02T6", b"", 1, 0, 1, 0, SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6, 9,
        encode_host(born), 10, encode_host(store), 0, 77,
    )
    expected = encode_record_raw(
        topic_b=b"T6", body=b"body", props_b=b"", queue_id=1, flag=0, queue_offset=1, commit_log_offset=0,
        sys_flag=0, born_timestamp=9, born_host=born, store_timestamp=10, store_host=store, reconsume_times=0,
        prepared_transaction_offset=77, crc=None,
    )
    assert mm[0:size] == expected
    assert size == 91 + 4 + 2 + 24


def test_blank_record() -> None:
    mm = mmap.mmap(-1, 64)
    write_blank(mm, 16, 48)
    assert mm[16:24] == bytes.fromhex("00000030" "CBD43194")
    assert mm[24:64] == bytes(40)


def test_consume_queue_unit(tmp_path: Path) -> None:
    cq = ConsumeQueue("T", 0, str(tmp_path), 200)
    cq.put(4096, 109, -123456789, 0)
    cq.put(4205, 120, 0x1234, 1)
    data = cq.mfq.mapped_files[0].mm[0:40]
    assert data == bytes.fromhex(
        "0000000000001000" "0000006D" "FFFFFFFFF8A432EB"  # offset 4096, size 109, tags -123456789
        "000000000000106D" "00000078" "0000000000001234"  # offset 4205, size 120, tags 0x1234
    )
    cq.close()


def test_consume_queue_pre_blank_unit(tmp_path: Path) -> None:
    cq = ConsumeQueue("T", 0, str(tmp_path), 200)
    cq.put(4096, 109, 0, 12)  # queue starting at offset 12: file 10..19, units 10 and 11 pre-blank
    mf = cq.mfq.mapped_files[0]
    assert mf.file_name == "00000000000000000200"
    assert mf.mm[0:40] == bytes.fromhex("0000000000000000" "7FFFFFFF" "0000000000000000") * 2
    assert cq.min_offset_in_queue == 12 and cq.max_offset_in_queue == 13
    cq.close()


def test_index_file_layout(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    f = IndexFile(str(path), 4, 4)
    assert os.path.getsize(path) == 40 + 4 * 4 + 4 * 20 == index_file_size(4, 4)
    assert f.put_key(10, 4096, T0)
    assert f.put_key(14, 8192, T0 + 5500)
    f.flush()
    f.close()
    expected = bytes.fromhex(
        # header
        "0000018CC820DB2E"  # beginTimestamp T0
        "0000018CC820F0AA"  # endTimestamp T0 + 5500
        "0000000000001000"  # beginPhyOffset 4096
        "0000000000002000"  # endPhyOffset 8192
        "00000001"  # hashSlotCount
        "00000003"  # indexCount (starts at 1, two entries)
        # slots 0..3 (keyHash % 4: both keys in slot 2, newest entry 2)
        "00000000" "00000000" "00000002" "00000000"
        # entry 0: never used
        "00000000" "0000000000000000" "00000000" "00000000"
        # entry 1: hash 10, offset 4096, timeDiff 0 (first entry), prev 0
        "0000000A" "0000000000001000" "00000000" "00000000"
        # entry 2: hash 14, offset 8192, timeDiff 5 s, prev 1
        "0000000E" "0000000000002000" "00000005" "00000001"
        # entry 3: empty
        "00000000" "0000000000000000" "00000000" "00000000"
    )
    assert path.read_bytes() == expected


def test_index_file_name_is_local_time() -> None:
    import time

    name = index_file_name(T0)
    assert name == time.strftime("%Y%m%d%H%M%S", time.localtime(T0 // 1000)) + "678"
    assert len(name) == 17


def test_checkpoint_layout(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    cp = StoreCheckpoint(str(path))
    cp.physic_msg_timestamp = 1
    cp.logics_msg_timestamp = 0x0102030405060708
    cp.index_msg_timestamp = T0
    cp.flush()
    cp.close()
    data = path.read_bytes()
    assert len(data) == 4096
    assert data[:24] == bytes.fromhex("0000000000000001" "0102030405060708" "0000018CC820DB2E")
    assert data[24:] == bytes(4072)
    again = StoreCheckpoint(str(path))
    assert (again.physic_msg_timestamp, again.logics_msg_timestamp, again.index_msg_timestamp) == (
        1, 0x0102030405060708, T0,
    )
    again.close()


def test_file_names() -> None:
    assert offset_to_file_name(0) == "00000000000000000000"
    assert offset_to_file_name(1_073_741_824) == "00000000001073741824"
