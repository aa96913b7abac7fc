"""The pending checkpoints: what was popped and is neither acked nor revived yet. Pure state, no I/O.

Ordered by due time (pop time + invisible time) for the revive loop; counted per group and topic for the
in-flight views; per revive queue, the lowest stored offset of a pending checkpoint is how far the revive
offset may move (a restart replays from there).
"""

from __future__ import annotations

import heapq
from collections import defaultdict

from rocketq.broker.pop.records import Checkpoint, CkKey


class PendingCheckpoints:
    def __init__(self) -> None:
        self._by_key: dict[CkKey, Checkpoint] = {}
        #: offsets of a pending checkpoint still waiting for their ack
        self._unacked: dict[CkKey, set[int]] = {}
        self._heap: list[tuple[int, int, CkKey]] = []  # (due ms, sequence, key)
        self._seq = 0
        #: revive queue -> revive offsets of pending checkpoints stored there
        self._stored_at: dict[int, set[int]] = defaultdict(set)

    def __len__(self) -> int:
        return len(self._by_key)

    def add(self, ck: Checkpoint, acked: set[int] | None = None) -> None:
        left = set(ck.offsets) - (acked or set())
        if not left:
            return
        self._by_key[ck.key] = ck
        self._unacked[ck.key] = left
        self._seq += 1
        heapq.heappush(self._heap, (ck.due_ms, self._seq, ck.key))
        if ck.revive_offset >= 0:
            self._stored_at[ck.revive_qid].add(ck.revive_offset)

    def get(self, key: CkKey) -> Checkpoint | None:
        return self._by_key.get(key)

    def is_unacked(self, key: CkKey, offset: int) -> bool:
        return offset in self._unacked.get(key, ())

    def ack(self, key: CkKey, offset: int) -> bool:
        """Record an ack; True if it settled an offset that was waiting."""
        left = self._unacked.get(key)
        if left is None or offset not in left:
            return False
        left.discard(offset)
        if not left:
            self.remove(key)
        return True

    def remove(self, key: CkKey) -> Checkpoint | None:
        ck = self._by_key.pop(key, None)
        self._unacked.pop(key, None)
        if ck is not None and ck.revive_offset >= 0:
            self._stored_at[ck.revive_qid].discard(ck.revive_offset)
        return ck  # its heap entry is skipped when it comes up

    def pop_due(self, now_ms: int) -> list[tuple[Checkpoint, list[int]]]:
        """Checkpoints whose invisible time is over, with their un-acked offsets (they stay pending until the
        caller has revived them and calls ``remove``)."""
        out: list[tuple[Checkpoint, list[int]]] = []
        while self._heap and self._heap[0][0] <= now_ms:
            _, _, key = heapq.heappop(self._heap)
            ck = self._by_key.get(key)
            if ck is not None and ck.due_ms <= now_ms:
                out.append((ck, sorted(self._unacked[key])))
        return out

    def retry_at(self, key: CkKey, at_ms: int) -> None:
        """A due checkpoint that could not be revived now: try again at ``at_ms``."""
        if key in self._by_key:
            self._seq += 1
            heapq.heappush(self._heap, (at_ms, self._seq, key))

    def next_due_ms(self) -> int | None:
        while self._heap and self._heap[0][2] not in self._by_key:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def lowest_stored(self, revive_qid: int) -> int | None:
        stored = self._stored_at.get(revive_qid)
        return min(stored) if stored else None

    def counts(self, now_ms: int) -> dict[tuple[str, str], tuple[int, int]]:
        """(group, read topic) -> (in flight, of which still invisible)."""
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for key, ck in self._by_key.items():
            n = len(self._unacked[key])
            inflight, invisible = out.get((key.group, key.topic), (0, 0))
            out[(key.group, key.topic)] = (inflight + n, invisible + (n if ck.due_ms > now_ms else 0))
        return out
