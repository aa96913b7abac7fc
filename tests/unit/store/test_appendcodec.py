"""The batch encoder's two twins (compiled and pure) against each other and against the record decoder."""

from __future__ import annotations

import os
import struct
import zlib
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.common.hashing import index_key_hash, tags_hash_code, unsigned_hash
from rocketq.protocol.message import SYSFLAG_STOREHOST_V6, decode_properties, decode_record, encode_host
from rocketq.store import _appendcodec_py, appendcodec

TWINS: list[ModuleType] = [_appendcodec_py]
if appendcodec.compiled is not None:
    TWINS.append(appendcodec.compiled)

TOPIC = "TopicTest"
TOPIC_TAIL = bytes((len(TOPIC),)) + TOPIC.encode()
BORN = encode_host(("10.1.2.3", 54321))
STORE = encode_host(("127.0.0.1", 10911))
STORE_V6 = encode_host(("::1", 10911))
PREFIX = unsigned_hash(TOPIC + "#")[0]


def test_the_compiled_twin_is_built_where_required() -> None:
    """``make test`` sets ROCKETQ_REQUIRE_NATIVE=1: CI must exercise the compiled twin, not silently skip it."""
    if os.environ.get("ROCKETQ_REQUIRE_NATIVE") == "1":
        assert appendcodec.compiled is not None, "rocketq.store._appendcodec_c was not built (C compiler, zlib.h?)"
        assert len(TWINS) == 2


def item(body: bytes, props: bytes, flag: int = 0) -> bytes:
    total = 20 + len(body) + 2 + len(props)
    return struct.pack(">iiiii", total, 0, 0, flag, len(body)) + body + struct.pack(">h", len(props)) + props


def props_bytes(d: dict[str, str], trailing: bool = True) -> bytes:
    s = "".join(f"{k}\x01{v}\x02" for k, v in d.items())
    return (s if trailing or not s else s[:-1]).encode()


def run(twin: ModuleType, body: bytes, extra: bytes = b"", store_b: bytes = STORE, prefix: int = PREFIX,
        pos: int = 16) -> tuple[bytearray, tuple[int, bytes, list[int], list[int], str]]:
    fixed = 72 + len(BORN) + len(store_b)
    _n, total, _longest = twin.measure_batch(body, extra, fixed, len(TOPIC_TAIL))
    buf = bytearray(pos + total + 8)
    sys_flag = SYSFLAG_STOREHOST_V6 if len(store_b) == 20 else 0
    out = twin.write_batch(buf, pos, body, extra, TOPIC_TAIL, 3, sys_flag, 1_700_000_000_000, BORN, 1_700_000_000_123,
                           store_b, 2, 40, 1_000_000, prefix)
    return buf, out


@pytest.mark.parametrize("twin", TWINS, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
def test_records_decode_back(twin: ModuleType) -> None:
    body = item(b"hello", props_bytes({"TAGS": "TagA", "UNIQ_KEY": "AC1100", "KEYS": "k1  k2"}), flag=7)
    body += item(b"", props_bytes({"WAIT": "true"}, trailing=False))
    body += item(b"x" * 300, b"")
    extra = b"CLUSTER\x01DefaultCluster\x02"
    buf, (end, units, tags, index, ids) = run(twin, body, extra)
    assert end == len(buf) - 8
    pos = 16
    recs = []
    while pos < end:
        rec = decode_record(buf, pos)
        recs.append((pos, rec))
        pos += rec.store_size
    assert [r.body for _, r in recs] == [b"hello", b"", b"x" * 300]
    assert [r.flag for _, r in recs] == [7, 0, 0]
    assert [r.queue_offset for _, r in recs] == [40, 41, 42]
    assert [r.commit_log_offset for _, r in recs] == [1_000_000 + p for p, _ in recs]
    assert all(r.topic == TOPIC and r.queue_id == 3 and r.reconsume_times == 2 for _, r in recs)
    assert all(r.body_crc == zlib.crc32(r.body) & 0x7FFFFFFF for _, r in recs)
    cluster = {"CLUSTER": "DefaultCluster"}
    assert recs[0][1].properties == {"TAGS": "TagA", "UNIQ_KEY": "AC1100", "KEYS": "k1  k2", **cluster}
    assert recs[1][1].properties == {"WAIT": "true", "CLUSTER": "DefaultCluster"}  # 0x02 inserted between
    assert recs[2][1].properties == {"CLUSTER": "DefaultCluster"}
    assert tags == [tags_hash_code("TagA"), 0, 0]
    phys0 = recs[0][1].commit_log_offset
    assert index == [index_key_hash(f"{TOPIC}#AC1100"), phys0, index_key_hash(f"{TOPIC}#k1"), phys0,
                     index_key_hash(f"{TOPIC}#k2"), phys0]
    assert struct.unpack(">" + "qiq" * 3, units) == tuple(
        v for p, r in recs for v in (1_000_000 + p, r.store_size, tags_hash_code(r.properties.get("TAGS")))
    )
    assert ids.split(",") == [(STORE + struct.pack(">q", 1_000_000 + p)).hex().upper() for p, _ in recs]


@pytest.mark.parametrize("twin", TWINS, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
def test_no_index_and_ipv6_store_host(twin: ModuleType) -> None:
    body = item(b"a", props_bytes({"UNIQ_KEY": "U1", "KEYS": "K"}))
    buf, (_end, _units, _tags, index, ids) = run(twin, body, store_b=STORE_V6, prefix=-1)
    assert index == []
    assert len(ids) == 2 * (20 + 8)
    assert decode_record(buf, 16).store_host == ("::1", 10911)


MALFORMED = [
    b"",
    b"\x00\x00\x00\x10",  # truncated head
    struct.pack(">iiiii", 21, 0, 0, 0, 0) + b"\x00\x00",  # total below the minimum
    struct.pack(">iiiii", 30, 0, 0, 0, 0) + b"\x00\x00",  # total past the end
    struct.pack(">iiiii", 22, 0, 0, 0, -1) + b"\x00\x00",  # negative body length
    struct.pack(">iiiii", 23, 0, 0, 0, 0) + b"\x00\x01\x41",  # fine ...
    struct.pack(">iiiii", 23, 0, 0, 0, 0) + b"\x00\x02\x41",  # properties run past the item
]


@pytest.mark.parametrize("twin", TWINS, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
@pytest.mark.parametrize("body", [b for i, b in enumerate(MALFORMED) if i != 5])
def test_malformed_bodies_raise_and_write_nothing(twin: ModuleType, body: bytes) -> None:
    with pytest.raises(ValueError, match="malformed batch body"):
        twin.measure_batch(body, b"", 88, len(TOPIC_TAIL))
    buf = bytearray(4096)
    with pytest.raises(ValueError, match="malformed batch body"):
        twin.write_batch(buf, 0, body, b"", TOPIC_TAIL, 0, 0, 0, BORN, 0, STORE, 0, 0, 0, PREFIX)
    assert buf == bytearray(4096)


@pytest.mark.parametrize("twin", TWINS, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
@pytest.mark.parametrize("bad", [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"])
def test_invalid_utf8_in_a_hashed_value_raises_before_writing(twin: ModuleType, bad: bytes) -> None:
    for name in (b"TAGS", b"KEYS", b"UNIQ_KEY"):
        body = item(b"ok", b"") + item(b"x", name + b"\x01" + bad + b"\x02")
        buf = bytearray(4096)
        with pytest.raises(ValueError, match="UTF-8"):
            twin.write_batch(buf, 0, body, b"", TOPIC_TAIL, 0, 0, 0, BORN, 0, STORE, 0, 0, 0, PREFIX)
        assert buf == bytearray(4096)


@pytest.mark.parametrize("twin", TWINS, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
def test_java_hash_matches_the_string_hash(twin: ModuleType) -> None:
    for text in ["", "TagA", "héllo", "日本語", "emoji \U0001f600 x", "\U00010000\U0010ffff"]:
        assert twin.java_hash_utf8(text.encode()) == unsigned_hash(text)[0]
        assert twin.java_hash_utf8(text.encode(), PREFIX) == unsigned_hash(TOPIC + "#" + text)[0]


_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), max_size=12)
_value = st.one_of(_text, st.sampled_from(["", " ", "a b", " x  y "]))
_raw_value = st.one_of(_value.map(str.encode), st.binary(max_size=6))
_name = st.one_of(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "X"]), _text)
_piece = st.tuples(_name.map(str.encode), _raw_value).map(lambda nv: nv[0] + b"\x01" + nv[1])
_props = st.lists(st.one_of(_piece, st.binary(max_size=5)), max_size=5).flatmap(
    lambda pieces: st.sampled_from([b"\x02".join(pieces), b"\x02".join(pieces) + b"\x02"])
)
_items = st.lists(st.tuples(st.binary(max_size=200), _props, st.integers(-(2**31), 2**31 - 1)), min_size=1, max_size=6)


@pytest.mark.skipif(len(TWINS) < 2, reason="the compiled twin is not built here (ROCKETQ_REQUIRE_NATIVE guards CI)")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=_items, extra=_props, v6=st.booleans(), index=st.booleans())
def test_twins_agree_byte_for_byte(items: list[tuple[bytes, bytes, int]], extra: bytes, v6: bool, index: bool) -> None:
    body = b"".join(item(b, p, f) for b, p, f in items)
    store_b = STORE_V6 if v6 else STORE
    prefix = PREFIX if index else -1
    py, c = TWINS
    assert py.measure_batch(body, extra, 100, len(TOPIC_TAIL)) == c.measure_batch(body, extra, 100, len(TOPIC_TAIL))
    outcomes = []
    for twin in (py, c):
        try:
            buf, out = run(twin, body, extra, store_b, prefix)
            outcomes.append((bytes(buf), out))
        except ValueError as exc:
            outcomes.append(("error", str(exc)))
    assert outcomes[0] == outcomes[1]
    if outcomes[0][0] != "error":
        buf2, (end, _u, tags, _i, _ids) = run(py, body, extra, store_b, prefix)
        pos, k = 16, 0
        while pos < end:
            raw = items[k][1] + (b"\x02" if items[k][1] and extra and items[k][1][-1] != 2 else b"") + extra
            try:
                expected = decode_properties(raw.decode("utf-8"))
            except UnicodeDecodeError:  # the store keeps such bytes as they came; only hashed values must be UTF-8
                expected = None
            size = struct.unpack_from(">i", buf2, pos)[0]
            if expected is not None:
                rec = decode_record(buf2, pos)
                assert rec.properties == expected
                assert rec.body == items[k][0]
                assert tags[k] == tags_hash_code(expected.get("TAGS"))
            pos += size
            k += 1
        assert k == len(items)


# ------------------------------------------------------------------------------------------------ index

_key_text = st.text(st.characters(blacklist_characters=" "), min_size=0, max_size=10)


@pytest.mark.parametrize("twin", TWINS, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
@settings(max_examples=150, deadline=None)
@given(uniq=st.one_of(st.none(), _key_text), keys=st.one_of(st.none(), st.lists(_key_text, max_size=4).map(" ".join)))
def test_index_entries_hash_topic_hash_key(twin: ModuleType, uniq: str | None, keys: str | None) -> None:
    expected: list[int] = []
    for k in ([uniq] if uniq else []) + ([k for k in keys.split(" ") if k] if keys else []):
        expected += [index_key_hash(f"{TOPIC}#{k}"), 77]
    assert twin.index_entries(PREFIX, 77, uniq, keys) == expected


def test_index_entries_with_a_lone_surrogate_match_java() -> None:
    for twin in TWINS:
        assert twin.index_entries(PREFIX, 1, "a\ud800b", None) == [index_key_hash(f"{TOPIC}#a\ud800b"), 1]


_SLOTS, _ENTRIES = 7, 24


@pytest.mark.skipif(len(TWINS) < 2, reason="the compiled twin is not built here (ROCKETQ_REQUIRE_NATIVE guards CI)")
@settings(max_examples=200, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**40)), max_size=8).map(
            lambda pairs: [v for p in pairs for v in p]
        ),
        max_size=6,
    ),
    garbage_slots=st.dictionaries(st.integers(0, _SLOTS - 1), st.integers(-5, 40), max_size=3),
    times=st.lists(st.integers(0, 10**6), min_size=6, max_size=6),
)
def test_index_twins_agree(batches: list[list[int]], garbage_slots: dict[int, int], times: list[int]) -> None:
    """Same bytes and header fields from both twins, including slots left pointing past the count by a crash."""
    size = 40 + _SLOTS * 4 + _ENTRIES * 20
    results = []
    for twin in TWINS:
        mm = bytearray(size)
        for slot, value in garbage_slots.items():
            struct.pack_into(">i", mm, 40 + slot * 4, value)
        state = (1, 0, 0, 0, 0, 0)  # count, slot_count, begin_ts, begin_phy, end_ts, end_phy
        trace = []
        for entries, t in zip(batches, times, strict=False):
            start = 0
            out = twin.index_put_many(mm, _SLOTS, _ENTRIES, *state, entries, start, 1_700_000_000_000 + t)
            trace.append(out)
            state = out[1:]
        results.append((bytes(mm), trace))
    assert results[0] == results[1]


@pytest.mark.parametrize("twin", TWINS, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
def test_index_put_many_stops_when_full(twin: ModuleType) -> None:
    mm = bytearray(40 + _SLOTS * 4 + 3 * 20)
    entries = [5, 100, 6, 200, 12, 300]
    nxt, count, *_ = twin.index_put_many(mm, _SLOTS, 3, 1, 0, 0, 0, 0, 0, entries, 0, 1000)
    assert (nxt, count) == (4, 3)  # entries 1 and 2 fill the file (entry 0 is never used)
    with pytest.raises(ValueError):
        twin.index_put_many(mm, _SLOTS, 3, 1, 0, 0, 0, 0, 0, [-1, 5], 0, 1000)


# ------------------------------------------------------------------------------------------- one record


@pytest.mark.skipif(len(TWINS) < 2, reason="the compiled twin is not built here (ROCKETQ_REQUIRE_NATIVE guards CI)")
@settings(max_examples=150, deadline=None)
@given(body=st.binary(max_size=300), props=st.binary(max_size=100), v6=st.booleans(), ints=st.tuples(
    st.integers(0, 2**31 - 1), st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**62), st.integers(0, 2**62),
    st.integers(0, 2**40), st.integers(0, 2**31 - 1), st.integers(0, 2**62)))
def test_write_record_twins_agree(body: bytes, props: bytes, v6: bool, ints: tuple[int, ...]) -> None:
    queue_id, flag, queue_offset, phys, born_ts, reconsume, prepared = ints
    store_b = STORE_V6 if v6 else STORE
    sys_flag = SYSFLAG_STOREHOST_V6 if v6 else 0
    outs = []
    for twin in TWINS:
        buf = bytearray(600)
        size = twin.write_record(buf, 7, body, TOPIC_TAIL, props, queue_id, flag, queue_offset, phys, sys_flag,
                                 born_ts, BORN, born_ts + 1, store_b, reconsume, prepared)
        outs.append((size, bytes(buf)))
    assert outs[0] == outs[1]
    size, raw = outs[0]
    assert struct.unpack_from(">i", raw, 7)[0] == size
    if not props:
        rec = decode_record(raw, 7)
        assert (rec.body, rec.queue_offset, rec.commit_log_offset, rec.flag) == (body, queue_offset, phys, flag)
        assert rec.body_crc == zlib.crc32(body) & 0x7FFFFFFF


@pytest.mark.parametrize("twin", TWINS, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
def test_write_record_refuses_what_does_not_fit(twin: ModuleType) -> None:
    buf = bytearray(100)
    with pytest.raises(ValueError):
        twin.write_record(buf, 0, b"x" * 50, TOPIC_TAIL, b"", 0, 0, 0, 0, 0, 0, BORN, 0, STORE, 0, 0)
    assert buf == bytearray(100)
