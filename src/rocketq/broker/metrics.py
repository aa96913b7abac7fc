"""The broker's one metrics registry: what runtime info, consume stats and (later) ``/metrics`` read.

Puts and gets are counted once, by the store (``rocketq.store.stats.StatsService``, bumped inside every put
path and every read); this registry reads those counters instead of keeping a second copy. What only the
broker sees is read here too: answers by request code and response code (the dispatcher's exit counts them,
so every answer is counted, whichever path wrote it); the gate keeps those counts where every answer passes
(``RemotingDispatcher.answer_counts``) and this registry reads them.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from rocketq.store.stats import StatsService


class BrokerMetrics:
    def __init__(self, store_stats: StatsService, answer_counts: Mapping[tuple[int, int], int]) -> None:
        self._store = store_stats
        #: (request code, response code) → answers written (the gate's own counter, read here)
        self._answers = answer_counts
        # Java's BrokerStats: the totals at the last two local midnights (zero until the first one passes)
        self.put_total_today_morning = self.put_total_yesterday_morning = 0
        self.get_total_today_morning = self.get_total_yesterday_morning = 0

    # ------------------------------------------------------------------------------ counted by the store

    @property
    def put_total(self) -> int:
        """Messages stored since start (client sends, retries, schedule and transaction re-puts alike)."""
        return self._store.put_times

    @property
    def put_bytes(self) -> int:
        return self._store.put_bytes

    @property
    def get_total(self) -> int:
        """Messages handed to readers since start."""
        return self._store.get_transferred

    def tps(self) -> tuple[float, float]:
        """(messages stored, messages handed to readers) per second over the last 10 s, from one snapshot."""
        snap = self._store.snapshot()
        return snap.put_tps, snap.get_transferred_tps

    def record_morning(self) -> None:
        """At local midnight (Java's BrokerStats.record): today's morning becomes yesterday's."""
        self.put_total_yesterday_morning = self.put_total_today_morning
        self.get_total_yesterday_morning = self.get_total_today_morning
        self.put_total_today_morning = self.put_total
        self.get_total_today_morning = self.get_total

    # ------------------------------------------------------------------------------- counted by the broker

    def answer_counts(self) -> dict[tuple[int, int], int]:
        """Answers by (request code, response code) since start."""
        return dict(self._answers)


def seconds_to_next_midnight(now: datetime.datetime | None = None) -> float:
    """Until the next local midnight (Java's UtilAll.computeNextMorningTimeMillis)."""
    now = now or datetime.datetime.now()
    midnight = (now + datetime.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max((midnight - now).total_seconds(), 1.0)
