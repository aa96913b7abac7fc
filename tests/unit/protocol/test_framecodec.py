"""The frame codec's two twins (compiled and pure) against each other and against decode_frame / encode_header."""

from __future__ import annotations

import json
import os
import struct
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.codes import RequestCode
from rocketq.errors import ProtocolError
from rocketq.protocol import _framecodec_py, framecodec
from rocketq.protocol.command import (
    FLAG_RESPONSE,
    SERIALIZE_JSON,
    SERIALIZE_ROCKETMQ,
    RemotingCommand,
    decode_frame,
    encode,
    encode_header,
    encode_prefix,
)
from rocketq.protocol.frame import FrameDecoder

TWINS: list[ModuleType] = [_framecodec_py]
if framecodec.compiled is not None:
    TWINS.append(framecodec.compiled)

I32 = st.integers(-(2**31), 2**31 - 1)
I16 = st.integers(-(2**15), 2**15 - 1)  # code and version are i16 in the ROCKETMQ binary header
TEXT = st.text(max_size=12) | st.sampled_from(["", "é中\x01\x02", "\"\\/\b\f\n\r\t\x00\x1f\x7f", "\U0001f600"])


def _twin_id(m: ModuleType) -> str:
    return m.__name__.rsplit("_", 1)[-1]


def test_the_compiled_twin_is_built_where_required() -> None:
    """``make test`` sets ROCKETQ_REQUIRE_NATIVE=1: CI must exercise the compiled twin, not silently skip it."""
    if os.environ.get("ROCKETQ_REQUIRE_NATIVE") == "1":
        assert framecodec.compiled is not None, "rocketq.protocol._framecodec_c was not built (C compiler?)"
        assert framecodec.IMPLEMENTATION == "c" or os.environ.get("ROCKETQ_NO_EXTENSIONS")


def _state(cmd: RemotingCommand) -> tuple[Any, ...]:
    fields = (cmd.code, cmd.opaque, cmd.flag, cmd.language, cmd.version, cmd.remark, cmd.ext_fields, cmd.body,
              cmd.serialize_type)  # fmt: skip
    # types too: a str where an int belongs would compare unequal anyway, but bytes vs bytearray would not
    return fields + tuple(type(f).__name__ for f in fields) + tuple(type(v).__name__ for v in cmd.ext_fields.values())


def _decoded(twin: ModuleType, data: bytes, max_frame_size: int = 1 << 20) -> Any:
    out, consumed, error = twin.decode_frames(bytearray(data), max_frame_size)
    return [_state(c) for c in out], consumed, None if error is None else (type(error), str(error))


def _reference(data: bytes) -> Any:
    """decode_frame on each frame: what every twin must return."""
    states: list[Any] = []
    pos = 0
    while len(data) - pos >= 4:
        (length,) = struct.unpack_from(">i", data, pos)
        if length < 4 or length > 1 << 20:
            return states, pos, (ProtocolError, f"frame length {length} outside [4, {1 << 20}]")
        if len(data) - pos - 4 < length:
            break
        try:
            states.append(_state(decode_frame(data[pos + 4 : pos + 4 + length])))
        except ProtocolError as exc:
            return states, pos, (ProtocolError, str(exc))
        pos += 4 + length
    return states, pos, None


def _frame(header: bytes, body: bytes = b"", serialize_type: int = SERIALIZE_JSON) -> bytes:
    return struct.pack(">II", 4 + len(header) + len(body), (serialize_type << 24) | len(header)) + header + body


commands = st.builds(
    RemotingCommand,
    code=I16,
    opaque=I32,
    flag=I32,
    language=st.sampled_from(["JAVA", "CPP", "PYTHON", "GO"]) | TEXT,
    version=I16,
    remark=st.none() | TEXT,
    ext_fields=st.dictionaries(TEXT, TEXT, max_size=6),
    body=st.binary(max_size=64),
    serialize_type=st.sampled_from([SERIALIZE_JSON, SERIALIZE_ROCKETMQ]),
)


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
@given(cmds=st.lists(commands, min_size=1, max_size=4), cut=st.integers(0, 40))
def test_encoded_commands_decode_as_decode_frame_says(twin: ModuleType, cmds: list[RemotingCommand], cut: int) -> None:
    data = b"".join(encode(c) for c in cmds)
    data = data[: max(0, len(data) - cut)]  # a partial last frame stays in the buffer
    assert _decoded(twin, data) == _reference(data)


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
@given(cmd=commands)
def test_encode_head_is_encode_prefix_of_encode_header(twin: ModuleType, cmd: RemotingCommand) -> None:
    assert twin.encode_head(cmd) == encode_prefix(cmd, encode_header(cmd))


# JSON headers of every shape a peer might send: numbers or text where ints belong, non-string extFields
# values, nested members, missing code, odd whitespace and escapes. The compiled twin hands what it does not
# parse itself to decode_frame, so the outcome must be identical, errors included.
SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)  # fmt: skip
INTISH = I32 | st.integers(-(2**33), 2**33) | SCALARS
JSON_HEADERS = st.fixed_dictionaries(
    {},
    optional={
        "code": INTISH,
        "opaque": INTISH,
        "flag": INTISH,
        "version": INTISH,
        "language": st.sampled_from(["JAVA", "CPP"]) | SCALARS,
        "remark": SCALARS,
        "extFields": (
            st.none() | st.dictionaries(TEXT, TEXT | SCALARS, max_size=5) | SCALARS | st.lists(SCALARS, max_size=2)
        ),
        "serializeTypeCurrentRPC": st.just("JSON") | SCALARS,
        "x-extra": SCALARS | st.dictionaries(TEXT, SCALARS, max_size=2) | st.lists(SCALARS, max_size=2),
    },
)


@given(
    header=JSON_HEADERS,
    ascii_only=st.booleans(),
    indent=st.none() | st.sampled_from([0, 2, "\t"]),
    body=st.binary(max_size=16),
)
def test_json_headers_of_any_shape_decode_alike(
    header: dict[str, Any], ascii_only: bool, indent: Any, body: bytes
) -> None:
    text = json.dumps(header, ensure_ascii=ascii_only, indent=indent).encode("utf-8", "surrogatepass")
    data = _frame(text, body)
    expected = _reference(data)
    for twin in TWINS:
        assert _decoded(twin, data) == expected, _twin_id(twin)


@given(cmd=commands, pos=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_damaged_headers_decode_alike(cmd: RemotingCommand, pos: int, byte: int) -> None:
    data = bytearray(encode(cmd))
    if len(data) > 8:
        data[8 + pos % (len(data) - 8)] = byte
    expected = _reference(bytes(data))
    for twin in TWINS:
        assert _decoded(twin, bytes(data)) == expected, _twin_id(twin)


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
@pytest.mark.parametrize(
    "header",
    [
        b'{"code":10,"extFields":{"a":"\\ud83d\\ude00","b":"\\u00e9\\u4e2d"}}',  # surrogate pair, BMP escapes
        b'{"code":10,"extFields":{"a":"\\ud83d"}}',  # lone high surrogate
        b'{"code":10,"extFields":{"a":"\\ude00"}}',  # lone low surrogate
        b'{"code":10,"extFields":{"a":"\\x"}}',  # unknown escape
        b'{"code":10,"extFields":{"a":"\xff"}}',  # invalid UTF-8
        b'{"code":10,"\xff":1}',  # invalid UTF-8 in a key nobody reads
        b'{"code":10,"extFields":{"a":"b",}}',  # trailing comma
        b'{"code":10,"extFields":{"a":"b"},"extFields":null}',  # duplicate member: the last wins
        b'{"code":10,"code":"11"}',
        b'{"code":01}',
        b'{"code":-0,"opaque":2147483647,"flag":-2147483648}',
        b'{"code":2147483648}',
        b'{"code":1.0}',
        b'{"code":1e2}',
        b'{"code":10,"remark":null,"language":"CPP"}',
        b'{"code":10,"language":null}',
        b'{"code":10,"language":3}',
        b' \t\r\n{ "code" : 10 , "extFields" : { "k" : "v" } } \n',
        b'{"code":10} x',
        b'{"code":10',
        b'{"co\\u0064e":10}',  # an escaped key: still "code"
        b'{"code":10,"extFields":{"a":1,"b":true,"c":null,"d":1.5}}',
        b'[1]',
        b'',
    ],
)
def test_header_corner_cases_decode_as_decode_frame_says(twin: ModuleType, header: bytes) -> None:
    data = _frame(header, b"body")
    assert _decoded(twin, data) == _reference(data)


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
def test_frames_before_a_bad_length_are_returned_with_the_error(twin: ModuleType) -> None:
    good = encode(RemotingCommand(code=10, ext_fields={"a": "b"}, body=b"x"))
    out, consumed, error = twin.decode_frames(bytearray(good * 2 + struct.pack(">i", 2) + b"rest"), 1024)
    assert [c.body for c in out] == [b"x", b"x"]
    assert consumed == 2 * len(good)
    assert isinstance(error, ProtocolError) and str(error) == "frame length 2 outside [4, 1024]"
    out, consumed, error = twin.decode_frames(bytearray(struct.pack(">i", 5000)), 1024)
    assert (out, consumed, str(error)) == ([], 0, "frame length 5000 outside [4, 1024]")


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
def test_encode_head_refuses_what_encode_header_refuses(twin: ModuleType) -> None:
    bad_value = RemotingCommand(code=10, ext_fields={"a": object()})  # type: ignore[dict-item]
    bad_key = RemotingCommand(code=10, ext_fields={1: "a"})  # type: ignore[dict-item]
    surrogate = RemotingCommand(code=10, ext_fields={"a": "\ud800"})
    unknown_type = RemotingCommand(code=10, serialize_type=7)
    for cmd in (bad_value, bad_key, surrogate, unknown_type):
        with pytest.raises(ProtocolError) as expected:
            encode_header(cmd)
        with pytest.raises(ProtocolError) as got:
            twin.encode_head(cmd)
        assert str(got.value) == str(expected.value)
    # outside the usual shape but encodable: the same bytes as the pure path
    big = RemotingCommand(code=2**40, opaque=-(2**62), body=memoryview(b"abc"), remark="r")
    number_value = RemotingCommand(code=10, ext_fields={"a": 1}, flag=True)  # type: ignore[dict-item]
    for cmd in (big, number_value):
        assert twin.encode_head(cmd) == encode_prefix(cmd, encode_header(cmd))


def test_the_frame_decoder_keeps_its_contract_on_either_twin() -> None:
    """FrameDecoder (on whichever twin runs) hands out frames as they complete and poisons itself on a bad one."""
    good = encode(RemotingCommand(code=10, opaque=7, ext_fields={"k": "v"}, body=b"payload"))
    decoder = FrameDecoder(max_frame_size=1024)
    assert decoder.feed(good[:5]) == []
    assert decoder.buffered == 5
    (cmd,) = decoder.feed(good[5:] + good[:3])
    assert (cmd.code, cmd.opaque, cmd.ext_fields, cmd.body) == (10, 7, {"k": "v"}, b"payload")
    assert decoder.buffered == 3
    out = decoder.feed(good[3:] + struct.pack(">i", 1))
    assert len(out) == 1 and decoder.error is not None
    with pytest.raises(ProtocolError):
        decoder.feed(good)


@pytest.mark.skipif(
    framecodec.compiled is None, reason="the compiled twin is not built here (ROCKETQ_REQUIRE_NATIVE guards CI)"
)
def test_the_compiled_twin_parses_the_usual_headers_itself() -> None:
    """Java, C++ and our own peers' headers take the compiled path; only the unusual ones go to decode_frame."""
    compiled = framecodec.compiled
    assert compiled is not None
    usual = [
        RemotingCommand(code=310, opaque=9, language="JAVA", version=395, body=b"x" * 100,
                        ext_fields={"a": "group", "b": "topic", "i": "UNIQ_KEY\x01ABC\x02WAIT\x01true"}),
        RemotingCommand(code=0, opaque=9, flag=1, remark="é \"quoted\"\n", ext_fields={"msgId": "7F00"}),
    ]
    data = b"".join(encode(c) for c in usual) + _frame(b'{"code":10,"extFields":null,"remark":null}')
    frames, heads = compiled.handed_over()
    out, _, error = compiled.decode_frames(bytearray(data), 1 << 20)
    assert error is None and len(out) == 3
    assert compiled.handed_over() == (frames, heads)
    compiled.decode_frames(bytearray(_frame(b'{"code":10,"extFields":{"n":1}}')), 1 << 20)
    assert compiled.handed_over() == (frames + 1, heads)
    # request and response codes are IntEnum members; str subclasses are written as their text (as orjson does)
    enum_code = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={"a": _Text("v")}, language=_Text("J"))
    for cmd in (*usual, enum_code):
        assert compiled.encode_head(cmd) == encode_prefix(cmd, encode_header(cmd))
    assert compiled.handed_over() == (frames + 1, heads)
    compiled.encode_head(RemotingCommand(code=10, flag=True))  # a bool is not an int to orjson
    assert compiled.handed_over() == (frames + 1, heads + 1)


class _Text(str):
    pass


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
@given(
    opaque=I32,
    version=I16,
    prefix=st.sampled_from(["7F00000100002A9F", "", "00000000000000000000000000000001000029D9"]) | TEXT,
    phys=st.integers(0, 2**63 - 1) | st.integers(-5, -1),
    queue_id=I32,
    queue_offset=st.integers(0, 2**63 - 1),
    region=TEXT,
    trace_on=st.sampled_from(["true", "false"]) | TEXT,
)
def test_send_reply_is_the_head_of_the_equivalent_response(
    twin: ModuleType, opaque: int, version: int, prefix: str, phys: int, queue_id: int, queue_offset: int,
    region: str, trace_on: str,
) -> None:  # fmt: skip
    ext = {
        "msgId": f"{prefix}{phys:016X}",
        "queueId": str(queue_id),
        "queueOffset": str(queue_offset),
        "MSG_REGION": region,
        "TRACE_ON": trace_on,
    }
    reply = RemotingCommand(code=0, opaque=opaque, flag=1, language="JAVA", version=version, ext_fields=ext)
    head = twin.encode_send_reply(opaque, version, prefix, phys, queue_id, queue_offset, region, trace_on)
    assert head == encode_prefix(reply, encode_header(reply))
    assert decode_frame(head[4:]) == reply


def _cmd(code: int, language: str = "JAVA", flag: int = 0) -> RemotingCommand:
    return RemotingCommand(code, 1, flag, language, 399, None, {}, b"")


class _OddCommand(RemotingCommand):
    """Not the decoder's type: the compiled twin hands such a list to the pure one."""


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
def test_a_run_of_requests_ends_at_another_code_language_or_a_response(twin: ModuleType) -> None:
    send, pull = int(RequestCode.SEND_MESSAGE_V2), int(RequestCode.PULL_MESSAGE)
    cmds = [_cmd(send), _cmd(send), _cmd(send, "CPP"), _cmd(send, "CPP"), _cmd(send, "CPP", FLAG_RESPONSE),
            _cmd(pull), _cmd(pull), _cmd(send)]  # fmt: skip
    assert [twin.request_run_end(cmds, i) for i in (0, 1, 2, 3, 5, 6, 7)] == [2, 2, 4, 4, 7, 7, 8]
    # an equal code that is another int object, and a language that is another str object, still match
    same = [_cmd(send), _cmd(int(str(send))), _cmd(send, "".join(["JA", "VA"]))]
    assert twin.request_run_end(same, 0) == 3


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
def test_a_run_with_commands_of_another_type_reads_as_the_pure_twin_says(twin: ModuleType) -> None:
    send = int(RequestCode.SEND_MESSAGE_V2)
    odd = _OddCommand(send, 2, 0, "JAVA", 399, None, {}, b"")
    cmds = [_cmd(send), odd, _cmd(send), _cmd(send, flag=FLAG_RESPONSE)]
    assert twin.request_run_end(cmds, 0) == 3 == _framecodec_py.request_run_end(cmds, 0)
    assert twin.request_run_end([odd, _cmd(send), _cmd(0)], 0) == 2
