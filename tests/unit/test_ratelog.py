"""``RateLimitedLog``: one line per key and interval, bounded keys, bounded lines overall."""

from __future__ import annotations

import logging

import pytest

from rocketq.common import ratelog
from rocketq.common.ratelog import RateLimitedLog


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(ratelog.time, "monotonic", c)
    return c


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ratelog-test"]


def test_one_line_per_key_and_interval_then_the_count_of_what_was_swallowed(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    rl = RateLimitedLog(logging.getLogger("ratelog-test"), interval=60.0)
    assert rl.warning(("refused", "10.0.0.1"), "refused %s", "10.0.0.1:1")
    for port in range(2, 7):
        assert not rl.warning(("refused", "10.0.0.1"), "refused %s", f"10.0.0.1:{port}")
    assert rl.warning(("refused", "10.0.0.2"), "refused %s", "10.0.0.2:1")  # another peer: its own line
    clock.now += 60.0
    assert rl.warning(("refused", "10.0.0.1"), "refused %s", "10.0.0.1:9")
    assert messages(caplog) == [
        "refused 10.0.0.1:1",
        "refused 10.0.0.2:1",
        "refused 10.0.0.1:9 (5 more like it suppressed)",
    ]
    assert rl.suppressed_total == 5


def test_keys_and_lines_stay_bounded_whatever_the_peers_do(clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    rl = RateLimitedLog(logging.getLogger("ratelog-test"), interval=60.0, max_keys=8, max_lines=5)
    written = sum(rl.warning(("peer", i), "peer %d", i) for i in range(1000))  # a peer rotating its address
    assert written == 5
    assert len(rl._seen) <= 8
    clock.now += 60.0
    assert rl.warning(("peer", 1000), "peer %d", 1000)
    assert messages(caplog)[-1] == "peer 1000 (995 other lines suppressed by the rate limit)"
    for i in range(100):
        clock.now += 60.0
        rl.warning(("peer", 2000 + i), "peer %d", i)
    assert len(rl._seen) == 8  # the oldest keys are forgotten
