"""Commit-log records: their layout, encoding caches, blanks, and validation on recovery (``check_record``).

The append path writes records with ``rocketq.store.appendcodec``.

The record layout is the one of ``rocketq.protocol.message`` (RocketMQ's stored message), big-endian::

    off  size  field
      0     4  TOTALSIZE            written last: a zero TOTALSIZE ends the log
      4     4  MAGICCODE            0xDAA320A7; 0xCBD43194 = end-of-file blank (TOTALSIZE = bytes left)
      8     4  BODYCRC              zlib.crc32(body) & 0x7FFFFFFF
     12     4  QUEUEID
     16     4  FLAG
     20     8  QUEUEOFFSET
     28     8  PHYSICALOFFSET
     36     4  SYSFLAG
     40     8  BORNTIMESTAMP
     48  8|20  BORNHOST             ip + port (i32); 20 bytes with SYSFLAG BORNHOST_V6
   56|68    8  STORETIMESTAMP
     ..  8|20  STOREHOST
     ..     4  RECONSUMETIMES
     ..     8  PREPARED TRANSACTION OFFSET
     ..   4+n  BODY length + body
     ..   1+t  TOPIC length (u8) + topic
     ..   2+p  PROPERTIES length (i16) + properties

Writes are ordered so that a process killed mid-append leaves no record that looks whole: every byte but
TOTALSIZE goes first, then TOTALSIZE (for a batch, the first record's TOTALSIZE last of all). Files are
created zero-filled and recovery zeroes any torn tail, so "TOTALSIZE == 0" reliably ends the log.
"""

from __future__ import annotations

import mmap
import struct
from typing import Final

from rocketq.common.crc import crc32
from rocketq.protocol.message import (
    BLANK_MAGIC,
    MAX_TOPIC_LENGTH,
    MESSAGE_MAGIC,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    Host,
    encode_host,
)

#: a record is never written unless this many bytes remain after it (room for a blank)
END_FILE_MIN_BLANK_LENGTH: Final = 8

_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
_I64 = struct.Struct(">q")
_SIZE_MAGIC = struct.Struct(">iI")
_HEAD = struct.Struct(">iIiiiqqiq")  # TOTALSIZE .. BORNTIMESTAMP
_FIXED: Final = {
    (b, s): struct.Struct(f">iIiiiqqiq{b}sq{s}siqi") for b in (8, 20) for s in (8, 20)
}  # TOTALSIZE .. BODY length, keyed by (born host length, store host length)

#: ``check_record`` results that are not a record
RECORD_END: Final = 0
RECORD_BLANK: Final = -1

_CACHE_MAX = 4096


#: (born host length, store host length) → (fixed-part struct, host-v6 sysFlag bits)
FIXED_BY_HOSTS: Final = {
    (b, s): (_FIXED[(b, s)], (SYSFLAG_BORNHOST_V6 if b == 20 else 0) | (SYSFLAG_STOREHOST_V6 if s == 20 else 0))
    for b in (8, 20)
    for s in (8, 20)
}
HOST_V6_BITS: Final = SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6


class RecordEncoder:
    """Caches host and topic encodings (the append path reads ``hosts``/``topics`` directly)."""

    def __init__(self) -> None:
        self.hosts: dict[Host, bytes] = {}
        self.topics: dict[str, bytes] = {}
        self._hosts = self.hosts
        self._topics = self.topics

    def host_bytes(self, host: Host) -> bytes:
        b = self._hosts.get(host)
        if b is None:
            if len(self._hosts) >= _CACHE_MAX:
                self._hosts.clear()
            b = self._hosts[host] = encode_host(host)
        return b

    def topic_tail(self, topic: str) -> bytes | None:
        """``len(u8) + topic``, or None if the topic cannot be stored."""
        t = self._topics.get(topic)
        if t is None:
            raw = topic.encode()
            if not raw or len(raw) > MAX_TOPIC_LENGTH or "/" in topic or topic in (".", ".."):
                return None
            if len(self._topics) >= _CACHE_MAX:
                self._topics.clear()
            t = self._topics[topic] = bytes((len(raw),)) + raw
        return t


def write_blank(mm: mmap.mmap, pos: int, remaining: int) -> None:
    """End-of-file filler: TOTALSIZE = bytes left in the file, MAGIC = BLANK (magic first, size last)."""
    _U32.pack_into(mm, pos + 4, BLANK_MAGIC)
    _I32.pack_into(mm, pos, remaining)


class RecordInfo:
    """What dispatch needs from a validated record."""

    __slots__ = ("phys", "props_len", "props_pos", "queue_id", "queue_offset", "size", "store_timestamp", "sys_flag",
                 "topic")

    def __init__(
        self,
        phys: int,
        size: int,
        queue_id: int,
        queue_offset: int,
        sys_flag: int,
        store_timestamp: int,
        topic: bytes,
        props_pos: int,
        props_len: int,
    ) -> None:
        self.phys = phys
        self.size = size
        self.queue_id = queue_id
        self.queue_offset = queue_offset
        self.sys_flag = sys_flag
        self.store_timestamp = store_timestamp
        self.topic = topic
        self.props_pos = props_pos
        self.props_len = props_len


def check_record(
    mm: mmap.mmap, view: memoryview, pos: int, limit: int, phys: int, check_crc: bool
) -> RecordInfo | int:
    """Validate the record at ``pos`` (log offset ``phys``): RecordInfo, RECORD_BLANK, or RECORD_END.

    Checks magic, size bounds, the stored physical offset, that the field lengths add up to TOTALSIZE and,
    when asked, the body CRC (RocketMQ's ``checkMessageAndReturnSize``).
    """
    if pos + 8 > limit:
        return RECORD_END
    size, magic = _SIZE_MAGIC.unpack_from(mm, pos)
    if magic == BLANK_MAGIC and size > 0:
        return RECORD_BLANK
    if magic != MESSAGE_MAGIC or size < 91 or pos + size > limit:
        return RECORD_END
    _, _, crc, queue_id, _flag, queue_offset, stored_phys, sys_flag, _born = _HEAD.unpack_from(mm, pos)
    if stored_phys != phys:
        return RECORD_END
    p = pos + (68 if sys_flag & SYSFLAG_BORNHOST_V6 else 56)
    (store_ts,) = _I64.unpack_from(mm, p)
    p += (28 if sys_flag & SYSFLAG_STOREHOST_V6 else 16) + 12
    (body_len,) = _I32.unpack_from(mm, p)
    p += 4
    end = pos + size
    if body_len < 0 or p + body_len + 3 > end:
        return RECORD_END
    if check_crc and crc32(view[p : p + body_len]) & 0x7FFFFFFF != crc:
        return RECORD_END
    p += body_len
    topic_len = view[p]
    p += 1
    if p + topic_len + 2 > end:
        return RECORD_END
    topic = bytes(view[p : p + topic_len])
    p += topic_len
    (props_len,) = _I16.unpack_from(mm, p)
    p += 2
    if props_len < 0 or p + props_len != end:
        return RECORD_END
    return RecordInfo(phys, size, queue_id, queue_offset, sys_flag, store_ts, topic, p, props_len)


def read_size(mm: mmap.mmap, pos: int) -> int:
    (size,) = _I32.unpack_from(mm, pos)
    return int(size)


def read_store_timestamp(mm: mmap.mmap, pos: int) -> int:
    """STORETIMESTAMP of the record at ``pos`` (0 if there is no message there)."""
    size, magic = _SIZE_MAGIC.unpack_from(mm, pos)
    if magic != MESSAGE_MAGIC or size <= 0:
        return 0
    (sys_flag,) = _I32.unpack_from(mm, pos + 36)
    (ts,) = _I64.unpack_from(mm, pos + (68 if sys_flag & SYSFLAG_BORNHOST_V6 else 56))
    return int(ts)
