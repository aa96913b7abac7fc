"""Pure-Python twin of ``rocketq.protocol._framecodec_c``: received bytes → commands, a command → its head.

The specification both twins follow (``rocketq.protocol.framecodec`` chooses one):

``decode_frames(buf, max_frame_size) -> (commands, consumed, error)``

* ``buf`` holds received bytes; every whole frame at its start (4-byte big-endian length, then that many bytes)
  becomes a ``RemotingCommand`` exactly as ``decode_frame`` gives it (same fields, same types; the body a
  ``bytes`` copy). ``consumed`` is the number of bytes of those frames; an incomplete frame at the end is left.
* A length below 4 or above ``max_frame_size``, or a frame ``decode_frame`` refuses, stops the loop: ``error``
  is then that ``ProtocolError`` (frames before it are still returned), else None. Nothing else is raised.

``encode_head(cmd) -> bytes``

* The 8-byte frame prefix and the header, byte for byte ``encode_prefix(cmd, encode_header(cmd))`` (the body
  is written after it unchanged), raising what those raise.

``request_run_end(commands, start) -> int``

* ``commands[start]`` is a request; the index after the last of the requests from it on that share its ``code``
  and ``language`` (a response, or another code or language, ends them): one read's stretch (``remoting``).

``encode_send_reply(opaque, version, msg_id_prefix, phys, queue_id, queue_offset, region, trace_on) -> bytes``

* The head of the JSON answer to a stored send: ``encode_head`` of the SUCCESS response (flag 1, language JAVA,
  no remark, no body) whose extFields are, in this order, ``msgId`` (``msg_id_prefix`` then ``phys`` as 16
  upper-case hex digits), ``queueId``, ``queueOffset``, ``MSG_REGION`` and ``TRACE_ON``.
"""

from __future__ import annotations

import struct

from rocketq.errors import ProtocolError
from rocketq.protocol.command import (
    FLAG_RESPONSE,
    SERIALIZE_JSON,
    RemotingCommand,
    decode_frame,
    encode_header,
    encode_prefix,
)

_LEN = struct.Struct(">i")


def decode_frames(buf: bytearray, max_frame_size: int) -> tuple[list[RemotingCommand], int, ProtocolError | None]:
    out: list[RemotingCommand] = []
    pos = 0
    size = len(buf)
    try:
        while size - pos >= 4:
            (length,) = _LEN.unpack_from(buf, pos)
            if length < 4 or length > max_frame_size:
                raise ProtocolError(f"frame length {length} outside [4, {max_frame_size}]")
            if size - pos - 4 < length:
                break
            start = pos + 4
            out.append(decode_frame(memoryview(buf)[start : start + length]))
            pos = start + length
    except ProtocolError as exc:
        return out, pos, exc
    return out, pos, None


def encode_head(cmd: RemotingCommand) -> bytes:
    return encode_prefix(cmd, encode_header(cmd))


def encode_send_reply(
    opaque: int,
    version: int,
    msg_id_prefix: str,
    phys: int,
    queue_id: int,
    queue_offset: int,
    region: str,
    trace_on: str,
) -> bytes:
    ext = {
        "msgId": f"{msg_id_prefix}{phys:016X}",
        "queueId": str(queue_id),
        "queueOffset": str(queue_offset),
        "MSG_REGION": region,
        "TRACE_ON": trace_on,
    }
    reply = RemotingCommand(0, opaque, FLAG_RESPONSE, "JAVA", version, None, ext, b"", SERIALIZE_JSON)
    return encode_head(reply)


def request_run_end(commands: list[RemotingCommand], start: int) -> int:
    first = commands[start]
    code, language = first.code, first.language
    i, n = start + 1, len(commands)
    while i < n:
        cmd = commands[i]
        if cmd.code != code or cmd.language != language or cmd.flag & FLAG_RESPONSE:
            break
        i += 1
    return i
