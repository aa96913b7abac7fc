"""The HA socket's two frames, exactly as RocketMQ 4.9 writes them (big-endian, no magic, no checksum).

Slave → master: one 8-byte signed offset, the slave's commit-log max offset; it is the start request, the
ack and the heartbeat at once. The master reads the last complete value in what arrived.

Master → slave: ``>qi`` — the commit-log offset of the first body byte and the body size — then the body
(raw commit-log bytes, possibly splitting a message; size 0 is a heartbeat).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

REPORT = struct.Struct(">q")
TRANSFER_HEADER = struct.Struct(">qi")
REPORT_SIZE = REPORT.size  # 8
HEADER_SIZE = TRANSFER_HEADER.size  # 12


#: controller mode: the slave's first frame names it (Java 5's AutoSwitch handshake: state HANDSHAKE=1,
#: isSyncFromLastFile, isAsyncLearner, slaveBrokerId); the 4.9 reports follow
HANDSHAKE = struct.Struct(">ihhq")
HANDSHAKE_STATE = 1


def encode_handshake(broker_id: int) -> bytes:
    return HANDSHAKE.pack(HANDSHAKE_STATE, 0, 0, broker_id)


def decode_handshake(buf: bytes | bytearray) -> int:
    """The slave's broker id; ValueError for anything but a handshake frame."""
    state, _, _, broker_id = HANDSHAKE.unpack_from(buf, 0)
    if state != HANDSHAKE_STATE or broker_id <= 0:
        raise ValueError(f"not an HA handshake (state {state}, broker id {broker_id})")
    return int(broker_id)


def encode_report(max_offset: int) -> bytes:
    return REPORT.pack(max_offset)


def last_report(buf: bytes | bytearray) -> tuple[int | None, int]:
    """The last complete report in ``buf`` and the number of bytes it consumed (a multiple of 8)."""
    whole = len(buf) - len(buf) % REPORT_SIZE
    if whole == 0:
        return None, 0
    (value,) = REPORT.unpack_from(buf, whole - REPORT_SIZE)
    return int(value), whole


def encode_transfer_header(offset: int, size: int) -> bytes:
    return TRANSFER_HEADER.pack(offset, size)


@dataclass(frozen=True, slots=True)
class Transfer:
    offset: int
    body: bytes


class TransferReader:
    """Splits the master's byte stream into ``Transfer`` frames (bodies of any size up to ``max_body``)."""

    def __init__(self, max_body: int = 64 * 1024 * 1024) -> None:
        self._buf = bytearray()
        self._max_body = max_body

    def feed(self, data: bytes) -> list[Transfer]:
        """Raises ValueError on a negative or oversized body size (the connection must be closed)."""
        buf = self._buf
        buf += data
        out: list[Transfer] = []
        pos = 0
        while len(buf) - pos >= HEADER_SIZE:
            offset, size = TRANSFER_HEADER.unpack_from(buf, pos)
            if size < 0 or size > self._max_body:
                raise ValueError(f"HA frame body size {size} out of range")
            if len(buf) - pos - HEADER_SIZE < size:
                break
            start = pos + HEADER_SIZE
            out.append(Transfer(int(offset), bytes(buf[start : start + size])))
            pos = start + size
        del buf[:pos]
        return out
