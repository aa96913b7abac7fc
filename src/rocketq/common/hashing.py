"""Java-compatible hashes that appear in RocketMQ's data formats (tags codes, index key hashes)."""

from __future__ import annotations


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode()``: over UTF-16 code units, ``h = 31*h + unit``, as a signed int32."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def tags_hash_code(tags: str | None) -> int:
    """The consume-queue ``tagsCode`` of a message's TAGS (0 when it has none)."""
    return java_string_hash(tags) if tags else 0


def index_key_hash(key: str) -> int:
    """IndexFile key hash: ``abs(hashCode)``, and 0 for Integer.MIN_VALUE (whose abs stays negative)."""
    h = abs(java_string_hash(key))
    return 0 if h >= 0x80000000 else h
