"""The fuzzer's building blocks: hostile values, drawn once from hypothesis strategies.

Hypothesis is good at the values that break parsers (integer boundaries, huge integers, odd Unicode, JSON of
the wrong shape) but drawing one example costs it ~0.1–1 ms, too slow to build a million frames. So each
strategy is sampled into a pool once (a seeded ``@given`` run of its generate phase), and a seeded
``random.Random`` composes frames from the pools at memory speed (see ``frames.FrameFactory``).
"""

from __future__ import annotations

import json
import math
import string
from dataclasses import dataclass
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

T = TypeVar("T")

#: integers Java's parseInt/parseLong, int32/int64 fields and queue/offset arithmetic care about
BOUNDARY_INTS = (
    0, 1, -1, 2, 7, 8, 255, 256, 1023, 65535, 65536, 2**24, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1,
    2**32, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 2**70, -(2**70), 10**30,
)  # fmt: skip

#: text that is not quite an integer, or an integer in a form only some parsers take
HOSTILE_TEXT = (
    "", " ", "1e300", "1E3", "1.5", "-0", "+5", " 7 ", "0x1F", "1_000", "٣", "１２", "NaN", "Infinity",
    "-Infinity", "true", "null", "ä", "\u0000", "\t", "a\nb", "%s%n", "../../../etc/passwd", "a|b", "*",
    "||", "TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "%RETRY%", "%DLQ%", "%RETRY%x",
    "DefaultCluster", "\u202e", "😀", "x" * 128, "y" * 256, "z" * 4096,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Pools:
    """Values a ``FrameFactory`` picks from; every list non-empty."""

    ints: list[int]
    texts: list[str]
    json_values: list[Any]
    names: list[str]


def _sample(strategy: st.SearchStrategy[T], n: int, seed_: int) -> list[T]:
    """Up to ``n`` examples of ``strategy`` from hypothesis's generate phase (deterministic for a seed)."""
    out: list[T] = []

    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @seed(seed_)
    @given(strategy)
    def collect(value: T) -> None:
        out.append(value)

    collect()
    return out


def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20),
        st.sampled_from(BOUNDARY_INTS),
    )  # fmt: skip
    return st.recursive(
        scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=8,
    )  # fmt: skip


def build_pools(seed_: int = 19, size: int = 300) -> Pools:
    ints = _sample(st.one_of(st.integers(), st.integers(-(2**65), 2**65), st.sampled_from(BOUNDARY_INTS)), size,
                   seed_)  # fmt: skip
    texts = _sample(
        st.one_of(
            st.text(max_size=40),
            st.from_regex(r"[-+]?[0-9]{1,30}", fullmatch=True),
            st.floats().map(repr),
            st.text(alphabet=string.printable, max_size=300),
        ),
        size, seed_ + 1,
    )  # fmt: skip
    json_values = _sample(_json_values(), size, seed_ + 2)
    # names that look like topics/groups (so some requests reach the business rules) but never like the
    # names a test creates on purpose (they start with "Keep"): see ``is_fuzz_name``
    names = _sample(st.from_regex(r"Fz[A-Za-z0-9_%|-]{0,12}", fullmatch=True), size // 3, seed_ + 3)
    ints += list(BOUNDARY_INTS)
    texts += list(HOSTILE_TEXT) + [str(i) for i in BOUNDARY_INTS]
    json_values += [2**70, -(2**70), math.inf, "1e300", [], {}]
    names += [f"FzTopic{i}" for i in range(8)] + [f"FzGroup{i}" for i in range(4)]
    return Pools(ints, texts, json_values, names)


def dumps_any(value: Any) -> bytes:
    """JSON text for any pool value (ints beyond 64 bits and infinities too, which orjson refuses)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")
