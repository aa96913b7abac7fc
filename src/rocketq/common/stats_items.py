"""Named, keyed counters with minute/hour/day windows: Java's ``StatsItem`` tables.

The broker's (BrokerStatsManager: what VIEW_BROKER_STATS_DATA answers, mqadmin statsAll, and what
GET_CONSUME_STATS reports as a group's consume TPS) and a push consumer's (ConsumerStatsManager: the
``statusTable`` of its running info). Each item keeps a running ``value`` (messages, bytes or milliseconds)
and ``times`` (increments), and samples of both: every 10 s for the minute window, every 10 min for the
hour, every hour for the day, as Java does.

One difference, on purpose: Java computes a window from its samples only, so a new item reads 0 until its
next 10-s sample; here the current value closes every window, so a count is visible at once (a window's
``sum`` is what happened between its oldest sample, at most a minute/hour/day ago, and now).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

# Java's Stats names (org.apache.rocketmq.common.stats.Stats) that rocketq keeps.
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"  #: messages a group handed back (CONSUMER_SEND_MSG_BACK), by topic@group
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"

MINUTE_SAMPLE, HOUR_SAMPLE, DAY_SAMPLE = 10.0, 600.0, 3600.0


@dataclass(frozen=True, slots=True)
class WindowStats:
    """One window of an item: Java's BrokerStatsItem (sum, tps per second, avgpt = sum per increment)."""

    sum: int
    tps: float
    avgpt: float

    def to_json(self) -> dict[str, float | int]:
        return {"avgpt": self.avgpt, "sum": self.sum, "tps": self.tps}


@dataclass(frozen=True, slots=True)
class ItemStats:
    """Java's BrokerStatsData."""

    minute: WindowStats
    hour: WindowStats
    day: WindowStats

    def to_json(self) -> dict[str, object]:
        return {"statsDay": self.day.to_json(), "statsHour": self.hour.to_json(), "statsMinute": self.minute.to_json()}


class _Item:
    __slots__ = ("day", "hour", "minute", "times", "value")

    def __init__(self, now: float) -> None:
        self.value = 0
        self.times = 0
        base = (now, 0, 0)
        # (monotonic time, value, times); the oldest sample opens the window
        self.minute: deque[tuple[float, int, int]] = deque([base], maxlen=6)
        self.hour: deque[tuple[float, int, int]] = deque([base], maxlen=6)
        self.day: deque[tuple[float, int, int]] = deque([base], maxlen=24)

    def window(self, samples: deque[tuple[float, int, int]], now: float) -> WindowStats:
        t0, v0, n0 = samples[0]
        total = self.value - v0
        times = self.times - n0
        # a window younger than a second would turn one message into a huge rate
        return WindowStats(total, total / max(now - t0, 1.0), total / times if times > 0 else 0.0)


class StatsTable:
    """``add(name, key, n)`` counts; ``observe`` copies a total counted elsewhere (the store's per topic)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._items: dict[tuple[str, str], _Item] = {}
        now = clock()
        self._last_hour_sample = self._last_day_sample = now

    def _item(self, name: str, key: str) -> _Item:
        item = self._items.get((name, key))
        if item is None:
            item = self._items[(name, key)] = _Item(self._clock())
        return item

    def add(self, name: str, key: str, value: int, times: int = 1) -> None:
        item = self._item(name, key)
        item.value += value
        item.times += times

    def observe(self, name: str, key: str, value: int, times: int) -> None:
        item = self._item(name, key)
        item.value = value
        item.times = times

    def view(self, name: str, key: str) -> ItemStats | None:
        """The item's three windows; None when nothing was ever counted under that name and key."""
        item = self._items.get((name, key))
        if item is None:
            return None
        now = self._clock()
        return ItemStats(item.window(item.minute, now), item.window(item.hour, now), item.window(item.day, now))

    def totals(self, name: str) -> list[tuple[str, int]]:
        """(key, value counted since start) of every item under ``name`` (the Prometheus counters)."""
        return [(key, item.value) for (n, key), item in list(self._items.items()) if n == name]

    def minute_tps(self, name: str, key: str) -> float:
        item = self._items.get((name, key))
        return item.window(item.minute, self._clock()).tps if item is not None else 0.0

    def sample(self) -> None:
        """Every 10 s: a minute sample of every item; an hour sample every 10 min, a day sample every hour."""
        now = self._clock()
        hour = now - self._last_hour_sample >= HOUR_SAMPLE
        day = now - self._last_day_sample >= DAY_SAMPLE
        if hour:
            self._last_hour_sample = now
        if day:
            self._last_day_sample = now
        for item in self._items.values():
            point = (now, item.value, item.times)
            item.minute.append(point)
            if hour:
                item.hour.append(point)
            if day:
                item.day.append(point)
