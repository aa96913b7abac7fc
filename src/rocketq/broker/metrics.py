"""The broker's one metrics registry: what runtime info, consume stats and (later) ``/metrics`` read.

Puts and gets are counted once, by the store (``rocketq.store.stats.StatsService``, bumped inside every put
path and every read); this registry reads those counters instead of keeping a second copy. What only the
broker sees is read here too: answers by request code and response code (the dispatcher's exit counts them,
so every answer is counted, whichever path wrote it); the gate keeps those counts where every answer passes
(``RemotingDispatcher.answer_counts``) and this registry reads them. A group's gets are counted here, by the
pull path (the store does not know groups), in Java's named stats tables (``stats_items``), which also hold
copies of the store's per-topic put counts for VIEW_BROKER_STATS_DATA.
"""

from __future__ import annotations

import datetime
from bisect import bisect_left
from collections.abc import Callable, Mapping

from rocketq.broker import stats_items as si
from rocketq.store.stats import StatsService

#: 5.2's rocketmq_finish_message_latency buckets (seconds): 5 s, 1 min, 10 min, 1 h, 12 h, 24 h
FINISH_BUCKETS = (5.0, 60.0, 600.0, 3600.0, 43200.0, 86400.0)


class BrokerMetrics:
    def __init__(
        self,
        store_stats: StatsService,
        answer_counts: Mapping[tuple[int, int], int],
        *,
        cluster_name: str = "DefaultCluster",
        stats_clock: Callable[[], float] | None = None,
    ) -> None:
        self._store = store_stats
        #: (request code, response code) → answers written (the gate's own counter, read here)
        self._answers = answer_counts
        self._cluster = cluster_name
        #: Java's BrokerStatsManager tables (VIEW_BROKER_STATS_DATA); puts are copied from the store's counters
        self.items = si.StatsTable(stats_clock) if stats_clock is not None else si.StatsTable()
        # Java's BrokerStats: the totals at the last two local midnights (zero until the first one passes)
        self.put_total_today_morning = self.put_total_yesterday_morning = 0
        self.get_total_today_morning = self.get_total_yesterday_morning = 0
        #: 5.1's rocketmq_send_to_dlq_messages_total: (consumer group, topic) → messages sent to the DLQ
        self.dlq: dict[tuple[str, str], int] = {}
        #: 5.2's transaction metrics, per real topic: commits, rollbacks, half messages not yet finished
        #: (since start: Java persists the half counts, rocketq starts them at 0)
        self.tx_commits: dict[str, int] = {}
        self.tx_rollbacks: dict[str, int] = {}
        self.tx_half: dict[str, int] = {}
        #: rocketmq_finish_message_latency per topic: per-bucket counts (FINISH_BUCKETS, +Inf) and the sum (s)
        self.tx_finish: dict[str, tuple[list[int], list[int]]] = {}

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

    def on_group_get(self, topic: str, group: str, msgs: int, nbytes: int) -> None:
        """A pull that found messages (Java: PullMessageProcessor's incGroupGetNums/Size)."""
        key = f"{topic}@{group}"
        self.items.add(si.GROUP_GET_NUMS, key, msgs)
        self.items.add(si.GROUP_GET_SIZE, key, nbytes)

    def on_send_back(self, topic: str, group: str) -> None:
        """A message handed back and stored again (Java: incSendBackNums; ``topic`` is the message's original
        topic, rocketmq-exporter's send-back count reads it)."""
        self.items.add(si.SNDBCK_PUT_NUMS, f"{topic}@{group}", 1)

    def on_send_to_dlq(self, group: str, topic: str) -> None:
        """A message that exhausted its retries goes to ``%DLQ%group`` (5.1: labelled by group and topic)."""
        key = (group, topic)
        self.dlq[key] = self.dlq.get(key, 0) + 1

    def on_half(self, topic: str) -> None:
        """A transactional half message of ``topic`` was accepted (5.2's TransactionMetrics +1)."""
        self.tx_half[topic] = self.tx_half.get(topic, 0) + 1

    def _finished(self, topic: str) -> None:
        n = self.tx_half.get(topic, 0)
        if n > 0:  # halves from before a restart were never counted
            self.tx_half[topic] = n - 1

    def on_commit(self, topic: str, born_ms: int, now_ms: int) -> None:
        """A half message committed; its latency (seconds since the producer made it, as 5.2) is bucketed."""
        self._finished(topic)
        self.tx_commits[topic] = self.tx_commits.get(topic, 0) + 1
        buckets, total = self.tx_finish.setdefault(topic, ([0] * (len(FINISH_BUCKETS) + 1), [0]))
        seconds = max(now_ms - born_ms, 0) // 1000
        buckets[bisect_left(FINISH_BUCKETS, seconds)] += 1
        total[0] += seconds

    def on_rollback(self, topic: str) -> None:
        self._finished(topic)
        self.tx_rollbacks[topic] = self.tx_rollbacks.get(topic, 0) + 1

    def on_discard(self, topic: str) -> None:
        """The check service gave a half message up (checked ``transactionCheckMax`` times)."""
        self._finished(topic)

    def _observe_store(self, name: str | None = None, key: str | None = None) -> None:
        """Copy the store's put counts into their items: all of them, or only the one ``name``/``key`` asks."""
        items, store = self.items, self._store
        if name in (None, si.TOPIC_PUT_NUMS, si.TOPIC_PUT_SIZE):
            topics = store.per_topic.items() if key is None else [(key, store.per_topic.get(key))]
            for topic, counts in list(topics):
                if counts is not None:
                    items.observe(si.TOPIC_PUT_NUMS, topic, counts[0], counts[0])
                    items.observe(si.TOPIC_PUT_SIZE, topic, counts[1], counts[0])
        if name in (None, si.BROKER_PUT_NUMS, si.BROKER_GET_NUMS):
            items.observe(si.BROKER_PUT_NUMS, self._cluster, store.put_times, store.put_times)
            items.observe(si.BROKER_GET_NUMS, self._cluster, store.get_transferred, store.get_found)

    def sample_stats(self) -> None:
        """Every 10 s (the controller's task)."""
        self._observe_store()
        self.items.sample()

    def view_stats(self, name: str, key: str) -> si.ItemStats | None:
        """VIEW_BROKER_STATS_DATA: one item's minute/hour/day windows (None: never counted)."""
        self._observe_store(name, key)
        return self.items.view(name, key)

    def group_consume_tps(self, group: str, topic: str) -> float:
        """Messages a group pulled from a topic per second over the last minute (Java's tpsGroupGetNums)."""
        return self.items.minute_tps(si.GROUP_GET_NUMS, f"{topic}@{group}")

    def answer_counts(self) -> dict[tuple[int, int], int]:
        """Answers by (request code, response code) since start."""
        return dict(self._answers)


def seconds_to_next_midnight(now: datetime.datetime | None = None) -> float:
    """Until the next local midnight (Java's UtilAll.computeNextMorningTimeMillis)."""
    now = now or datetime.datetime.now()
    midnight = (now + datetime.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max((midnight - now).total_seconds(), 1.0)
