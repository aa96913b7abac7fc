"""Message record, batch, properties and message-id codecs (tests/vectors/records.json + properties)."""

from __future__ import annotations

import contextlib
import json
import string
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.errors import ProtocolError
from rocketq.protocol.message import (
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_COMPRESSED,
    SYSFLAG_STOREHOST_V6,
    BatchItem,
    MessageRecord,
    body_crc,
    canonical_properties_text,
    decode_batch,
    decode_properties,
    decode_record,
    encode_batch,
    encode_properties,
    encode_record,
    iter_records,
    make_offset_msg_id,
    parse_offset_msg_id,
    record_size,
)

VECTORS = json.loads((Path(__file__).parents[2] / "vectors" / "records.json").read_text())


def assemble(parts: list[list[str]]) -> bytes:
    out = bytearray()
    for kind, data, _note in parts:
        out += bytes.fromhex(data) if kind == "hex" else data.encode()
    return bytes(out)


# ---------------------------------------------------------------------------------------------- golden


@pytest.mark.parametrize("vector", VECTORS["records"], ids=[v["name"] for v in VECTORS["records"]])
def test_record_golden_decode(vector: dict[str, Any]) -> None:
    raw = assemble(vector["parts"])
    exp = vector["expect"]
    rec = decode_record(raw)
    assert rec.topic == exp["topic"]
    assert rec.body == bytes.fromhex(exp["body_hex"])
    for name in (
        "queue_id", "flag", "queue_offset", "commit_log_offset", "sys_flag", "born_timestamp", "store_timestamp",
        "reconsume_times", "prepared_transaction_offset", "properties", "store_size", "body_crc",
    ):  # fmt: skip
        assert getattr(rec, name) == exp[name], name
    assert rec.born_host == tuple(exp["born_host"])
    assert rec.store_host == tuple(exp["store_host"])
    assert rec.offset_msg_id == exp["offset_msg_id"]
    assert rec.msg_id == exp["offset_msg_id"]  # no UNIQ_KEY
    assert rec.tags == "tagA"
    assert rec.store_size == len(raw) == record_size(5, 2, 10)


@pytest.mark.parametrize("vector", VECTORS["records"], ids=[v["name"] for v in VECTORS["records"]])
def test_record_golden_reencode(vector: dict[str, Any]) -> None:
    raw = assemble(vector["parts"])
    assert encode_record(decode_record(raw)) == raw


def test_record_golden_inside_a_larger_buffer() -> None:
    raw = assemble(VECTORS["records"][0]["parts"])
    buf = b"\x00" * 7 + raw + raw
    rec = decode_record(buf, 7)
    assert rec.store_size == len(raw)
    assert [r.queue_offset for r in iter_records(raw + raw)] == [5, 5]


@pytest.mark.parametrize("vector", VECTORS["batches"], ids=[v["name"] for v in VECTORS["batches"]])
def test_batch_golden(vector: dict[str, Any]) -> None:
    raw = assemble(vector["parts"])
    items = decode_batch(raw)
    assert [(i.flag, i.body.hex().upper(), i.properties) for i in items] == [
        (e["flag"], e["body_hex"], e["properties"]) for e in vector["expect"]
    ]
    assert encode_batch(items) == raw


# ----------------------------------------------------------------------------------------- round trips

SAFE = st.text(alphabet=string.ascii_letters + string.digits + "_-%|é中", min_size=1, max_size=20)
IPV4 = st.ip_addresses(v=4).map(str)
IPV6 = st.ip_addresses(v=6).map(str)
HOSTS = st.tuples(IPV4 | IPV6, st.integers(0, 65535))
I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)

records = st.builds(
    MessageRecord,
    topic=st.text(alphabet=string.ascii_letters + "%_-", min_size=1, max_size=127),
    body=st.binary(max_size=300),
    queue_id=I32,
    flag=I32,
    queue_offset=I64,
    commit_log_offset=I64,
    sys_flag=st.integers(0, 0x70F),
    born_timestamp=I64,
    born_host=HOSTS,
    store_timestamp=I64,
    store_host=HOSTS,
    reconsume_times=I32,
    prepared_transaction_offset=I64,
    properties=st.dictionaries(SAFE, SAFE, max_size=5),
)


@given(records)
def test_record_round_trip(rec: MessageRecord) -> None:
    raw = encode_record(rec)
    back = decode_record(raw)
    v6 = (SYSFLAG_BORNHOST_V6 if ":" in rec.born_host[0] else 0) | (
        SYSFLAG_STOREHOST_V6 if ":" in rec.store_host[0] else 0
    )
    expected_flag = (rec.sys_flag & ~(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6)) | v6
    assert back.sys_flag == expected_flag
    assert back.store_size == len(raw)
    assert back.body_crc == body_crc(rec.body)
    for name in (
        "topic", "body", "queue_id", "flag", "queue_offset", "commit_log_offset", "born_timestamp",
        "store_timestamp", "reconsume_times", "prepared_transaction_offset", "properties",
    ):  # fmt: skip
        assert getattr(back, name) == getattr(rec, name), name
    assert (back.born_host[1], back.store_host[1]) == (rec.born_host[1], rec.store_host[1])
    assert encode_record(back) == raw


@given(st.lists(records, min_size=1, max_size=4))
def test_iter_records_over_a_pull_body(recs: list[MessageRecord]) -> None:
    body = b"".join(encode_record(r) for r in recs)
    assert [r.queue_offset for r in iter_records(body)] == [r.queue_offset for r in recs]


@given(st.binary(max_size=300), st.integers(0, 400))
def test_garbage_record_raises_only_protocol_error(data: bytes, pos: int) -> None:
    with contextlib.suppress(ProtocolError):
        decode_record(data, pos)


@given(records, st.integers(0, 10_000), st.integers(0, 255))
def test_mutated_record_raises_only_protocol_error(rec: MessageRecord, pos: int, value: int) -> None:
    raw = bytearray(encode_record(rec))
    raw[pos % len(raw)] = value
    with contextlib.suppress(ProtocolError):
        decode_record(bytes(raw))


batches = st.lists(
    st.builds(BatchItem, flag=I32, body=st.binary(max_size=100), properties=st.dictionaries(SAFE, SAFE, max_size=4)),
    min_size=1,
    max_size=5,
)


@given(batches)
def test_batch_round_trip(items: list[BatchItem]) -> None:
    assert decode_batch(encode_batch(items)) == items


@given(st.binary(max_size=200))
def test_garbage_batch_raises_only_protocol_error(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode_batch(data)


def test_empty_batch_is_rejected() -> None:
    with pytest.raises(ProtocolError):
        decode_batch(b"")


# ----------------------------------------------------------------------------------------- properties


def test_properties_encoding_keeps_the_trailing_separator() -> None:
    assert encode_properties({"TAGS": "a", "KEYS": "k1 k2"}) == "TAGS\x01a\x02KEYS\x01k1 k2\x02"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TAGS\x01a\x02KEYS\x01k", {"TAGS": "a", "KEYS": "k"}),  # Java: no trailing 0x02
        ("TAGS\x01a\x02KEYS\x01k\x02", {"TAGS": "a", "KEYS": "k"}),  # C++: trailing 0x02
        ("", {}),
        ("noseparator\x02\x01novalue\x02empty\x01\x02ok\x01v", {"ok": "v"}),
        ("a\x01b\x01c\x02", {"a": "b\x01c"}),
    ],
)
def test_properties_decoding_follows_java(text: str, expected: dict[str, str]) -> None:
    assert decode_properties(text) == expected


@given(st.dictionaries(SAFE, SAFE, max_size=8))
def test_properties_round_trip(props: dict[str, str]) -> None:
    assert decode_properties(encode_properties(props)) == props


# texts built from the characters that matter to the rule, so the odd shapes come up often
_PROPERTY_TEXT = st.text(alphabet=st.sampled_from(["\x01", "\x02", "a", "b", "K"]), max_size=24)


@given(st.one_of(_PROPERTY_TEXT, st.dictionaries(SAFE, SAFE, max_size=6).map(encode_properties)))
def test_canonical_text_is_given_exactly_when_the_text_encodes_back_to_itself(text: str) -> None:
    decoded = decode_properties(text)
    encoded = encode_properties(decoded)
    canonical = canonical_properties_text(text, len(decoded))
    # the text itself, or Java's form of it (no last separator)
    assert (canonical is not None) == (encoded in (text, text + "\x02"))
    assert canonical is None or canonical == encoded


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("TAGS\x01a\x02", "TAGS\x01a\x02"),
        ("TAGS\x01a", "TAGS\x01a\x02"),  # Java's form, no trailing separator
        ("TAGS\x01a\x02KEYS\x01k", "TAGS\x01a\x02KEYS\x01k\x02"),
        ("TAGS\x01a\x02TAGS\x01b\x02", None),  # repeated name
        ("TAGS\x01a\x02TAGS\x01b", None),
        ("a\x01b\x01c\x02", "a\x01b\x01c\x02"),  # a 0x01 inside the value: the name ends at the first
        ("empty\x01\x02ok\x01v\x02", None),  # a dropped piece
        ("ok\x01v\x02junk", None),  # a last piece without a name-value separator
        ("\x02", None),
    ],
)
def test_canonical_properties_examples(text: str, canonical: str | None) -> None:
    assert canonical_properties_text(text, len(decode_properties(text))) == canonical


def test_compressed_body_inflates() -> None:
    rec = MessageRecord(topic="T", body=zlib.compress(b"x" * 5000), sys_flag=SYSFLAG_COMPRESSED)
    assert decode_record(encode_record(rec)).uncompressed_body() == b"x" * 5000
    broken = MessageRecord(topic="T", body=b"not zlib", sys_flag=SYSFLAG_COMPRESSED)
    with pytest.raises(ProtocolError):
        broken.uncompressed_body()


def test_uniq_key_is_the_user_visible_msg_id() -> None:
    rec = MessageRecord(topic="T", body=b"", properties={"UNIQ_KEY": "ABC"}, store_host=("10.0.0.9", 10911))
    assert rec.msg_id == "ABC"
    assert rec.offset_msg_id == "0A00000900002A9F0000000000000000"


# ---------------------------------------------------------------------------------------- offset msg id


def test_offset_msg_id_golden() -> None:
    # store ip 10.0.0.9, port 10911 (0x2A9F) as a 4-byte int, commit-log offset 0x1000 as 8 bytes.
    assert make_offset_msg_id(("10.0.0.9", 10911), 4096) == "0A00000900002A9F0000000000001000"
    assert parse_offset_msg_id("0A00000900002A9F0000000000001000") == (("10.0.0.9", 10911), 4096)
    assert parse_offset_msg_id("0a00000900002a9f0000000000001000") == (("10.0.0.9", 10911), 4096)


@given(HOSTS, st.integers(0, 2**63 - 1))
def test_offset_msg_id_round_trip(host: tuple[str, int], offset: int) -> None:
    msg_id = make_offset_msg_id(host, offset)
    assert len(msg_id) == (56 if ":" in host[0] else 32)
    assert msg_id == msg_id.upper()
    back_host, back_offset = parse_offset_msg_id(msg_id)
    assert back_offset == offset
    assert back_host[1] == host[1]


@pytest.mark.parametrize(
    "bad", ["", "XYZ", "0A000009", "0A00000900002A9F00000000000010", "0A00000900002A9F000000000000100G"]
)
def test_bad_offset_msg_id(bad: str) -> None:
    with pytest.raises(ProtocolError):
        parse_offset_msg_id(bad)
