"""Java ``String.hashCode()`` without a per-character Python loop (same results as ``rocketq.common.hashing``).

``h = sum(unit[i] * 31**(n-1-i)) mod 2**32`` is evaluated as one ``sum(map(mul, units, powers))`` over a
precomputed table of powers of 31, which runs in C. Index keys (``topic#UNIQ_KEY``) and tags are hashed for
every stored message, so this sits on the append path.
"""

from __future__ import annotations

import sys
from operator import mul
from typing import Final

from rocketq.common.hashing import java_string_hash

_MASK: Final = 0xFFFFFFFF
_MAX_FAST: Final = 1024
#: _POWERS[_MAX_FAST - n:] == [31**(n-1), ..., 31, 1] (mod 2**32)
_POWERS: Final = [pow(31, k, 1 << 32) for k in range(_MAX_FAST - 1, -1, -1)]
_UTF16: Final = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def java_hash(s: str) -> int:
    """Java ``String.hashCode()`` as a signed int32."""
    if s.isascii():
        units: bytes | memoryview = s.encode("ascii")
    else:
        units = memoryview(s.encode(_UTF16, "surrogatepass")).cast("H")
    n = len(units)
    if n > _MAX_FAST:
        return java_string_hash(s)
    h = sum(map(mul, units, _POWERS[_MAX_FAST - n :])) & _MASK
    return h - 0x100000000 if h & 0x80000000 else h


def tags_code_of(tags: str | None) -> int:
    return java_hash(tags) if tags else 0


def index_key_hash(key: str) -> int:
    """``abs(hashCode)``, 0 for Integer.MIN_VALUE (IndexFile.indexKeyHashMethod)."""
    h = abs(java_hash(key))
    return 0 if h >= 0x80000000 else h
