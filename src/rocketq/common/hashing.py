"""Java-compatible hashes that appear in RocketMQ's data formats (tags codes, index key hashes).

Java ``String.hashCode()`` is ``sum(unit[i] * 31**(n-1-i)) mod 2**32`` over UTF-16 code units. It runs on
every stored message (tags code, index keys), so it is evaluated as one ``sum(map(mul, units, powers))``
over a cached table of powers of 31 — the loop runs in C. This is the one implementation; the store's
index hasher and the filter build on it.
"""

from __future__ import annotations

import sys
from operator import mul
from typing import Final

MASK32: Final = 0xFFFFFFFF
MAX_FAST: Final = 1024
#: POW[k] == 31**k mod 2**32
POW: Final = [pow(31, k, 1 << 32) for k in range(MAX_FAST + 1)]
_DESC: list[list[int] | None] = [None] * (MAX_FAST + 1)
_UTF16: Final = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def utf16_units(s: str) -> bytes | memoryview:
    """The UTF-16 code units of ``s`` as a sequence of ints (lone surrogates kept, as in a Java string)."""
    if s.isascii():
        return s.encode("ascii")
    return memoryview(s.encode(_UTF16, "surrogatepass")).cast("H")


def descending_powers(n: int) -> list[int]:
    """``[31**(n-1), ..., 31, 1]`` mod 2**32 (cached for n <= MAX_FAST)."""
    p = _DESC[n]
    if p is None:
        p = _DESC[n] = POW[n - 1 :: -1] if n else []
    return p


def unsigned_hash(s: str) -> tuple[int, int]:
    """(hashCode as unsigned 32-bit, length in UTF-16 units)."""
    units = utf16_units(s)
    n = len(units)
    if n <= MAX_FAST:
        return sum(map(mul, units, descending_powers(n))) & MASK32, n
    h = 0
    for unit in units:
        h = (31 * h + unit) & MASK32
    return h, n


def to_int32(h: int) -> int:
    h &= MASK32
    return h - 0x100000000 if h & 0x80000000 else h


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode()`` as a signed int32."""
    return to_int32(unsigned_hash(s)[0])


def tags_hash_code(tags: str | None) -> int:
    """The consume-queue ``tagsCode`` of a message's TAGS (0 when it has none)."""
    return java_string_hash(tags) if tags else 0


def abs_key_hash(unsigned: int) -> int:
    """IndexFile.indexKeyHashMethod from an unsigned hashCode: ``abs``, and 0 for Integer.MIN_VALUE."""
    h = abs(to_int32(unsigned))
    return 0 if h >= 0x80000000 else h


def index_key_hash(key: str) -> int:
    """IndexFile key hash: ``abs(hashCode)``, and 0 for Integer.MIN_VALUE (whose abs stays negative)."""
    return abs_key_hash(unsigned_hash(key)[0])
