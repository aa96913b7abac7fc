"""Pure-Python twin of ``rocketq.store._appendcodec_c``: batch bodies written as commit-log records.

Both twins take the same arguments, return the same values, write the same bytes and raise the same
errors; ``tests/unit/store/test_appendcodec.py`` runs every case against both. See ``appendcodec`` for
the contract. This twin is the readable specification; the compiled one is the one the broker runs.
"""

from __future__ import annotations

import struct
import zlib

from rocketq.protocol.message import MESSAGE_MAGIC

_BATCH_HEAD = struct.Struct(">iiiii")  # total, magic, crc, flag, body length (SEND_BATCH_MESSAGE item)
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_CQ_UNIT = struct.Struct(">qiq")
_Q = struct.Struct(">q")
_MASK = 0xFFFFFFFF

_TAGS = b"TAGS"
_KEYS = b"KEYS"
_UNIQ_KEY = b"UNIQ_KEY"


def _items(body: bytes | memoryview) -> list[tuple[int, int, int, int, int]]:
    """(flag, body start, body length, properties start, properties length) per item; ValueError if malformed."""
    out = []
    pos = 0
    end = len(body)
    while pos < end:
        if pos + 22 > end:
            raise ValueError(f"malformed batch body: item at {pos} is truncated")
        total, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(body, pos)
        if total < 22 or pos + total > end or body_len < 0 or 20 + body_len + 2 > total:
            raise ValueError(f"malformed batch body: item at {pos} has bad sizes (total {total}, body {body_len})")
        p = pos + 20 + body_len
        (props_len,) = _I16.unpack_from(body, p)
        if props_len < 0 or p + 2 + props_len != pos + total:
            raise ValueError(f"malformed batch body: item at {pos}: properties length {props_len} does not end it")
        out.append((flag, pos + 20, body_len, p + 2, props_len))
        pos += total
    if not out:
        raise ValueError("malformed batch body: empty batch")
    return out


def _needs_separator(body: bytes | memoryview, props_pos: int, props_len: int, extra: bytes) -> bool:
    """Java's MessageExtBatchEncoder: a 0x02 goes between the item's and the batch's properties if missing."""
    return props_len > 0 and len(extra) > 0 and body[props_pos + props_len - 1] != 2


_POPULATE_WRITE = 23  # MADV_POPULATE_WRITE (Linux >= 5.14)


def populate_write(mm: object, start: int, length: int) -> bool:
    """Pre-fault mapped pages for writing (holding the GIL here: the compiled twin releases it)."""
    page = 4096
    lo = start - start % page
    hi = min(start + length, len(mm))  # type: ignore[arg-type]
    if hi <= lo:
        return True
    try:
        mm.madvise(_POPULATE_WRITE, lo, hi - lo)  # type: ignore[attr-defined]
    except OSError as exc:
        if exc.errno == 22:  # EINVAL: not supported by this kernel
            return False
        raise
    return True


def measure_batch(body: bytes | memoryview, extra: bytes, fixed_size: int, topic_tail_len: int) -> tuple[int, int, int]:
    """(messages, bytes of all records, longest record properties)."""
    count = total = longest = 0
    for _flag, _bp, body_len, pp, props_len in _items(body):
        n = props_len + len(extra) + (1 if _needs_separator(body, pp, props_len, extra) else 0)
        total += fixed_size + body_len + topic_tail_len + 2 + n
        longest = max(longest, n)
        count += 1
    return count, total, longest


def java_hash_utf8(raw: bytes, seed: int = 0) -> int:
    """Java ``String.hashCode`` (unsigned 32-bit) of ``seed``'s string + the UTF-8 text ``raw``.

    ValueError if ``raw`` is not valid UTF-8.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError("properties are not valid UTF-8") from exc
    h = seed
    for ch in text:
        cp = ord(ch)
        if cp >= 0x10000:
            cp -= 0x10000
            h = (h * 31 + 0xD800 + (cp >> 10)) & _MASK
            h = (h * 31 + 0xDC00 + (cp & 0x3FF)) & _MASK
        else:
            h = (h * 31 + cp) & _MASK
    return h


def _to_int32(h: int) -> int:
    return h - 0x100000000 if h & 0x80000000 else h


def _index_hash(h: int) -> int:
    """IndexFile.indexKeyHashMethod: abs of the int32, 0 for Integer.MIN_VALUE."""
    v = abs(_to_int32(h))
    return 0 if v >= 0x80000000 else v


def _lookup(props: bytes) -> tuple[bytes | None, bytes | None, bytes | None]:
    """TAGS, KEYS, UNIQ_KEY by RocketMQ's properties rule (split on 0x02, first 0x01, non-empty, last wins)."""
    tags = keys = uniq = None
    for piece in props.split(b"\x02"):
        name, sep, value = piece.partition(b"\x01")
        if not (sep and name and value):
            continue
        if name == _TAGS:
            tags = value
        elif name == _KEYS:
            keys = value
        elif name == _UNIQ_KEY:
            uniq = value
    return tags, keys, uniq


def write_batch(
    mm: object,
    pos: int,
    body: bytes | memoryview,
    extra: bytes,
    topic_tail: bytes,
    queue_id: int,
    sys_flag: int,
    born_timestamp: int,
    born_b: bytes,
    store_timestamp: int,
    store_b: bytes,
    reconsume_times: int,
    queue_offset: int,
    phys_base: int,
    index_prefix_hash: int,
) -> tuple[int, bytes, list[int], list[int], str]:
    """Write the batch's records at ``pos`` of ``mm`` (file offset ``phys_base``); see ``appendcodec``."""
    items = _items(body)
    fixed = struct.Struct(f">iIiiiqqiq{len(born_b)}sq{len(store_b)}siqi")
    buf = memoryview(mm)  # type: ignore[arg-type]
    start = pos
    units = bytearray()
    tags_codes: list[int] = []
    index: list[int] = []
    ids: list[str] = []
    first_size = 0
    resolved = []
    for flag, bp, body_len, pp, props_len in items:  # everything is checked before anything is written
        props = bytes(body[pp : pp + props_len])
        if _needs_separator(body, pp, props_len, extra):
            props += b"\x02"
        props += extra
        tags, keys, uniq = _lookup(props)
        tags_code = _to_int32(java_hash_utf8(tags)) if tags else 0
        hashes = []
        if index_prefix_hash >= 0:
            if uniq:
                hashes.append(_index_hash(java_hash_utf8(uniq, index_prefix_hash)))
            if keys:
                for k in keys.split(b" "):
                    if k:
                        hashes.append(_index_hash(java_hash_utf8(k, index_prefix_hash)))
        resolved.append((flag, bp, body_len, props, tags_code, hashes))
    for i, (flag, bp, body_len, props, tags_code, hashes) in enumerate(resolved):
        phys = phys_base + pos
        size = fixed.size + body_len + len(topic_tail) + 2 + len(props)
        fixed.pack_into(
            buf, pos, 0, MESSAGE_MAGIC, zlib.crc32(body[bp : bp + body_len]) & 0x7FFFFFFF, queue_id, flag,
            queue_offset + i, phys, sys_flag, born_timestamp, born_b, store_timestamp, store_b, reconsume_times, 0,
            body_len,
        )
        p = pos + fixed.size
        buf[p : p + body_len] = body[bp : bp + body_len]
        p += body_len
        buf[p : p + len(topic_tail)] = topic_tail
        p += len(topic_tail)
        _I16.pack_into(buf, p, len(props))
        buf[p + 2 : p + 2 + len(props)] = props
        if i == 0:
            first_size = size
        else:
            _I32.pack_into(buf, pos, size)
        units += _CQ_UNIT.pack(phys, size, tags_code)
        tags_codes.append(tags_code)
        for h in hashes:
            index.append(h)
            index.append(phys)
        ids.append((store_b + _Q.pack(phys)).hex().upper())
        pos += size
    _I32.pack_into(buf, start, first_size)  # the whole batch becomes visible to recovery at once
    buf.release()
    return pos, bytes(units), tags_codes, index, ",".join(ids)
