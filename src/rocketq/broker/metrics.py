"""The broker's one metrics registry: what runtime info, consume stats and (later) ``/metrics`` read.

Puts and gets are counted once, by the store (``rocketq.store.stats.StatsService``, bumped inside every put
path and every read); this registry reads those counters instead of keeping a second copy. What only the
broker sees is counted here: answers by request code and response code (fed by the dispatcher's answer hook,
so every answer is counted, whichever path wrote it), and requests refused before a processor ran.
"""

from __future__ import annotations

from collections import defaultdict

from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.connection import Connection
from rocketq.store.stats import StatsService


class BrokerMetrics:
    def __init__(self, store_stats: StatsService) -> None:
        self._store = store_stats
        #: (request code, response code) → answers written
        self.answers: defaultdict[tuple[int, int], int] = defaultdict(int)

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

    def put_tps(self) -> float:
        return self._store.snapshot().put_tps

    def get_tps(self) -> float:
        return self._store.snapshot().get_transferred_tps

    # ------------------------------------------------------------------------------- counted by the broker

    def on_answer(self, conn: Connection, cmd: RemotingCommand, code: int) -> None:
        """The dispatcher's answer hook: one count per answer written."""
        self.answers[(cmd.code, code)] += 1

    def answer_counts(self) -> dict[tuple[int, int], int]:
        return dict(self.answers)
