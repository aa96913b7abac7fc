"""Client-side message checks, the Java property string, batch encoding and splitting, compression bits."""

from __future__ import annotations

import struct
import zlib

import pytest

from rocketq.client._validators import (
    check_message,
    check_topic,
    encode_batch_item,
    properties_to_string,
    split_batch,
)
from rocketq.client.errors import InvalidMessageError
from rocketq.client.message import Message, decode_body
from rocketq.protocol.message import BatchItem, decode_batch


def test_topic_and_message_checks() -> None:
    check_topic("%RETRY%group-1_x|y")
    for bad in ("", "  ", "a b", "x" * 128, "中文"):
        with pytest.raises(InvalidMessageError):
            check_topic(bad)
    with pytest.raises(InvalidMessageError, match="forbidden"):
        check_message(Message("SCHEDULE_TOPIC_XXXX", b"x"), 100)
    with pytest.raises(InvalidMessageError, match="zero"):
        check_message(Message("T", b""), 100)
    with pytest.raises(InvalidMessageError, match="over max"):
        check_message(Message("T", b"x" * 101), 100)


def test_message_checks_repeat_for_known_topics() -> None:
    # the topic part of the check is remembered per name; everything else is checked on every message
    for _ in range(3):
        check_message(Message("Known-T", b"x"), 100)
        with pytest.raises(InvalidMessageError, match="zero"):
            check_message(Message("Known-T", b""), 100)
        with pytest.raises(InvalidMessageError, match="over max"):
            check_message(Message("Known-T", b"x" * 101), 100)
        with pytest.raises(InvalidMessageError, match="forbidden"):
            check_message(Message("OFFSET_MOVED_EVENT", b"x"), 100)
        with pytest.raises(InvalidMessageError, match="illegal"):
            check_message(Message("bad topic", b"x"), 100)
        m = Message("Known-T", b"x")
        m.topic = ""
        with pytest.raises(InvalidMessageError, match="blank"):
            check_message(m, 100)


def test_message_constructor_variants() -> None:
    assert Message("T", b"x").properties == {"WAIT": "true"}
    assert Message("T", "x", wait_store_msg_ok=False).properties == {"WAIT": "false"}
    assert list(Message("T", b"x", tags="A", properties={"p": "1"}).properties.items()) == [
        ("p", "1"), ("TAGS", "A"), ("WAIT", "true"),
    ]  # fmt: skip
    assert Message("T", b"x", properties={"WAIT": "false"}).properties == {"WAIT": "false"}
    assert Message("T", b"x", deliver_time_ms=0).properties == {"TIMER_DELIVER_MS": "0", "WAIT": "true"}
    raw = bytearray(b"abc")
    m = Message("T", raw)
    raw[0] = 0
    assert m.body == b"abc" and type(m.body) is bytes
    assert Message("T", memoryview(b"mv")).body == b"mv"


def test_properties_string_like_java() -> None:
    assert properties_to_string({"a": "1", "b": "2"}) == "a\x011\x02b\x012"
    assert properties_to_string({}) == ""


def test_batch_item_layout_and_broker_decoder() -> None:
    item = encode_batch_item(7, b"hello", {"UNIQ_KEY": "U1", "WAIT": "true"})
    total, magic, crc, flag, body_len = struct.unpack_from(">iiiii", item)
    assert (total, magic, crc, flag, body_len) == (len(item), 0, 0, 7, 5)
    decoded = decode_batch(item + encode_batch_item(0, b"x", {"k": "v"}))
    assert decoded[0] == BatchItem(7, b"hello", {"UNIQ_KEY": "U1", "WAIT": "true"})
    assert decoded[1].properties == {"k": "v"}


def test_split_batch_at_the_size_limit() -> None:
    encoded = [b"x" * 400, b"x" * 400, b"x" * 300, b"x" * 1000, b"x" * 10]
    assert split_batch(encoded, 1000) == [[0, 1], [2], [3], [4]]
    assert split_batch([b"x"] * 5, 4 * 1024 * 1024) == [[0, 1, 2, 3, 4]]
    with pytest.raises(InvalidMessageError):
        split_batch([b"x" * 1001], 1000)


def test_four_mib_split_of_real_messages() -> None:
    body = b"y" * (1024 * 1024)
    encoded = [encode_batch_item(0, body, {"UNIQ_KEY": f"U{i}"}) for i in range(9)]
    groups = split_batch(encoded, 4 * 1024 * 1024)
    assert [len(g) for g in groups] == [3, 3, 3]  # 4 x (1 MiB + overhead) would exceed 4 MiB
    assert all(sum(len(encoded[i]) for i in g) <= 4 * 1024 * 1024 for g in groups)


def test_decode_body_compression_flags() -> None:
    raw = b"z" * 5000
    packed = zlib.compress(raw, 5)
    assert decode_body(packed, 0x1) == raw  # C++: bit 0 only (type 0 = zlib)
    assert decode_body(packed, 0x1 | 0x300) == raw  # Java 4.9.8: zlib type bits
    assert decode_body(packed, 0) == packed
    assert decode_body(b"garbage", 0x1) == b"garbage"  # kept as is, like Java
