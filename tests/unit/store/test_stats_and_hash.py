from __future__ import annotations

import time
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from rocketq.common.hashing import index_key_hash, java_string_hash
from rocketq.store import MessageStore, StoreMessage, fast_hash
from rocketq.store.stats import StatsService, human_bytes

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
    # a broker service reading its own queue (schedule, timer) is not a consumer's get
    store.get_message("A", 1, 0, 32, counted=False).release()
    store.get_message("A", 1, 9, 32, counted=False)
    store.get_message("nowhere", 0, 0, 32, counted=False)
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


def test_human_bytes_is_javas_binary_format() -> None:
    assert [human_bytes(n) for n in (0, 212, 1023, 1536, 252 * 1024**3)] == [
        "0 B", "212 B", "1023 B", "1.5 KiB", "252.0 GiB"
    ]  # fmt: skip


class _TickingSample:
    """A sample whose clock reading makes the flush thread's ``tick()`` happen right then (a deterministic
    stand-in for the thread switch the wire fuzzer hit under load)."""

    def __init__(self, service: StatsService) -> None:
        self.service = service
        self._t = time.monotonic()
        self.put = self.found = self.miss = self.transferred = 0
        self.topics: dict[str, int] = {}

    @property
    def t(self) -> float:
        self.service.tick()
        return self._t


def test_runtime_info_survives_a_tick_from_the_flush_thread_while_it_reads_the_samples() -> None:
    service = StatsService(boot_timestamp=0)
    service._samples.append(_TickingSample(service))  # type: ignore[arg-type]
    service.tick()
    info = service.runtime_info(0)  # was: RuntimeError: deque mutated during iteration
    assert len(info["putTps"].split()) == 3
