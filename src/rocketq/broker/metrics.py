"""The broker's one metrics registry: what runtime info, consume stats and (later) ``/metrics`` read.

Puts and gets are counted once, by the store (``rocketq.store.stats.StatsService``, bumped inside every put
path and every read); this registry reads those counters instead of keeping a second copy. What only the
broker sees is read here too: answers by request code and response code (the dispatcher's exit counts them,
so every answer is counted, whichever path wrote it); the gate keeps those counts where every answer passes
(``RemotingDispatcher.answer_counts``) and this registry reads them.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketq.store.stats import StatsService


class BrokerMetrics:
    def __init__(self, store_stats: StatsService, answer_counts: Mapping[tuple[int, int], int]) -> None:
        self._store = store_stats
        #: (request code, response code) → answers written (the gate's own counter, read here)
        self._answers = answer_counts

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

    def day_marks(self) -> dict[str, int]:
        """The put and get totals at the start of today and of yesterday (Java's BrokerStats)."""
        st = self._store
        return {
            "msgPutTotalYesterdayMorning": st.put_yesterday_morning,
            "msgPutTotalTodayMorning": st.put_today_morning,
            "msgGetTotalYesterdayMorning": st.get_yesterday_morning,
            "msgGetTotalTodayMorning": st.get_today_morning,
        }

    def tps(self) -> tuple[float, float]:
        """(messages stored, messages handed to readers) per second over the last 10 s, from one snapshot."""
        snap = self._store.snapshot()
        return snap.put_tps, snap.get_transferred_tps

    # ------------------------------------------------------------------------------- counted by the broker

    def answer_counts(self) -> dict[tuple[int, int], int]:
        """Answers by (request code, response code) since start."""
        return dict(self._answers)
