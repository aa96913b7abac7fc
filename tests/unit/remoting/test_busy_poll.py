"""BusyPoller: how long the loop keeps polling after a read, and how that limit adapts (a fake clock)."""

from __future__ import annotations

import asyncio

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.errors import ConfigError
from rocketq.remoting import busy_poll
from rocketq.remoting.busy_poll import COOLDOWN, GROW_START, BusyPoller

MAX = 200e-6


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def _turn(n: int = 3) -> None:
    """Let the loop run a few iterations (the poll re-arms itself once per iteration)."""
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_lone_request_does_not_start_polling() -> None:
    clock = FakeClock()
    poller = BusyPoller(MAX, clock=clock)
    poller.kick()
    assert poller.limit == 0.0
    assert not poller.polling
    assert poller.polls_started == 0


async def test_requests_close_together_grow_the_limit_up_to_the_maximum() -> None:
    clock = FakeClock()
    poller = BusyPoller(MAX, clock=clock)
    poller.kick()
    limits = []
    for _ in range(3):
        clock.advance(150e-6)
        await _turn()
        assert not poller.polling  # the polling (if any) ran out before this read: it should have lasted longer
        poller.kick()
        limits.append(poller.limit)
    assert limits == [pytest.approx(GROW_START), pytest.approx(2 * GROW_START), pytest.approx(MAX)]
    clock.advance(150e-6)
    await _turn()
    assert poller.polling  # now the next read is caught while polling
    poller.kick()
    assert poller.limit == pytest.approx(MAX) and poller.polls_started == 3


async def test_polling_runs_until_the_limit_after_the_last_activity() -> None:
    clock = FakeClock()
    poller = BusyPoller(MAX, clock=clock)
    poller.kick()
    clock.advance(100e-6)
    poller.kick()  # grows to GROW_START and starts polling
    assert poller.polling and poller.polls_started == 1
    clock.advance(GROW_START / 2)
    await _turn()
    assert poller.polling
    poller.touch()  # an answer went out: the quiet period starts again
    clock.advance(GROW_START * 0.9)
    await _turn()
    assert poller.polling
    clock.advance(GROW_START * 0.2)
    await _turn()
    assert not poller.polling


async def test_a_read_while_polling_keeps_the_limit_and_does_not_start_a_second_poll() -> None:
    clock = FakeClock()
    poller = BusyPoller(MAX, clock=clock)
    poller.kick()
    clock.advance(100e-6)
    poller.kick()
    limit = poller.limit
    clock.advance(GROW_START / 2)
    poller.kick()  # caught by the poll
    assert poller.limit == limit
    assert poller.polls_started == 1


async def test_idle_seconds_count_only_the_spinning_between_activities() -> None:
    clock = FakeClock()
    poller = BusyPoller(MAX, clock=clock)
    poller.kick()
    clock.advance(100e-6)
    poller.kick()  # starts polling; the 100 µs before were spent asleep, not spinning
    assert poller.idle_seconds == 0.0
    clock.advance(20e-6)
    poller.kick()  # caught after 20 µs of spinning
    assert poller.idle_seconds == pytest.approx(20e-6)
    poller.touch()  # the answer: work, not spinning, up to here
    clock.advance(GROW_START * 1.1)
    await _turn()  # the poll ends: its quiet time was spun
    assert not poller.polling
    assert poller.idle_seconds == pytest.approx(20e-6 + GROW_START * 1.1)
    clock.advance(1.0)  # asleep
    poller.kick()
    assert poller.idle_seconds == pytest.approx(20e-6 + GROW_START * 1.1)


def _start_polling(poller: BusyPoller, clock: FakeClock) -> None:
    poller.kick()
    clock.advance(100e-6)
    poller.kick()  # two reads close together: polling starts


async def test_a_quick_yield_keeps_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    poller = BusyPoller(MAX, clock=clock)
    # the producer woken on this core runs ~50 µs, then blocks for its answer
    monkeypatch.setattr(busy_poll, "_sched_yield", lambda: clock.advance(10e-6))
    _start_polling(poller, clock)
    await _turn(2)
    assert poller.polling and poller.backoffs == 0


async def test_a_yield_that_lost_the_core_for_a_slice_stops_polling_for_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock()
    poller = BusyPoller(MAX, clock=clock)
    monkeypatch.setattr(busy_poll, "_sched_yield", lambda: clock.advance(3e-3))  # a CPU hog's slice
    _start_polling(poller, clock)
    await _turn()
    assert not poller.polling and poller.backoffs == 1
    started = poller.polls_started
    for _ in range(5):  # reads close together, but cooling down: no poll starts
        clock.advance(100e-6)
        poller.kick()
    assert poller.polls_started == started and not poller.polling
    clock.advance(COOLDOWN)
    poller.kick()
    assert poller.polling  # tried again after the cooldown


async def test_long_quiet_periods_shrink_the_limit_to_zero() -> None:
    clock = FakeClock()
    poller = BusyPoller(MAX, clock=clock)
    poller.limit = MAX
    limits = []
    for _ in range(4):
        clock.advance(10e-3)
        await _turn()
        poller.kick()
        limits.append(poller.limit)
    assert limits[:2] == [pytest.approx(MAX / 2), pytest.approx(MAX / 4)]
    assert limits[-1] == 0.0  # below GROW_START: off until requests come close together again
    clock.advance(1.0)
    await _turn()
    assert not poller.polling


async def test_a_zero_maximum_never_polls() -> None:
    clock = FakeClock()
    poller = BusyPoller(0.0, clock=clock)
    for _ in range(5):
        clock.advance(10e-6)
        poller.kick()
    assert poller.polls_started == 0 and not poller.polling


def test_broker_config_bounds_the_maximum() -> None:
    assert BrokerConfig.from_mapping({"busyPollMaxMicros": "0"}).busyPollMaxMicros == 0
    with pytest.raises(ConfigError, match="busyPollMaxMicros"):
        BrokerConfig.from_mapping({"busyPollMaxMicros": "-1"})
