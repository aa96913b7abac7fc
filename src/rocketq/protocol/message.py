"""The stored message record: the commit-log format, which is also the body of a pull response.

Layout (RocketMQ 4.9 ``CommitLog``/``MessageDecoder``; big-endian; IPv4 hosts shown)::

    off  size  field
      0     4  TOTALSIZE            whole record, this field included
      4     4  MAGICCODE            0xDAA320A7 message, 0xCBD43194 end-of-file blank
      8     4  BODYCRC              zlib.crc32(stored body) & 0x7FFFFFFF
     12     4  QUEUEID
     16     4  FLAG                 producer's int flag
     20     8  QUEUEOFFSET          logical offset in the consume queue
     28     8  PHYSICALOFFSET       commit-log offset of this record
     36     4  SYSFLAG
     40     8  BORNTIMESTAMP        ms
     48   8|20 BORNHOST             ip (4|16) + port (i32); 20 bytes when SYSFLAG has BORNHOST_V6
     56     8  STORETIMESTAMP       (shifted by 12 after a v6 born host)
     64   8|20 STOREHOST
     72     4  RECONSUMETIMES
     76     8  PREPARED TRANSACTION OFFSET
     84   4+n  BODY length + body   (possibly zlib-compressed; SYSFLAG bit 0)
   88+n   1+t  TOPIC length (u8) + topic
  89+n+t  2+p  PROPERTIES length (i16) + "k\\x01v\\x02..."

A batch send body is a run of shorter records: TOTALSIZE, MAGIC(0), BODYCRC(0), FLAG, BODY, PROPERTIES.
"""

from __future__ import annotations

import ipaddress
import struct
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from rocketq.common.crc import crc32
from rocketq.common.native import compiled_to_run
from rocketq.errors import ProtocolError

MESSAGE_MAGIC: Final = 0xDAA320A7
BLANK_MAGIC: Final = 0xCBD43194

# sysFlag bits (MessageSysFlag)
SYSFLAG_COMPRESSED: Final = 0x1
SYSFLAG_MULTI_TAGS: Final = 0x2
SYSFLAG_TX_MASK: Final = 0xC
SYSFLAG_TX_NOT: Final = 0x0
SYSFLAG_TX_PREPARED: Final = 0x4
SYSFLAG_TX_COMMIT: Final = 0x8
SYSFLAG_TX_ROLLBACK: Final = 0xC
SYSFLAG_BORNHOST_V6: Final = 0x10
SYSFLAG_STOREHOST_V6: Final = 0x20
SYSFLAG_COMPRESSION_TYPE_MASK: Final = 0x700

PROPERTY_SEPARATOR: Final = "\x02"
NAME_VALUE_SEPARATOR: Final = "\x01"

MAX_TOPIC_LENGTH: Final = 127
MAX_PROPERTIES_LENGTH: Final = 32767

# System property keys (MessageConst).
PROP_KEYS: Final = "KEYS"
PROP_TAGS: Final = "TAGS"
PROP_WAIT: Final = "WAIT"
PROP_DELAY: Final = "DELAY"
PROP_RETRY_TOPIC: Final = "RETRY_TOPIC"
PROP_REAL_TOPIC: Final = "REAL_TOPIC"
PROP_REAL_QID: Final = "REAL_QID"
PROP_TRAN_MSG: Final = "TRAN_MSG"
PROP_PGROUP: Final = "PGROUP"
PROP_MIN_OFFSET: Final = "MIN_OFFSET"
PROP_MAX_OFFSET: Final = "MAX_OFFSET"
PROP_UNIQ_KEY: Final = "UNIQ_KEY"
PROP_ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
PROP_MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
PROP_CONSUME_START_TIME: Final = "CONSUME_START_TIME"
PROP_TRAN_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
PROP_TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
PROP_CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
PROP_CLUSTER: Final = "CLUSTER"
PROP_MSG_REGION: Final = "MSG_REGION"
PROP_TRACE_SWITCH: Final = "TRACE_ON"
PROP_RECONSUME_TIME: Final = "RECONSUME_TIME"
PROP_TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
PROP_TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
PROP_TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
PROP_SHARDING_KEY: Final = "__SHARDINGKEY"

_I8 = struct.Struct(">B")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
# TOTALSIZE .. SYSFLAG, BORNTIMESTAMP: fixed part before the born host.
_HEAD = struct.Struct(">iIiiiqqiq")
_HEAD_SIZE: Final = _HEAD.size  # 48

# Byte offsets that the store back-patches at append time.
OFFSET_QUEUE_OFFSET: Final = 20
OFFSET_PHYSICAL_OFFSET: Final = 28
OFFSET_BORN_HOST: Final = 48


def body_crc(body: bytes | memoryview) -> int:
    return crc32(body) & 0x7FFFFFFF


# ----------------------------------------------------------------------------------------- properties


def encode_properties(props: Mapping[str, str]) -> str:
    """``k\\x01v\\x02`` per entry. The trailing 0x02 is kept (C++ style; Java parsers accept it)."""
    return "".join(f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in props.items() if v is not None)


def decode_properties(text: str) -> dict[str, str]:
    """Java's rule: split on 0x02, keep pieces with a 0x01 and a non-empty name and value."""
    out: dict[str, str] = {}
    if not text:
        return out
    for piece in text.split(PROPERTY_SEPARATOR):
        name, sep, value = piece.partition(NAME_VALUE_SEPARATOR)
        if sep and name and value:
            out[name] = value
    return out


def canonical_properties_text(text: str, decoded_len: int) -> str | None:
    """``encode_properties(decode_properties(text))`` without encoding again, given ``len(decode_properties(text))``;
    None when the text does not encode exactly what was decoded.

    The text can then be stored as it came: ``decoded_len`` pieces, each ended by 0x02, means every piece was kept
    and no name repeats (a value may hold a 0x01: the name ends at the first). Java clients (4.9's
    ``messageProperties2String``) drop the last 0x02; that form differs only by it, and gets it back.
    """
    if not text:
        return "" if decoded_len == 0 else None
    separators = text.count(PROPERTY_SEPARATOR)
    if text[-1] == PROPERTY_SEPARATOR:
        return text if separators == decoded_len else None
    return text + PROPERTY_SEPARATOR if separators == decoded_len - 1 else None


PlainProperties = tuple[bytes, "str | None", "str | None", "str | None"]


def _plain_properties_py(
    text: str, excluded: tuple[str, ...], suffix: bytes, dropped: tuple[str, ...]
) -> PlainProperties | None:
    """What a broker needs of a send's properties text to store it as it came: when the text encodes exactly
    what it decodes to (``canonical_properties_text``, Java's form included) and names none of ``excluded``,
    ``(its canonical UTF-8 without the pieces named in dropped, + suffix, TAGS, UNIQ_KEY, KEYS)``; else None.
    """
    props = decode_properties(text)
    canonical = canonical_properties_text(text, len(props))
    if canonical is None or not props.keys().isdisjoint(excluded):
        return None
    if not props.keys().isdisjoint(dropped):
        canonical = encode_properties({k: v for k, v in props.items() if k not in dropped})
    try:
        encoded = canonical.encode()
    except UnicodeEncodeError:  # a lone surrogate: not storable as it came
        return None
    return encoded + suffix, props.get(PROP_TAGS), props.get(PROP_UNIQ_KEY), props.get(PROP_KEYS)


_headercodec = compiled_to_run("rocketq.protocol._headercodec_c")
if _headercodec is not None:
    _headercodec.set_plain_fallback(_plain_properties_py)  # for texts of more pieces than it tracks (64)
#: ``_plain_properties_py`` or its compiled twin (one pass, no dict): the broker runs it for every send
plain_properties = _plain_properties_py if _headercodec is None else _headercodec.plain_properties


# ---------------------------------------------------------------------------------------------- hosts


Host = tuple[str, int]


def encode_host(host: Host) -> bytes:
    ip, port = host
    try:
        packed = ipaddress.ip_address(ip).packed
    except ValueError as exc:
        raise ProtocolError(f"bad host address {ip!r}") from exc
    return packed + _I32.pack(port)


def host_is_v6(host: Host) -> bool:
    return ":" in host[0]


def decode_host(buf: bytes | bytearray | memoryview, pos: int, v6: bool) -> Host:
    n = 16 if v6 else 4
    (port,) = _I32.unpack_from(buf, pos + n)
    return _ip_text(bytes(buf[pos : pos + n])), port


# A pull response repeats the same few hosts (the producers', the broker's) in every record: cache their text.
_IP_TEXT: dict[bytes, str] = {}


def _ip_text(packed: bytes) -> str:
    text = _IP_TEXT.get(packed)
    if text is None:
        if len(_IP_TEXT) >= 4096:
            _IP_TEXT.clear()
        text = _IP_TEXT[packed] = str(ipaddress.ip_address(packed))
    return text


# ------------------------------------------------------------------------------------------- msg ids


def make_offset_msg_id(store_host: Host, commit_log_offset: int) -> str:
    """32 upper-case hex chars for IPv4 (56 for IPv6): store ip + port (i32) + commit-log offset (i64)."""
    return (encode_host(store_host) + _I64.pack(commit_log_offset)).hex().upper()


def parse_offset_msg_id(msg_id: str) -> tuple[Host, int]:
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError as exc:
        raise ProtocolError(f"message id {msg_id!r} is not hex") from exc
    if len(raw) == 16:
        host = decode_host(raw, 0, False)
        return host, _I64.unpack_from(raw, 8)[0]
    if len(raw) == 28:
        host = decode_host(raw, 0, True)
        return host, _I64.unpack_from(raw, 20)[0]
    raise ProtocolError(f"message id {msg_id!r} has {len(raw)} bytes, expected 16 or 28")


# --------------------------------------------------------------------------------------------- record


@dataclass(slots=True)
class MessageRecord:
    """One stored message, decoded. ``body`` is the stored (possibly compressed) body."""

    topic: str
    body: bytes
    queue_id: int = 0
    flag: int = 0
    queue_offset: int = 0
    commit_log_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: Host = ("127.0.0.1", 0)
    store_timestamp: int = 0
    store_host: Host = ("127.0.0.1", 0)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    store_size: int = 0
    body_crc: int = 0

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROP_TAGS)

    @property
    def keys(self) -> list[str]:
        raw = self.properties.get(PROP_KEYS)
        return [k for k in raw.split(" ") if k] if raw else []

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(PROP_UNIQ_KEY)

    @property
    def offset_msg_id(self) -> str:
        return make_offset_msg_id(self.store_host, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        """What clients show as the message id: UNIQ_KEY when present, else the offset id."""
        return self.properties.get(PROP_UNIQ_KEY) or self.offset_msg_id

    def uncompressed_body(self) -> bytes:
        if self.sys_flag & SYSFLAG_COMPRESSED:
            try:
                return zlib.decompress(self.body)
            except zlib.error as exc:
                raise ProtocolError(f"compressed body does not inflate: {exc}") from exc
        return self.body


def record_size(body_len: int, topic_len: int, props_len: int, born_v6: bool = False, store_v6: bool = False) -> int:
    return 91 + body_len + topic_len + props_len + (12 if born_v6 else 0) + (12 if store_v6 else 0)


def encode_record(msg: MessageRecord) -> bytes:
    """Encode a full stored record. sysFlag's host-v6 bits are derived from the hosts."""
    topic_b = msg.topic.encode()
    props_b = encode_properties(msg.properties).encode()
    return encode_record_raw(
        topic_b=topic_b,
        body=msg.body,
        props_b=props_b,
        queue_id=msg.queue_id,
        flag=msg.flag,
        queue_offset=msg.queue_offset,
        commit_log_offset=msg.commit_log_offset,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        store_timestamp=msg.store_timestamp,
        store_host=msg.store_host,
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
        crc=None,
    )


def encode_record_raw(
    *,
    topic_b: bytes,
    body: bytes | memoryview,
    props_b: bytes,
    queue_id: int,
    flag: int,
    queue_offset: int,
    commit_log_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: Host,
    store_timestamp: int,
    store_host: Host,
    reconsume_times: int,
    prepared_transaction_offset: int,
    crc: int | None,
) -> bytes:
    if len(topic_b) > MAX_TOPIC_LENGTH:
        raise ProtocolError(f"topic of {len(topic_b)} bytes exceeds {MAX_TOPIC_LENGTH}")
    if len(props_b) > MAX_PROPERTIES_LENGTH:
        raise ProtocolError(f"properties of {len(props_b)} bytes exceed {MAX_PROPERTIES_LENGTH}")
    born_b = encode_host(born_host)
    store_b = encode_host(store_host)
    sys_flag &= ~(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6)
    if len(born_b) == 20:
        sys_flag |= SYSFLAG_BORNHOST_V6
    if len(store_b) == 20:
        sys_flag |= SYSFLAG_STOREHOST_V6
    size = 91 + len(body) + len(topic_b) + len(props_b) + len(born_b) - 8 + len(store_b) - 8
    return b"".join(
        (
            _HEAD.pack(size, MESSAGE_MAGIC, body_crc(body) if crc is None else crc, queue_id, flag, queue_offset,
                       commit_log_offset, sys_flag, born_timestamp),
            born_b,
            _I64.pack(store_timestamp),
            store_b,
            _I32.pack(reconsume_times),
            _I64.pack(prepared_transaction_offset),
            _I32.pack(len(body)),
            body,
            _I8.pack(len(topic_b)),
            topic_b,
            _I16.pack(len(props_b)),
            props_b,
        )
    )


def store_timestamp_offset(sys_flag: int) -> int:
    return 56 + (12 if sys_flag & SYSFLAG_BORNHOST_V6 else 0)


def decode_record(buf: bytes | bytearray | memoryview, pos: int = 0, *, with_body: bool = True) -> MessageRecord:
    """Decode the record starting at ``pos``. Raises ``ProtocolError`` if it is not a whole message."""
    # Fast path (profiled: the consumer's main cost in a drain): two IPv4 hosts, so the whole fixed part is one
    # unpack; host text from a cache; the instance built without the keyword __init__.
    try:
        (size, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born_ip, born_port, store_ts,
         store_ip, store_port, reconsume, prepared, body_len) = _HEAD_V4.unpack_from(buf, pos)  # fmt: skip
    except struct.error:
        sys_flag = -1  # too short for the fast path: the general path reports it
    else:
        if not sys_flag & _HOSTS_V6 and magic == MESSAGE_MAGIC and size >= 91 and pos + size <= len(buf):
            p = pos + 88
            end = pos + size
            if body_len >= 0 and p + body_len + 3 <= end:
                body = bytes(buf[p : p + body_len]) if with_body else b""
                p += body_len
                topic_len = buf[p]
                p += 1
                if p + topic_len + 2 <= end:
                    try:
                        topic = str(buf[p : p + topic_len], "utf-8")
                        p += topic_len
                        (props_len,) = _I16.unpack_from(buf, p)
                        p += 2
                        if props_len >= 0 and p + props_len == end:
                            props = decode_properties(str(buf[p:end], "utf-8"))
                            rec = _new_record(MessageRecord)
                            rec.topic = topic
                            rec.body = body
                            rec.queue_id = queue_id
                            rec.flag = flag
                            rec.queue_offset = queue_offset
                            rec.commit_log_offset = phys
                            rec.sys_flag = sys_flag
                            rec.born_timestamp = born_ts
                            rec.born_host = (_ip_text(born_ip), born_port)
                            rec.store_timestamp = store_ts
                            rec.store_host = (_ip_text(store_ip), store_port)
                            rec.reconsume_times = reconsume
                            rec.prepared_transaction_offset = prepared
                            rec.properties = props
                            rec.store_size = size
                            rec.body_crc = crc
                            return rec
                    except UnicodeDecodeError:
                        pass  # the general path raises the ProtocolError
    return _decode_record_general(buf, pos, with_body=with_body)


_HEAD_V4 = struct.Struct(">iIiiiqqiq4siq4siiqi")  # the fixed part of a record with two IPv4 hosts: 88 bytes
_HOSTS_V6: Final = SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6
_new_record = object.__new__


def _decode_record_general(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, with_body: bool = True
) -> MessageRecord:
    """Any record (IPv6 hosts too), every check spelled out; the reference for the fast path."""
    try:
        (size, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts) = _HEAD.unpack_from(buf, pos)
        if magic != MESSAGE_MAGIC:
            raise ProtocolError(f"bad magic 0x{magic:08X} at {pos}")
        if size < 91 or pos + size > len(buf):
            raise ProtocolError(f"record size {size} at {pos} out of bounds ({len(buf)} bytes)")
        p = pos + _HEAD_SIZE
        born_v6 = bool(sys_flag & SYSFLAG_BORNHOST_V6)
        store_v6 = bool(sys_flag & SYSFLAG_STOREHOST_V6)
        born_host = decode_host(buf, p, born_v6)
        p += 20 if born_v6 else 8
        (store_ts,) = _I64.unpack_from(buf, p)
        p += 8
        store_host = decode_host(buf, p, store_v6)
        p += 20 if store_v6 else 8
        (reconsume,) = _I32.unpack_from(buf, p)
        (prepared,) = _I64.unpack_from(buf, p + 4)
        (body_len,) = _I32.unpack_from(buf, p + 12)
        p += 16
        if body_len < 0 or p + body_len > pos + size:
            raise ProtocolError(f"body length {body_len} out of bounds")
        body = bytes(buf[p : p + body_len]) if with_body else b""
        p += body_len
        (topic_len,) = _I8.unpack_from(buf, p)
        p += 1
        topic = str(buf[p : p + topic_len], "utf-8")
        p += topic_len
        (props_len,) = _I16.unpack_from(buf, p)
        p += 2
        if props_len < 0 or p + props_len != pos + size:
            raise ProtocolError(f"properties length {props_len} does not end the record")
        props = decode_properties(str(buf[p : p + props_len], "utf-8"))
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, ProtocolError):
            raise
        raise ProtocolError(f"malformed record at {pos}: {exc}") from exc
    return MessageRecord(
        topic=topic,
        body=body,
        queue_id=queue_id,
        flag=flag,
        queue_offset=queue_offset,
        commit_log_offset=phys,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=born_host,
        store_timestamp=store_ts,
        store_host=store_host,
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
        properties=props,
        store_size=size,
        body_crc=crc,
    )


def iter_records(buf: bytes | bytearray | memoryview) -> Iterator[MessageRecord]:
    """Decode a run of whole records (a pull response body)."""
    pos = 0
    end = len(buf)
    while pos < end:
        rec = decode_record(buf, pos)
        yield rec
        pos += rec.store_size


# ------------------------------------------------------------------------------------------ batches


@dataclass(slots=True)
class BatchItem:
    """One message inside a SEND_BATCH_MESSAGE body."""

    flag: int
    body: bytes
    properties: dict[str, str]


_BATCH_HEAD = struct.Struct(">iiiii")  # total, magic, crc, flag, body length


def encode_batch(items: list[BatchItem]) -> bytes:
    parts: list[bytes] = []
    for item in items:
        props_b = encode_properties(item.properties).encode()
        total = 20 + len(item.body) + 2 + len(props_b)
        parts.append(_BATCH_HEAD.pack(total, 0, 0, item.flag, len(item.body)))
        parts.append(item.body)
        parts.append(_I16.pack(len(props_b)))
        parts.append(props_b)
    return b"".join(parts)


def decode_batch(buf: bytes | memoryview) -> list[BatchItem]:
    items: list[BatchItem] = []
    pos = 0
    end = len(buf)
    try:
        while pos < end:
            total, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(buf, pos)
            if total < 22 or pos + total > end or body_len < 0 or 20 + body_len + 2 > total:
                raise ProtocolError(f"batch item at {pos} has bad sizes (total {total}, body {body_len})")
            p = pos + 20
            body = bytes(buf[p : p + body_len])
            p += body_len
            (props_len,) = _I16.unpack_from(buf, p)
            p += 2
            if props_len < 0 or p + props_len != pos + total:
                raise ProtocolError(f"batch item at {pos}: properties length {props_len} does not end it")
            props = decode_properties(str(buf[p : p + props_len], "utf-8"))
            items.append(BatchItem(flag=flag, body=body, properties=props))
            pos += total
    except (struct.error, UnicodeDecodeError) as exc:
        raise ProtocolError(f"malformed batch body: {exc}") from exc
    if not items:
        raise ProtocolError("empty batch")
    return items
