"""Percentile math and throughput arithmetic of ``rocketq bench``."""

from __future__ import annotations

import pytest

from rocketq.bench.stats import LatencyRecorder, nearest_rank, percentile, summarize, throughput


def test_nearest_rank_on_one_to_hundred() -> None:
    values = list(range(1, 101))
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 99.9) == 100
    assert percentile(values, 100) == 100
    assert percentile(values, 1) == 1


def test_p999_of_a_thousand_samples_is_the_999th() -> None:
    values = list(range(1, 1001))
    assert percentile(values, 99.9) == 999  # not 1000: the rank is rounded before the ceiling
    assert percentile(values, 99) == 990


def test_small_sample_counts() -> None:
    assert percentile([7.0], 50) == 7.0
    assert percentile([7.0], 99.9) == 7.0
    assert percentile([1.0, 2.0], 50) == 1.0
    assert percentile([1.0, 2.0], 51) == 2.0
    assert nearest_rank(10, 0.01) == 0


@pytest.mark.parametrize("q", [0, -1, 100.5])
def test_percentile_outside_range_raises(q: float) -> None:
    with pytest.raises(ValueError):
        nearest_rank(10, q)


def test_no_samples() -> None:
    with pytest.raises(ValueError):
        nearest_rank(0, 50)
    assert summarize([]) is None
    assert LatencyRecorder().summary() is None


def test_summarize_sorts_and_averages() -> None:
    s = summarize([3.0, 1.0, 2.0, 10.0])
    assert s is not None
    assert (s.count, s.p50, s.max, s.mean) == (4, 2.0, 10.0, 4.0)
    assert s.to_dict()["p999"] == 10.0
    assert "p99.9" in s.format()


def test_recorder_takes_seconds_and_reports_milliseconds() -> None:
    rec = LatencyRecorder()
    for v in (0.001, 0.002, 0.003):
        rec.record(v)
    assert len(rec) == 3
    s = rec.summary()
    assert s is not None
    assert s.p50 == pytest.approx(2.0)
    assert s.max == pytest.approx(3.0)
    recent = rec.recent(1)
    assert recent is not None and recent.count == 1 and recent.p50 == pytest.approx(3.0)


def test_throughput() -> None:
    t = throughput(10_000, 2.0, 1024)
    assert t.msgs_per_s == 5000
    assert t.mb_per_s == pytest.approx(5000 * 1024 / 1e6)
    assert t.to_dict()["messages"] == 10_000
    with pytest.raises(ValueError):
        throughput(1, 0.0, 1)
