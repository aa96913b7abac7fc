"""Index-key hashing on the append path, built on ``rocketq.common.hashing``.

``h = sum(unit[i] * 31**(n-1-i)) mod 2**32`` is evaluated as one ``sum(map(mul, units, powers))`` over a
cached list of powers of 31, which runs in C. Index keys (``topic#UNIQ_KEY``) are hashed for every stored
message, so this sits on the append path; ``hash_with_prefix`` reuses the hash of the ``topic#`` prefix.
"""

from __future__ import annotations

from operator import mul

from rocketq.common.hashing import MASK32 as _MASK
from rocketq.common.hashing import MAX_FAST as _MAX_FAST
from rocketq.common.hashing import POW as _POW
from rocketq.common.hashing import abs_key_hash, index_key_hash, java_string_hash, tags_hash_code, unsigned_hash
from rocketq.common.hashing import descending_powers as _powers

__all__ = ["IndexKeyHasher", "abs_key_hash", "hash_with_prefix", "index_key_hash", "java_hash", "tags_code_of"]

java_hash = java_string_hash
tags_code_of = tags_hash_code


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
            p = _powers(n)
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
            (prefix * _POW[cut] + hh) * self._tail_mult + sum(map(mul, key[cut:].encode("ascii"), self._tail_powers))
        ) & _MASK
        if h & 0x80000000:
            h = 0x100000000 - h
            return 0 if h >= 0x80000000 else h
        return h
