"""FIFO under POP: per group and queue, what an orderly pop handed out. Pure state, no I/O.

RocketMQ 5's rule (ConsumerOrderInfoManager): while a popped message of a queue is neither acked nor past its
invisible time, nobody pops that queue again (a pop with the same attempt id may: it is the same request
retried). Acks commit in order: the group's offset moves to the first offset still un-acked, past them all once
every popped offset is acked. A message that comes back is read again from the same position; its delivery
count is kept here (it becomes the delivery attempt). The state lives in memory: after a restart an orderly
group starts again from its committed offset (un-acked messages come back; so may acked ones popped after the
first un-acked one — at-least-once, as in Java, whose order info is persisted only periodically).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class _Popped:
    count: int  # deliveries so far, this one included
    visible_at: int
    acked: bool = False


@dataclass(slots=True)
class OrderQueue:
    popped: dict[int, _Popped] = field(default_factory=dict)
    attempt_id: str | None = None

    def blocked(self, now_ms: int, attempt_id: str | None) -> bool:
        if attempt_id is not None and attempt_id == self.attempt_id:
            return False
        return any(not p.acked and p.visible_at > now_ms for p in self.popped.values())

    def count_of(self, offset: int) -> int:
        p = self.popped.get(offset)
        return p.count if p is not None else 0

    def is_acked(self, offset: int) -> bool:
        p = self.popped.get(offset)
        return p is not None and p.acked

    def handed_out(self, offset: int, now_ms: int, invisible_ms: int, attempt_id: str | None) -> int:
        """Record a delivery; returns the delivery count (1 for the first)."""
        p = self.popped.get(offset)
        if p is None:
            p = self.popped[offset] = _Popped(0, 0)
        p.count += 1
        p.visible_at = now_ms + invisible_ms
        self.attempt_id = attempt_id
        return p.count

    def ack(self, offset: int) -> int | None:
        """Mark ``offset`` acked; the offset the group may commit now (None: not one of ours)."""
        p = self.popped.get(offset)
        if p is None:
            return None
        p.acked = True
        unacked = [o for o, q in self.popped.items() if not q.acked]
        if unacked:
            return min(unacked)
        nxt = max(self.popped) + 1
        self.popped.clear()
        return nxt

    def change(self, offset: int, now_ms: int, invisible_ms: int) -> bool:
        p = self.popped.get(offset)
        if p is None or p.acked:
            return False
        p.visible_at = now_ms + invisible_ms
        return True

    def counts(self, now_ms: int) -> tuple[int, int]:
        inflight = [p for p in self.popped.values() if not p.acked]
        return len(inflight), sum(1 for p in inflight if p.visible_at > now_ms)


class OrderState:
    def __init__(self) -> None:
        self._queues: dict[tuple[str, str, int], OrderQueue] = {}

    def get(self, group: str, topic: str, queue_id: int) -> OrderQueue:
        key = (group, topic, queue_id)
        q = self._queues.get(key)
        if q is None:
            q = self._queues[key] = OrderQueue()
        return q

    def find(self, group: str, topic: str, queue_id: int) -> OrderQueue | None:
        return self._queues.get((group, topic, queue_id))

    def counts(self, now_ms: int) -> dict[tuple[str, str], tuple[int, int]]:
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for (group, topic, _), q in self._queues.items():
            a, b = q.counts(now_ms)
            if a:
                x, y = out.get((group, topic), (0, 0))
                out[(group, topic)] = (x + a, y + b)
        return out
