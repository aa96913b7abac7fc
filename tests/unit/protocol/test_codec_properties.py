"""Property tests of the frame codec: round trips, chunked feeding, garbage and mutated input."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.codes import LanguageCode
from rocketq.errors import ProtocolError
from rocketq.protocol import SERIALIZE_JSON, SERIALIZE_ROCKETMQ, FrameDecoder, RemotingCommand, decode_frame, encode
from rocketq.protocol.command import encode_header

INT32 = st.integers(-(2**31), 2**31 - 1)
INT16 = st.integers(-(2**15), 2**15 - 1)
TEXT = st.text(max_size=40)
NONEMPTY = st.text(min_size=1, max_size=40)
BODY = st.binary(max_size=200)

json_commands = st.builds(
    RemotingCommand,
    code=INT32,
    opaque=INT32,
    flag=INT32,
    language=TEXT,
    version=INT32,
    remark=st.none() | TEXT,
    ext_fields=st.dictionaries(TEXT, TEXT, max_size=6),
    body=BODY,
    serialize_type=st.just(SERIALIZE_JSON),
)

# The binary header has i16 code/version, a language byte, and reads empty strings back as absent.
binary_commands = st.builds(
    RemotingCommand,
    code=INT16,
    opaque=INT32,
    flag=INT32,
    language=st.sampled_from([lc.name for lc in LanguageCode]),
    version=INT16,
    remark=st.none() | NONEMPTY,
    ext_fields=st.dictionaries(NONEMPTY, NONEMPTY, max_size=6),
    body=BODY,
    serialize_type=st.just(SERIALIZE_ROCKETMQ),
)

commands = json_commands | binary_commands


@given(json_commands)
def test_json_round_trip(cmd: RemotingCommand) -> None:
    assert decode_frame(encode(cmd)[4:]) == cmd


@given(binary_commands)
def test_binary_round_trip(cmd: RemotingCommand) -> None:
    assert decode_frame(encode(cmd)[4:]) == cmd


@given(binary_commands)
def test_binary_header_length_is_21_plus_remark_plus_extfields(cmd: RemotingCommand) -> None:
    header = encode_header(cmd)
    remark = len(cmd.remark.encode()) if cmd.remark else 0
    ext = sum(2 + len(k.encode()) + 4 + len(v.encode()) for k, v in cmd.ext_fields.items())
    assert len(header) == 21 + remark + ext


@given(st.lists(commands, min_size=1, max_size=6), st.data())
def test_random_chunking_gives_the_same_commands(cmds: list[RemotingCommand], data: st.DataObject) -> None:
    stream = b"".join(encode(c) for c in cmds)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        out += decoder.feed(stream[prev:cut])
        prev = cut
    assert out == cmds
    assert decoder.buffered == 0


@given(st.lists(commands, min_size=1, max_size=4))
def test_byte_at_a_time(cmds: list[RemotingCommand]) -> None:
    stream = b"".join(encode(c) for c in cmds)
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    for i in range(len(stream)):
        out += decoder.feed(stream[i : i + 1])
    assert out == cmds


def _feed_all(chunks: list[bytes]) -> None:
    decoder = FrameDecoder(max_frame_size=1 << 16)
    for chunk in chunks:
        decoder.feed(chunk)


@given(st.lists(st.binary(max_size=64), max_size=8))
def test_garbage_raises_only_protocol_error(chunks: list[bytes]) -> None:
    with contextlib.suppress(ProtocolError):
        _feed_all(chunks)


@given(st.binary(max_size=300))
def test_garbage_frame_body_raises_only_protocol_error(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode_frame(data)


@given(st.sampled_from([SERIALIZE_JSON, SERIALIZE_ROCKETMQ]), st.binary(max_size=200))
def test_garbage_header_of_either_type_raises_only_protocol_error(serialize_type: int, header: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode_frame(struct.pack(">I", serialize_type << 24 | len(header)) + header)


def _mutate(frame: bytearray, ops: list[tuple[int, int, int]]) -> bytes:
    for kind, pos, value in ops:
        if not frame:
            break
        pos %= len(frame)
        if kind == 0:  # flip bits of one byte
            frame[pos] ^= value or 1
        elif kind == 1:  # overwrite with a chosen byte
            frame[pos] = value
        elif kind == 2:  # insert
            frame.insert(pos, value)
        elif kind == 3:  # delete
            del frame[pos]
        else:  # truncate
            del frame[pos:]
    return bytes(frame)


MUTATIONS = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(commands, min_size=1, max_size=3), MUTATIONS)
def test_mutated_frames_raise_only_protocol_error(cmds: list[RemotingCommand], ops: list[tuple[int, int, int]]) -> None:
    stream = _mutate(bytearray(b"".join(encode(c) for c in cmds)), ops)
    with contextlib.suppress(ProtocolError):
        _feed_all([stream])


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(commands, MUTATIONS)
def test_mutated_headers_raise_only_protocol_error(cmd: RemotingCommand, ops: list[tuple[int, int, int]]) -> None:
    # Mutate inside the header only, keeping the length words consistent, to reach the header parsers.
    header = _mutate(bytearray(encode_header(cmd)), ops)
    frame = struct.pack(">I", cmd.serialize_type << 24 | len(header)) + header
    with contextlib.suppress(ProtocolError):
        decode_frame(frame)


@pytest.mark.parametrize(
    "cmd",
    [
        RemotingCommand(code=40000, serialize_type=SERIALIZE_ROCKETMQ),
        RemotingCommand(code=1, version=70000, serialize_type=SERIALIZE_ROCKETMQ),
        RemotingCommand(code=1, ext_fields={"k" * 40000: "v"}, serialize_type=SERIALIZE_ROCKETMQ),
        RemotingCommand(code=2**70),
    ],
)
def test_unencodable_commands_raise_protocol_error(cmd: RemotingCommand) -> None:
    with pytest.raises(ProtocolError):
        encode(cmd)
