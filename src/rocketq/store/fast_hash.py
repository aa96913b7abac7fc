"""Java ``String.hashCode()`` without a per-character Python loop (same results as ``rocketq.common.hashing``).

``h = sum(unit[i] * 31**(n-1-i)) mod 2**32`` is evaluated as one ``sum(map(mul, units, powers))`` over a
cached list of powers of 31, which runs in C. Index keys (``topic#UNIQ_KEY``) are hashed for every stored
message, so this sits on the append path; ``hash_with_prefix`` reuses the hash of the ``topic#`` prefix.
"""

from __future__ import annotations

import sys
from operator import mul
from typing import Final

from rocketq.common.hashing import java_string_hash

_MASK: Final = 0xFFFFFFFF
_MAX_FAST: Final = 1024
#: _POW[k] == 31**k mod 2**32
_POW: Final = [pow(31, k, 1 << 32) for k in range(_MAX_FAST + 1)]
#: _DESC[n] == [31**(n-1), ..., 31, 1] (mod 2**32), built on first use
_DESC: list[list[int] | None] = [None] * (_MAX_FAST + 1)
_UTF16: Final = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def _units(s: str) -> bytes | memoryview:
    if s.isascii():
        return s.encode("ascii")
    return memoryview(s.encode(_UTF16, "surrogatepass")).cast("H")


def _powers(n: int) -> list[int]:
    p = _DESC[n]
    if p is None:
        p = _DESC[n] = _POW[n - 1 :: -1] if n else []
    return p


def unsigned_hash(s: str) -> tuple[int, int]:
    """(hashCode as unsigned 32-bit, length in UTF-16 units)."""
    units = _units(s)
    n = len(units)
    if n > _MAX_FAST:
        return java_string_hash(s) & _MASK, n
    return sum(map(mul, units, _powers(n))) & _MASK, n


def _signed(h: int) -> int:
    return h - 0x100000000 if h & 0x80000000 else h


def java_hash(s: str) -> int:
    """Java ``String.hashCode()`` as a signed int32."""
    return _signed(unsigned_hash(s)[0])


def hash_with_prefix(prefix_hash: int, s: str) -> int:
    """Unsigned hashCode of ``prefix + s`` given the unsigned hashCode of ``prefix``."""
    h, n = unsigned_hash(s)
    mult = _POW[n] if n <= _MAX_FAST else pow(31, n, 1 << 32)
    return (prefix_hash * mult + h) & _MASK


def index_hash_with_prefix(prefix_hash: int, key: str) -> int:
    """IndexFile key hash of ``prefix + key`` given the unsigned hashCode of ``prefix`` (inlined fast path)."""
    if key.isascii():
        units = key.encode("ascii")
        n = len(units)
        if n <= _MAX_FAST:
            p = _DESC[n] or _powers(n)
            h: int = (prefix_hash * _POW[n] + sum(map(mul, units, p))) & _MASK
            if h & 0x80000000:
                h = 0x100000000 - h
                return 0 if h >= 0x80000000 else h
            return h
    return abs_key_hash(hash_with_prefix(prefix_hash, key))


class IndexKeyHasher:
    """Index key hashes of ``topic#key`` with the hashes of ``topic#`` and of key heads cached.

    Client message ids (UNIQ_KEY) are 32 hex chars whose first 20 identify the producer (ip, pid, ...) and
    change rarely; only the last 12 (time, counter) change per message. Hashing the head once per producer
    halves the work per message; keys that do not fit the pattern just miss the cache.
    """

    TAIL = 12
    _MAX_CACHE = 4096

    def __init__(self) -> None:
        self._topics: dict[str, int] = {}
        self._heads: dict[str, int] = {}
        self._tail_powers = _powers(self.TAIL)
        self._tail_mult = _POW[self.TAIL]

    def key_hash(self, topic: str, key: str) -> int:
        prefix = self._topics.get(topic)
        if prefix is None:
            if len(self._topics) >= self._MAX_CACHE:
                self._topics.clear()
            prefix = self._topics[topic] = unsigned_hash(topic + "#")[0]
        n = len(key)
        if n <= self.TAIL + 8 or not key.isascii():
            return index_hash_with_prefix(prefix, key)
        cut = n - self.TAIL
        head = key[:cut]
        hh = self._heads.get(head)
        if hh is None:
            if len(self._heads) >= self._MAX_CACHE:
                self._heads.clear()
            hh = self._heads[head] = sum(map(mul, head.encode("ascii"), _powers(cut))) & _MASK
        h: int = (
            ((prefix * _POW[cut] + hh) * self._tail_mult + sum(map(mul, key[cut:].encode("ascii"), self._tail_powers)))
            & _MASK
        )
        if h & 0x80000000:
            h = 0x100000000 - h
            return 0 if h >= 0x80000000 else h
        return h


def abs_key_hash(unsigned: int) -> int:
    """IndexFile.indexKeyHashMethod from an unsigned hashCode: ``abs``, and 0 for Integer.MIN_VALUE."""
    h = abs(_signed(unsigned))
    return 0 if h >= 0x80000000 else h


def tags_code_of(tags: str | None) -> int:
    return java_hash(tags) if tags else 0


def index_key_hash(key: str) -> int:
    """``abs(hashCode)``, 0 for Integer.MIN_VALUE (IndexFile.indexKeyHashMethod)."""
    return abs_key_hash(unsigned_hash(key)[0])
