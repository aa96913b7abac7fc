"""The pull decoder's two twins (compiled and pure) against each other and against decode_record + from_record."""

from __future__ import annotations

import os
import string
import zlib
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.message import MessageExt, decode_body
from rocketq.errors import ProtocolError
from rocketq.protocol import _pullcodec_py, pullcodec
from rocketq.protocol.message import SYSFLAG_COMPRESSED, MessageRecord, encode_record, iter_records

TWINS: list[ModuleType] = [_pullcodec_py]
if pullcodec.compiled is not None:
    TWINS.append(pullcodec.compiled)

ATTRS = (
    "topic", "body", "flag", "properties", "transaction_id", "queue_id", "queue_offset", "commit_log_offset",
    "store_size", "sys_flag", "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
    "prepared_transaction_offset", "body_crc", "broker_name",
)  # fmt: skip

HOSTS = st.tuples(st.ip_addresses(v=4).map(str) | st.ip_addresses(v=6).map(str), st.integers(0, 65535))
TEXT = st.text(alphabet=string.ascii_letters + "é中\x01", min_size=1, max_size=12)
PROPS = st.dictionaries(
    TEXT | st.sampled_from(["TRAN_MSG", "UNIQ_KEY", "TAGS"]),
    TEXT | st.sampled_from(["true", "TRUE", "True", "false", "tru"]),
    max_size=5,
)
records = st.builds(
    MessageRecord,
    topic=st.sampled_from(["TopicTest", "t"]) | st.text(alphabet=string.ascii_letters + "%_-é", min_size=1,
                                                        max_size=40),
    body=st.binary(max_size=200),
    queue_id=st.integers(-(2**31), 2**31 - 1),
    flag=st.integers(-(2**31), 2**31 - 1),
    queue_offset=st.integers(-(2**63), 2**63 - 1),
    commit_log_offset=st.integers(0, 2**62),
    sys_flag=st.integers(0, 0x73E),  # not compressed: see test_compressed_bodies_go_through_inflate
    born_timestamp=st.integers(-(2**63), 2**63 - 1),
    born_host=HOSTS,
    store_timestamp=st.integers(0, 2**45),
    store_host=HOSTS,
    reconsume_times=st.integers(-(2**31), 2**31 - 1),
    prepared_transaction_offset=st.integers(-(2**63), 2**63 - 1),
    properties=PROPS,
    body_crc=st.integers(0, 2**31 - 1),
)
EXTRA = st.none() | st.dictionaries(st.sampled_from(["MIN_OFFSET", "MAX_OFFSET", "TRAN_MSG"]), TEXT, max_size=3)


def _twin_id(m: ModuleType) -> str:
    return m.__name__.rsplit("_", 1)[-1]


def test_the_compiled_twin_is_built_where_required() -> None:
    """``make test`` sets ROCKETQ_REQUIRE_NATIVE=1: CI must exercise the compiled twin, not silently skip it."""
    if os.environ.get("ROCKETQ_REQUIRE_NATIVE") == "1":
        assert pullcodec.compiled is not None, "rocketq.protocol._pullcodec_c was not built (C compiler?)"
        assert pullcodec.IMPLEMENTATION == "c" or os.environ.get("ROCKETQ_NO_EXTENSIONS")


def _state(msg: Any) -> tuple[Any, ...]:
    assert type(msg) is MessageExt
    return tuple(getattr(msg, name) for name in ATTRS)


def _outcome(twin: ModuleType, buf: Any, extra: dict[str, str] | None) -> Any:
    try:
        return [_state(m) for m in twin.decode_messages(buf, MessageExt, "broker-a", extra, decode_body)]
    except ProtocolError:
        return "error"


def _reference(buf: bytes, extra: dict[str, str] | None) -> Any:
    """What the consumer built before the twins: decode_record, then MessageExt.from_record."""
    try:
        msgs = [MessageExt.from_record(rec, "broker-a") for rec in iter_records(buf)]
    except ProtocolError:
        return "error"
    for m in msgs:
        m.properties.update(extra or {})
        tran = m.properties.get("TRAN_MSG")
        m.transaction_id = m.properties.get("UNIQ_KEY") if tran is not None and tran.lower() == "true" else None
    return [_state(m) for m in msgs]


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
@given(st.lists(records, min_size=0, max_size=5), EXTRA, st.booleans())
def test_twins_decode_like_the_record_decoder(twin: ModuleType, recs: list[MessageRecord],
                                              extra: dict[str, str] | None, view: bool) -> None:
    raw = b"".join(encode_record(r) for r in recs)
    buf = memoryview(raw) if view else raw
    got = _outcome(twin, buf, extra)
    assert got == _reference(raw, extra)
    assert got != "error"


@pytest.mark.skipif(len(TWINS) < 2, reason="the compiled twin is not built here (ROCKETQ_REQUIRE_NATIVE guards CI)")
@given(st.lists(records, min_size=1, max_size=3), st.integers(0, 10_000), st.integers(0, 255), st.integers(0, 50))
def test_twins_agree_on_damaged_bodies(recs: list[MessageRecord], pos: int, value: int, cut: int) -> None:
    raw = bytearray(b"".join(encode_record(r) for r in recs))
    raw[pos % len(raw)] = value
    damaged = bytes(raw[: max(0, len(raw) - cut)])
    expected = _reference(damaged, None)
    assert _outcome(TWINS[0], damaged, None) == expected
    assert _outcome(TWINS[1], damaged, None) == expected


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
def test_compressed_bodies_go_through_inflate(twin: ModuleType) -> None:
    rec = MessageRecord(topic="T", body=zlib.compress(b"x" * 500), sys_flag=SYSFLAG_COMPRESSED,
                        properties={"TAGS": "a"})
    plain = MessageRecord(topic="T", body=b"plain")
    raw = encode_record(rec) + encode_record(plain)
    calls: list[tuple[bytes, int]] = []

    def inflate(body: bytes, sys_flag: int) -> bytes:
        calls.append((body, sys_flag))
        return decode_body(body, sys_flag)

    msgs = twin.decode_messages(raw, MessageExt, "b", None, inflate)
    assert [m.body for m in msgs] == [b"x" * 500, b"plain"]
    assert calls == [(rec.body, SYSFLAG_COMPRESSED)]


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
def test_specific_errors(twin: ModuleType) -> None:
    good = encode_record(MessageRecord(topic="T", body=b"b", properties={"K": "v"}))
    for bad in (good[:-1], good[:40], good + b"\0" * 10, b"\xff" * 100):
        with pytest.raises(ProtocolError):
            twin.decode_messages(bad, MessageExt, "b", None, decode_body)
    bad_props = bytearray(good)
    bad_props[-1] = 0xFF  # "K\x01v" → "K\x01\xff": not UTF-8
    with pytest.raises(ProtocolError):
        twin.decode_messages(bytes(bad_props), MessageExt, "b", None, decode_body)
    assert twin.decode_messages(b"", MessageExt, "b", None, decode_body) == []


def test_the_compiled_twin_refuses_a_class_without_the_slots() -> None:
    if pullcodec.compiled is None:
        pytest.skip("the compiled twin is not built here (ROCKETQ_REQUIRE_NATIVE guards CI)")

    class Plain:
        pass

    raw = encode_record(MessageRecord(topic="T", body=b"b"))
    with pytest.raises((TypeError, AttributeError)):
        pullcodec.compiled.decode_messages(raw, Plain, "b", None, decode_body)
