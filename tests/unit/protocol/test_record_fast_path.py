"""decode_record's IPv4 fast path against the general decoder, on valid, mutated and truncated records."""

from __future__ import annotations

import string
from dataclasses import astuple
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rocketq.errors import ProtocolError
from rocketq.protocol.message import MessageRecord, _decode_record_general, decode_record, encode_record

HOSTS = st.tuples(st.ip_addresses(v=4).map(str) | st.ip_addresses(v=6).map(str), st.integers(0, 65535))
TEXT = st.text(alphabet=string.ascii_letters + "é中\x01", min_size=1, max_size=12)
records = st.builds(
    MessageRecord,
    topic=st.text(alphabet=string.ascii_letters + "%_-", min_size=1, max_size=127),
    body=st.binary(max_size=200),
    queue_id=st.integers(-(2**31), 2**31 - 1),
    queue_offset=st.integers(0, 2**40),
    commit_log_offset=st.integers(0, 2**40),
    sys_flag=st.integers(0, 0x70F),
    born_host=HOSTS,
    store_host=HOSTS,
    properties=st.dictionaries(TEXT, TEXT, max_size=4),
)


def _outcome(fn: Any, buf: Any, pos: int, with_body: bool) -> Any:
    try:
        return astuple(fn(buf, pos, with_body=with_body))
    except ProtocolError as exc:
        return ("error", type(exc))


@given(records, st.integers(0, 3), st.booleans(), st.booleans())
def test_fast_path_equals_the_general_decoder(rec: MessageRecord, lead: int, view: bool, with_body: bool) -> None:
    raw = b"\0" * lead + encode_record(rec)
    buf = memoryview(raw) if view else raw
    assert _outcome(decode_record, buf, lead, with_body) == _outcome(_decode_record_general, buf, lead, with_body)


@given(records, st.integers(0, 10_000), st.integers(0, 255), st.integers(0, 50))
def test_fast_path_equals_the_general_decoder_on_damage(rec: MessageRecord, pos: int, value: int, cut: int) -> None:
    raw = bytearray(encode_record(rec))
    raw[pos % len(raw)] = value
    damaged = bytes(raw[: len(raw) - cut])
    assert _outcome(decode_record, damaged, 0, True) == _outcome(_decode_record_general, damaged, 0, True)
