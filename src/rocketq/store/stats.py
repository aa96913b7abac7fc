"""Store statistics: totals, per-topic counts and recent TPS (RocketMQ's ``StoreStatsService``, trimmed).

Counters are bumped on the put path (under the put lock) and the get path (no lock: a lost increment under
contention is acceptable for statistics). ``tick()`` records a sample about once a second (the logics flush
thread calls it); TPS is computed over the samples of the last 10 s / 1 min / 10 min.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field

#: upper bounds of RocketMQ 5.1's rocketmq_message_size buckets, in bytes (1 KiB, 4 KiB, 512 KiB, 1, 2, 4 MiB)
SIZE_BUCKETS = (1024.0, 4096.0, 524288.0, 1048576.0, 2097152.0, 4194304.0)


@dataclass(frozen=True, slots=True)
class TopicStats:
    put_msgs: int
    put_bytes: int
    put_tps: float


@dataclass(frozen=True, slots=True)
class StoreStats:
    boot_timestamp: int
    put_message_times_total: int
    put_message_size_total: int
    put_message_failed_times: int
    get_message_found_times: int
    get_message_miss_times: int
    get_message_transferred_msgs: int
    put_tps: float
    get_found_tps: float
    get_miss_tps: float
    get_transferred_tps: float
    topics: dict[str, TopicStats] = field(default_factory=dict)


class _Sample:
    __slots__ = ("found", "miss", "put", "t", "topics", "transferred")

    def __init__(self, t: float, put: int, found: int, miss: int, transferred: int, topics: dict[str, int]) -> None:
        self.t = t
        self.put = put
        self.found = found
        self.miss = miss
        self.transferred = transferred
        self.topics = topics


class StatsService:
    WINDOWS = (10.0, 60.0, 600.0)

    def __init__(self, boot_timestamp: int) -> None:
        self.boot_timestamp = boot_timestamp
        self.put_times = 0
        self.put_bytes = 0
        self.put_failed = 0
        self.get_found = 0
        self.get_miss = 0
        self.get_transferred = 0
        #: topic → [messages, bytes]
        self.per_topic: dict[str, list[int]] = {}
        #: stored messages by size (RocketMQ 5.1's rocketmq_message_size buckets; the last one: larger)
        self.size_buckets = [0] * (len(SIZE_BUCKETS) + 1)
        self._samples: deque[_Sample] = deque(maxlen=700)
        self.tick()

    def on_put(self, topic: str, msgs: int, nbytes: int) -> None:
        self.put_times += msgs
        self.put_bytes += nbytes
        # a batch counts as ``msgs`` messages of its average size: one bump per put, not one per message
        self.size_buckets[bisect_left(SIZE_BUCKETS, nbytes // msgs if msgs > 1 else nbytes)] += msgs
        t = self.per_topic.get(topic)
        if t is None:
            self.per_topic[topic] = [msgs, nbytes]
        else:
            t[0] += msgs
            t[1] += nbytes

    def tick(self) -> None:
        self._samples.append(
            _Sample(
                time.monotonic(), self.put_times, self.get_found, self.get_miss, self.get_transferred,
                {k: v[0] for k, v in self.per_topic.items()},
            )
        )

    def _base(self, window: float) -> _Sample:
        now = time.monotonic()
        # tick() appends from the flush thread: walk a copy (deque.copy runs in C, so no tick can interleave),
        # or a tick between two steps fails this loop with "deque mutated during iteration"
        samples = self._samples.copy()
        base = samples[-1]
        for s in reversed(samples):
            if now - s.t > window:
                break
            base = s
        return base

    @staticmethod
    def _rate(cur: int, base: int, dt: float) -> float:
        return (cur - base) / dt if dt > 0 else 0.0

    def _tps(self, window: float) -> tuple[float, float, float, float, _Sample, float]:
        base = self._base(window)
        dt = time.monotonic() - base.t
        return (
            self._rate(self.put_times, base.put, dt),
            self._rate(self.get_found, base.found, dt),
            self._rate(self.get_miss, base.miss, dt),
            self._rate(self.get_transferred, base.transferred, dt),
            base,
            dt,
        )

    def snapshot(self) -> StoreStats:
        put, found, miss, transferred, base, dt = self._tps(self.WINDOWS[0])
        topics = {
            name: TopicStats(v[0], v[1], self._rate(v[0], base.topics.get(name, 0), dt))
            for name, v in list(self.per_topic.items())
        }
        return StoreStats(
            boot_timestamp=self.boot_timestamp,
            put_message_times_total=self.put_times,
            put_message_size_total=self.put_bytes,
            put_message_failed_times=self.put_failed,
            get_message_found_times=self.get_found,
            get_message_miss_times=self.get_miss,
            get_message_transferred_msgs=self.get_transferred,
            put_tps=put,
            get_found_tps=found,
            get_miss_tps=miss,
            get_transferred_tps=transferred,
            topics=topics,
        )

    def runtime_info(self, now_ms: int) -> dict[str, str]:
        """The StoreStatsService keys of RocketMQ's GET_BROKER_RUNTIME_INFO."""
        rates = [self._tps(w) for w in self.WINDOWS]

        def fmt(i: int) -> str:
            return " ".join(f"{r[i]:.2f}" for r in rates)

        found_plus_miss = " ".join(f"{r[1] + r[2]:.2f}" for r in rates)
        return {
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": _format_runtime(now_ms - self.boot_timestamp),
            "putMessageTimesTotal": str(self.put_times),
            "putMessageSizeTotal": str(self.put_bytes),
            "putMessageFailedTimes": str(self.put_failed),
            "putMessageAverageSize": f"{self.put_bytes / self.put_times if self.put_times else 0.0:.2f}",
            "putTps": fmt(0),
            "getFoundTps": fmt(1),
            "getMissTps": fmt(2),
            "getTotalTps": found_plus_miss,
            "getTransferedTps": fmt(3),
            "dispatchMaxBuffer": "0",
        }


def _format_runtime(ms: int) -> str:
    s = max(ms, 0) // 1000
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, seconds = divmod(s, 60)
    return f"[ {days} days, {hours} hours, {minutes} minutes, {seconds} seconds ]"


def human_bytes(n: int) -> str:
    """Java's MixAll.humanReadableByteCount(n, false): ``212 B``, ``1.5 KiB``, ``252.0 GiB``."""
    if n < 1024:
        return f"{n} B"
    exp = min(int(math.log(n) / math.log(1024)), 6)
    return f"{n / 1024**exp:.1f} {'KMGTPE'[exp - 1]}iB"
