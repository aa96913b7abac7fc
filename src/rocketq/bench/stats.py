"""Percentiles and throughput: the arithmetic behind every figure ``rocketq bench`` prints.

Percentiles use the *nearest-rank* definition (the smallest sample with at least q % of the samples at or
below it): no interpolation, so a reported p99 is always a latency that really happened. With n samples, the
p99.9 of fewer than 1,000 samples is the maximum — the report prints the sample count next to it.
"""

from __future__ import annotations

import math
import time
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "LatencyRecorder",
    "LatencySummary",
    "Throughput",
    "nearest_rank",
    "percentile",
    "summarize",
    "throughput",
]


def nearest_rank(n: int, q: float) -> int:
    """The 0-based index of the q-th percentile (0 < q ≤ 100) in n sorted samples (nearest-rank method)."""
    if n <= 0:
        raise ValueError("no samples")
    if not 0 < q <= 100:
        raise ValueError(f"percentile {q} outside (0, 100]")
    # ceil(q/100 * n) is the 1-based rank; round first so 99.9 % of 1000 is exactly rank 999, not 1000.
    rank = math.ceil(round(q * n / 100, 9))
    return min(n, max(1, rank)) - 1


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile of already sorted values (nearest rank)."""
    return sorted_values[nearest_rank(len(sorted_values), q)]


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Latency figures in milliseconds."""

    count: int
    mean: float
    p50: float
    p99: float
    p999: float
    max: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format(self) -> str:
        return (
            f"p50 {self.p50:.2f} ms  p99 {self.p99:.2f} ms  p99.9 {self.p999:.2f} ms  max {self.max:.2f} ms"
            f"  (n={self.count:,})"
        )


def summarize(samples_ms: Iterable[float]) -> LatencySummary | None:
    """Summary of latency samples in ms; None when there are none."""
    values = sorted(samples_ms)
    if not values:
        return None
    return LatencySummary(
        count=len(values),
        mean=math.fsum(values) / len(values),
        p50=percentile(values, 50),
        p99=percentile(values, 99),
        p999=percentile(values, 99.9),
        max=values[-1],
    )


class LatencyRecorder:
    """Collects latency samples (seconds in, milliseconds out) in a compact array.

    Eight bytes a sample: a million sends cost 8 MB. ``record`` is on the load generator's hot path, so it is one
    append and nothing else.
    """

    __slots__ = ("_samples",)

    def __init__(self) -> None:
        self._samples = array("d")

    def record(self, seconds: float) -> None:
        self._samples.append(seconds)

    def appender(self) -> Callable[[float], None]:
        """``record`` without its own call: the samples' ``append`` (a load generator's hot path)."""
        return self._samples.append

    def record_since(self, start: float) -> None:
        self._samples.append(time.perf_counter() - start)

    def __len__(self) -> int:
        return len(self._samples)

    def summary(self) -> LatencySummary | None:
        return summarize(s * 1000.0 for s in self._samples)

    def recent(self, n: int) -> LatencySummary | None:
        """Summary of the last n samples (for the live progress line)."""
        return summarize(s * 1000.0 for s in self._samples[-n:])


@dataclass(frozen=True, slots=True)
class Throughput:
    messages: int
    seconds: float
    msgs_per_s: float
    mb_per_s: float  # payload (body) bytes, 10^6 bytes a MB

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def throughput(messages: int, seconds: float, body_size: int) -> Throughput:
    """Messages and body megabytes per second over ``seconds`` of wall time."""
    if seconds <= 0:
        raise ValueError("elapsed time must be positive")
    rate = messages / seconds
    return Throughput(messages, seconds, rate, rate * body_size / 1e6)
