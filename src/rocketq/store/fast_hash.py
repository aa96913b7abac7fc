"""The store's Java-compatible hashes, built on ``rocketq.common.hashing``.

The append path hashes index keys with ``rocketq.store.appendcodec`` (``index_entries``, ``write_batch``);
these are the Python forms, used by queries, the pure twin and tests. ``hash_with_prefix`` reuses the hash of
a ``topic#`` prefix.
"""

from __future__ import annotations

from rocketq.common.hashing import MASK32 as _MASK
from rocketq.common.hashing import MAX_FAST as _MAX_FAST
from rocketq.common.hashing import POW as _POW
from rocketq.common.hashing import abs_key_hash, index_key_hash, java_string_hash, tags_hash_code, unsigned_hash

__all__ = ["abs_key_hash", "hash_with_prefix", "index_key_hash", "java_hash", "tags_code_of"]

java_hash = java_string_hash
tags_code_of = tags_hash_code


def hash_with_prefix(prefix_hash: int, s: str) -> int:
    """Unsigned hashCode of ``prefix + s`` given the unsigned hashCode of ``prefix``."""
    h, n = unsigned_hash(s)
    mult = _POW[n] if n <= _MAX_FAST else pow(31, n, 1 << 32)
    return (prefix_hash * mult + h) & _MASK
