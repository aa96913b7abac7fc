from __future__ import annotations

import datetime
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from rocketq.common.hashing import index_key_hash, java_string_hash
from rocketq.store import MessageStore, StoreMessage, fast_hash
from rocketq.store.stats import StatsService

StoreFactory = Callable[..., MessageStore]


def test_known_java_hashes() -> None:
    assert fast_hash.java_hash("hello") == 99162322
    assert fast_hash.java_hash("") == 0
    assert fast_hash.java_hash("中文") == 20013 * 31 + 25991
    assert fast_hash.tags_code_of(None) == 0 and fast_hash.tags_code_of("") == 0


@given(st.text(max_size=1100))
def test_fast_hash_matches_reference(s: str) -> None:
    assert fast_hash.java_hash(s) == java_string_hash(s)
    assert fast_hash.index_key_hash(s) == index_key_hash(s)


def test_min_int_key_hash() -> None:
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE
    assert fast_hash.java_hash("polygenelubricants") == -(2**31)
    assert fast_hash.index_key_hash("polygenelubricants") == 0


def test_stats_and_runtime_info(open_store: StoreFactory) -> None:
    store = open_store()
    for i in range(3):
        store.put_message(StoreMessage(topic="A", body=b"x" * 10, queue_id=i))
    store.put_message(StoreMessage(topic="B", body=b"y"))
    store.get_message("A", 0, 0, 32).release()
    store.get_message("A", 0, 5, 32)
    s = store.stats()
    assert s.put_message_times_total == 4
    assert s.topics["A"].put_msgs == 3 and s.topics["B"].put_msgs == 1
    assert s.topics["A"].put_bytes == 3 * (91 + 10 + 1)
    assert s.get_message_found_times == 1 and s.get_message_miss_times == 1
    assert s.get_message_transferred_msgs == 1
    info = store.runtime_info()
    for key in ("commitLogMinOffset", "commitLogMaxOffset", "putTps", "getFoundTps", "putMessageTimesTotal",
                "commitLogDiskRatio", "consumeQueueDiskRatio", "bootTimestamp", "runtime"):
        assert key in info
    assert info["commitLogMaxOffset"] == str(store.get_max_phy_offset())
    assert info["putMessageTimesTotal"] == "4"
    assert len(info["putTps"].split()) == 3


def test_day_marks_move_on_the_first_tick_of_a_new_day() -> None:
    """Java's BrokerStats: the totals at the start of today and of yesterday (0 until a day has passed)."""
    stats = StatsService(0)
    stats.on_put("T", 5, 100)
    stats.get_transferred = 3
    stats.tick()
    assert (stats.put_today_morning, stats.put_yesterday_morning, stats.get_today_morning) == (0, 0, 0)
    stats._day -= datetime.timedelta(days=1)  # as if the broker had been up since yesterday
    stats.tick()
    assert (stats.put_today_morning, stats.get_today_morning, stats.put_yesterday_morning) == (5, 3, 0)
    stats.on_put("T", 2, 10)
    stats._day -= datetime.timedelta(days=1)
    stats.tick()
    assert (stats.put_today_morning, stats.put_yesterday_morning) == (7, 5)
