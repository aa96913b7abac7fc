"""Golden frames: hand-assembled bytes (tests/vectors/frames.json) against the sans-I/O codec."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from rocketq.errors import ProtocolError
from rocketq.protocol import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    SERIALIZE_JSON,
    SERIALIZE_ROCKETMQ,
    FrameDecoder,
    RemotingCommand,
    decode_frame,
    encode,
)

VECTORS = json.loads((Path(__file__).parents[2] / "vectors" / "frames.json").read_text())["frames"]


def assemble(parts: list[list[str]]) -> bytes:
    out = bytearray()
    for kind, data, _note in parts:
        out += bytes.fromhex(data) if kind == "hex" else data.encode()
    return bytes(out)


def check(cmd: RemotingCommand, expect: dict[str, Any]) -> None:
    assert cmd.serialize_type == expect["serialize_type"]
    assert cmd.code == expect["code"]
    assert cmd.opaque == expect["opaque"]
    assert cmd.flag == expect["flag"]
    assert cmd.language == expect["language"]
    assert cmd.version == expect["version"]
    assert cmd.remark == expect["remark"]
    assert cmd.ext_fields == expect["ext_fields"]
    assert bytes(cmd.body) == bytes.fromhex(expect["body_hex"])


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_is_self_consistent(vector: dict[str, Any]) -> None:
    frame = assemble(vector["parts"])
    total, word = struct.unpack_from(">II", frame)
    assert total == len(frame) - 4
    assert word >> 24 == vector["expect"]["serialize_type"]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_decode_frame(vector: dict[str, Any]) -> None:
    frame = assemble(vector["parts"])
    check(decode_frame(frame[4:]), vector["expect"])


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_frame_decoder(vector: dict[str, Any]) -> None:
    frame = assemble(vector["parts"])
    decoder = FrameDecoder()
    (cmd,) = decoder.feed(frame)
    check(cmd, vector["expect"])
    assert decoder.buffered == 0


@pytest.mark.parametrize(
    "vector", [v for v in VECTORS if v["reencode"]], ids=[v["name"] for v in VECTORS if v["reencode"]]
)
def test_reencode_is_byte_identical(vector: dict[str, Any]) -> None:
    frame = assemble(vector["parts"])
    assert encode(decode_frame(frame[4:])) == frame


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_reencode_decodes_to_the_same_command(vector: dict[str, Any]) -> None:
    cmd = decode_frame(assemble(vector["parts"])[4:])
    again = encode(cmd)
    assert decode_frame(again[4:]) == cmd


def test_every_binary_vector_reencodes() -> None:
    # The brief: re-encode equality for the binary form (except the empty-string quirk vector).
    binary = [v["name"] for v in VECTORS if v["expect"]["serialize_type"] == SERIALIZE_ROCKETMQ and v["reencode"]]
    assert len(binary) >= 2


# ------------------------------------------------------------------------------------------- flag bits


@pytest.mark.parametrize("serialize_type", [SERIALIZE_JSON, SERIALIZE_ROCKETMQ])
@pytest.mark.parametrize(
    ("flag", "is_response", "is_oneway"),
    [(0, False, False), (FLAG_RESPONSE, True, False), (FLAG_ONEWAY, False, True), (3, True, True)],
)
def test_flag_bits(serialize_type: int, flag: int, is_response: bool, is_oneway: bool) -> None:
    cmd = RemotingCommand(code=34, opaque=1, flag=flag, serialize_type=serialize_type)
    back = decode_frame(encode(cmd)[4:])
    assert back.flag == flag
    assert back.is_response is is_response
    assert back.is_oneway is is_oneway


def test_request_constructor_sets_oneway_bit() -> None:
    assert RemotingCommand.request(34, oneway=True).flag == FLAG_ONEWAY
    assert RemotingCommand.request(34).flag == 0


def test_response_copies_opaque_and_serialize_type() -> None:
    req = RemotingCommand(code=105, opaque=42, serialize_type=SERIALIZE_ROCKETMQ)
    resp = req.response(0, "ok")
    assert (resp.opaque, resp.flag, resp.serialize_type, resp.remark) == (42, FLAG_RESPONSE, SERIALIZE_ROCKETMQ, "ok")


def test_response_to_cpp_is_always_json() -> None:
    req = RemotingCommand(code=105, opaque=1, language="CPP", serialize_type=SERIALIZE_ROCKETMQ)
    assert req.response(0).serialize_type == SERIALIZE_JSON


# -------------------------------------------------------------------------------------- binary quirks


def test_binary_empty_remark_and_values_read_back_as_absent() -> None:
    cmd = RemotingCommand(
        code=10, remark="", ext_fields={"empty": "", "k": "v"}, serialize_type=SERIALIZE_ROCKETMQ
    )
    back = decode_frame(encode(cmd)[4:])
    assert back.remark is None
    assert back.ext_fields == {"k": "v"}


def test_json_keeps_empty_strings() -> None:
    cmd = RemotingCommand(code=10, remark="", ext_fields={"empty": ""})
    back = decode_frame(encode(cmd)[4:])
    assert back.remark == ""
    assert back.ext_fields == {"empty": ""}


def test_binary_header_layout_for_a_non_ascii_remark() -> None:
    cmd = RemotingCommand(code=1, opaque=2, flag=1, version=3, remark="é", serialize_type=SERIALIZE_ROCKETMQ)
    frame = encode(cmd)
    # 21 fixed bytes + 2-byte UTF-8 remark, no extFields.
    assert frame[4:8] == bytes.fromhex("01000017")
    assert frame[8:] == bytes.fromhex("0001" "00" "0003" "00000002" "00000001" "00000002" "C3A9" "00000000")


# ------------------------------------------------------------------------------------ C++-style JSON


def test_cpp_json_numbers_and_booleans_in_extfields_are_coerced() -> None:
    header = b'{"code":10,"extFields":{"a":1,"b":true,"c":-2.5,"d":null,"e":"s"},"flag":0,"opaque":0}\n'
    cmd = decode_frame(struct.pack(">I", len(header)) + header)
    assert cmd.ext_fields == {"a": "1", "b": "true", "c": "-2.5", "e": "s"}


def test_json_header_members_in_any_order_and_unknown_members_ignored() -> None:
    header = b'{"version":409,"zzz":[1,2],"opaque":9,"code":"105","flag":0,"language":"JAVA"}'
    cmd = decode_frame(struct.pack(">I", len(header)) + header + b"BODY")
    assert (cmd.code, cmd.opaque, cmd.version) == (105, 9, 409)
    assert bytes(cmd.body) == b"BODY"


def test_json_header_is_written_with_numbers_and_string_extfields() -> None:
    cmd = RemotingCommand(code=0, opaque=3, flag=1, ext_fields={"queueId": "1"})
    header = json.loads(encode(cmd)[8:])
    assert header["code"] == 0 and header["opaque"] == 3 and header["flag"] == 1
    assert header["extFields"] == {"queueId": "1"}
    assert header["language"] == "JAVA"


@pytest.mark.parametrize(
    "header",
    [
        b"not json",
        b"[1,2]",
        b'{"code":1.5}',
        b'{"code":true}',
        b'{"code":4294967296}',
        b'{"code":1,"extFields":[1]}',
        b'{"code":1,"extFields":{"a":[1]}}',
        b'{"code":1,"extFields":{"a":{"b":1}}}',
        b'{"code":"x"}',
        b'\xff\xfe',
    ],
)
def test_bad_json_headers_raise_protocol_error(header: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_frame(struct.pack(">I", len(header)) + header)


def test_a_header_without_code_reads_as_code_0() -> None:
    """As Java's fastjson leaves RemotingCommand.code at 0: answered "request type 0 not supported", not dropped."""
    header = b'{"opaque":1,"flag":0}'
    cmd = decode_frame(struct.pack(">I", len(header)) + header)
    assert (cmd.code, cmd.opaque) == (0, 1)


def test_unknown_serialize_type_raises() -> None:
    with pytest.raises(ProtocolError):
        decode_frame(bytes.fromhex("02000000"))


def test_header_length_beyond_frame_raises() -> None:
    with pytest.raises(ProtocolError):
        decode_frame(bytes.fromhex("00000010") + b"{}")


@pytest.mark.parametrize("length", [-1, 0, 3, 16 * 1024 * 1024 + 1])
def test_frame_decoder_rejects_bad_lengths_and_stays_failed(length: int) -> None:
    decoder = FrameDecoder()
    with pytest.raises(ProtocolError):
        decoder.feed(struct.pack(">i", length) + b"\x00" * 8)
    with pytest.raises(ProtocolError):
        decoder.feed(b"")


def test_frame_decoder_waits_for_the_whole_frame() -> None:
    frame = encode(RemotingCommand(code=105, ext_fields={"topic": "T"}, body=b"xyz"))
    decoder = FrameDecoder()
    assert decoder.feed(frame[:3]) == []
    assert decoder.feed(frame[3:-1]) == []
    assert decoder.buffered == len(frame) - 1
    (cmd,) = decoder.feed(frame[-1:] + frame)[:1]
    assert bytes(cmd.body) == b"xyz"
    assert decoder.buffered == 0


def test_frames_before_a_bad_one_are_returned_then_the_error_is_raised() -> None:
    good = encode(RemotingCommand(code=105, opaque=1))
    decoder = FrameDecoder()
    (cmd,) = decoder.feed(good + struct.pack(">i", -1) + b"junk")
    assert cmd.opaque == 1
    assert isinstance(decoder.error, ProtocolError)
    with pytest.raises(ProtocolError):
        decoder.feed(good)
