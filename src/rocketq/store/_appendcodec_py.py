"""Pure-Python twin of ``rocketq.store._appendcodec_c``: batch bodies written as commit-log records.

Both twins take the same arguments, return the same values, write the same bytes and raise the same
errors; ``tests/unit/store/test_appendcodec.py`` runs every case against both. See ``appendcodec`` for
the contract. This twin is the readable specification; the compiled one is the one the broker runs.
"""

from __future__ import annotations

import struct
import zlib

from rocketq.protocol.message import MESSAGE_MAGIC
from rocketq.store.fast_hash import hash_with_prefix

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


def write_record(
    mm: object,
    pos: int,
    body: bytes | memoryview,
    topic_tail: bytes,
    props: bytes,
    queue_id: int,
    flag: int,
    queue_offset: int,
    phys: int,
    sys_flag: int,
    born_timestamp: int,
    born_b: bytes,
    store_timestamp: int,
    store_b: bytes,
    reconsume_times: int,
    prepared_transaction_offset: int,
) -> int:
    """One message as a commit-log record at ``pos`` (body CRC computed here, TOTALSIZE last); its size."""
    fixed_size = 72 + len(born_b) + len(store_b)
    size = fixed_size + len(body) + len(topic_tail) + 2 + len(props)
    if (
        pos < 0 or pos + size > len(mm) or len(props) > 32767 or not topic_tail  # type: ignore[arg-type]
        or len(born_b) not in (8, 20) or len(store_b) not in (8, 20)
    ):  # fmt: skip
        raise ValueError("write_record: record does not fit or bad field lengths")
    fixed = struct.Struct(f">iIiiiqqiq{len(born_b)}sq{len(store_b)}siqi")
    fixed.pack_into(
        mm, pos, 0, MESSAGE_MAGIC, zlib.crc32(body) & 0x7FFFFFFF, queue_id, flag, queue_offset, phys,  # type: ignore[arg-type]
        sys_flag, born_timestamp, born_b, store_timestamp, store_b, reconsume_times, prepared_transaction_offset,
        len(body),
    )
    buf = memoryview(mm)  # type: ignore[arg-type]
    p = pos + fixed_size
    buf[p : p + len(body)] = body
    p += len(body)
    buf[p : p + len(topic_tail)] = topic_tail
    p += len(topic_tail)
    _I16.pack_into(buf, p, len(props))
    buf[p + 2 : p + 2 + len(props)] = props
    buf.release()
    _I32.pack_into(mm, pos, size)  # type: ignore[arg-type]
    return size


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


# ----------------------------------------------------------------------------------------------- index

_HEADER = struct.Struct(">qqqqii")
_ENTRY = struct.Struct(">iqii")
_INT_MAX = 0x7FFFFFFF


def index_entries(prefix_hash: int, phys: int, uniq_key: str | None, keys: str | None) -> list[int]:
    """``[hash, phys, ...]`` for UNIQ_KEY and each space-separated KEYS entry, hashed as ``topic#key``."""
    out: list[int] = []
    if uniq_key:
        out += (_index_hash(hash_with_prefix(prefix_hash, uniq_key)), phys)
    if keys:
        for k in keys.split(" "):
            if k:
                out += (_index_hash(hash_with_prefix(prefix_hash, k)), phys)
    return out


def _resolve_slot(mm: object, entries_base: int, index_num: int, value: int, limit: int) -> int:
    """A slot may name an entry at or past ``limit`` after a crash: fall back along its chain."""
    while value >= limit and value > 0:
        prev = _ENTRY.unpack_from(mm, entries_base + value * 20)[3] if value < index_num else 0  # type: ignore[arg-type]
        value = prev if 0 <= prev < value else 0  # strictly decreasing, so this ends
    return value if 0 < value < limit else 0


def index_put_many(
    mm: object,
    slot_num: int,
    index_num: int,
    count: int,
    slot_count: int,
    begin_ts: int,
    begin_phy: int,
    end_ts: int,
    end_phy: int,
    entries: list[int],
    start: int,
    store_ts: int,
) -> tuple[int, int, int, int, int, int, int]:
    """IndexFile.put_key for ``entries[start:]`` until the file is full: per key the entry, then the header,
    then the slot (a slot never names an entry the header does not count). Returns where it stopped and the
    header fields ``(next, count, slot_count, begin_ts, begin_phy, end_ts, end_phy)``."""
    if slot_num <= 0 or index_num <= 0 or start < 0 or (len(entries) - start) % 2:
        raise ValueError("index_put_many: bad file geometry or entries")
    entries_base = 40 + slot_num * 4
    i = start
    while i < len(entries) and count < index_num:
        h, phys = entries[i], entries[i + 1]
        if not 0 <= h <= _INT_MAX:
            raise ValueError("index hash out of range")
        slot_pos = 40 + (h % slot_num) * 4
        (slot_value,) = _I32.unpack_from(mm, slot_pos)  # type: ignore[arg-type]
        if slot_value < 0 or slot_value >= count:
            slot_value = _resolve_slot(mm, entries_base, index_num, slot_value, count) if slot_value > 0 else 0
        diff = 0 if begin_ts <= 0 else min(max((store_ts - begin_ts) // 1000, 0), _INT_MAX)
        _ENTRY.pack_into(mm, entries_base + count * 20, h, phys, diff, slot_value)  # type: ignore[arg-type]
        if count <= 1:
            begin_phy, begin_ts = phys, store_ts
        if slot_value == 0:
            slot_count += 1
        this_entry = count
        count += 1
        end_phy, end_ts = phys, store_ts
        _HEADER.pack_into(mm, 0, begin_ts, end_ts, begin_phy, end_phy, slot_count, count)  # type: ignore[arg-type]
        _I32.pack_into(mm, slot_pos, this_entry)  # type: ignore[arg-type]
        i += 2
    return i, count, slot_count, begin_ts, begin_phy, end_ts, end_phy
