"""Java's keyed stats tables (VIEW_BROKER_STATS_DATA): windows closed by the current value, sampled like Java."""

from __future__ import annotations

from rocketq.broker.stats_items import GROUP_GET_NUMS, TOPIC_PUT_NUMS, StatsTable


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_count_is_visible_at_once_and_leaves_the_minute_window_after_a_minute() -> None:
    clock = Clock()
    table = StatsTable(clock)
    assert table.view(TOPIC_PUT_NUMS, "T") is None  # Java: "The stats <..> <..> not exist"
    table.add(GROUP_GET_NUMS, "T@g", 6, times=2)  # two pulls, six messages
    clock.now += 3
    view = table.view(GROUP_GET_NUMS, "T@g")
    assert view is not None
    assert (view.minute.sum, view.hour.sum, view.day.sum) == (6, 6, 6)
    assert view.minute.tps == 2.0 and view.minute.avgpt == 3.0
    for _ in range(7):  # 70 s of 10-s samples, nothing new
        clock.now += 10
        table.sample()
    view = table.view(GROUP_GET_NUMS, "T@g")
    assert view is not None and (view.minute.sum, view.minute.tps) == (0, 0.0)
    assert view.hour.sum == 6 and view.day.sum == 6
    assert view.to_json()["statsMinute"] == {"avgpt": 0.0, "sum": 0, "tps": 0.0}


def test_hour_and_day_windows_roll_on_their_own_samples() -> None:
    clock = Clock()
    table = StatsTable(clock)
    table.observe(TOPIC_PUT_NUMS, "T", 10, 10)  # a total counted elsewhere (the store)
    for _ in range(6 * 70):  # 70 minutes
        clock.now += 10
        table.sample()
    table.observe(TOPIC_PUT_NUMS, "T", 12, 12)
    assert table.minute_tps(TOPIC_PUT_NUMS, "T") > 0
    view = table.view(TOPIC_PUT_NUMS, "T")
    assert view is not None and (view.minute.sum, view.hour.sum, view.day.sum) == (2, 2, 12)
    for _ in range(6 * 60 * 24):  # a day later the first ten are out of the day window too
        clock.now += 10
        table.sample()
    view = table.view(TOPIC_PUT_NUMS, "T")
    assert view is not None and (view.minute.sum, view.hour.sum, view.day.sum) == (0, 0, 0)
