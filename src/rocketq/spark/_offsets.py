"""Offsets, ranges and the per-trigger limit: pure functions, no Spark, no network.

Offsets are "next to read" (exclusive ends), per queue ``(topic, brokerName, queueId)``. In a checkpoint they
are ``{"<topic>": {"<brokerName>": {"<queueId>": <offset>}}}``, always built in one sorted order (topic, broker
name, numeric queue id): Spark compares offsets as JSON text, and equal offsets in a different key order
would look like new data and produce empty micro-batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

QueueKey = tuple[str, str, int]
Offsets = dict[QueueKey, int]


def to_json(offsets: Mapping[QueueKey, int]) -> dict[str, dict[str, dict[str, int]]]:
    out: dict[str, dict[str, dict[str, int]]] = {}
    for topic, broker, qid in sorted(offsets):
        out.setdefault(topic, {}).setdefault(broker, {})[str(qid)] = int(offsets[(topic, broker, qid)])
    return out


def from_json(obj: Mapping[str, Any] | None) -> Offsets:
    out: Offsets = {}
    for topic, brokers in (obj or {}).items():
        for broker, queues in brokers.items():
            for qid, off in queues.items():
                out[(str(topic), str(broker), int(qid))] = int(off)
    return dict(sorted(out.items()))


@dataclass(frozen=True, slots=True)
class QueueRange:
    """Offsets ``[start, end)`` of one queue."""

    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int

    @property
    def key(self) -> QueueKey:
        return (self.topic, self.broker_name, self.queue_id)

    @property
    def size(self) -> int:
        return self.end - self.start


def plan_ranges(
    start: Mapping[QueueKey, int],
    end: Mapping[QueueKey, int],
    max_records: int,
    min_partitions: int | None = None,
) -> list[QueueRange]:
    """One range per queue with data, cut to at most ``max_records`` offsets, then into ``min_partitions``.

    Queues without a start, or with ``end <= start``, produce nothing (an idle queue is not an empty task).
    """
    ranges: list[QueueRange] = []
    for key in sorted(end):
        s = start.get(key)
        e = end[key]
        if s is None or e <= s:
            continue
        topic, broker, qid = key
        pos = s
        while pos < e:
            nxt = min(e, pos + max_records)
            ranges.append(QueueRange(topic, broker, qid, pos, nxt))
            pos = nxt
    if min_partitions and ranges:
        while len(ranges) < min_partitions:
            biggest = max(range(len(ranges)), key=lambda i: ranges[i].size)
            r = ranges[biggest]
            if r.size < 2:
                break
            mid = r.start + r.size // 2
            ranges[biggest : biggest + 1] = [
                QueueRange(r.topic, r.broker_name, r.queue_id, r.start, mid),
                QueueRange(r.topic, r.broker_name, r.queue_id, mid, r.end),
            ]
    return ranges


def limit_offsets(start: Mapping[QueueKey, int], latest: Mapping[QueueKey, int], max_rows: int) -> Offsets:
    """Advance from ``start`` towards ``latest`` by at most ``max_rows`` offsets in total.

    Every queue with a backlog gets one offset first (no queue starves behind a big one, as in RocketMQ's
    connector), then the rest is shared in proportion to the remaining backlogs, rounded down, and what is
    left goes one by one to the largest remainders: the sum is exactly ``min(max_rows, total backlog)``.
    With fewer rows than busy queues, the queues with the largest backlogs go first.
    """
    backlog = {k: max(0, latest[k] - start.get(k, latest[k])) for k in latest}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(sorted(latest.items()))
    busy = sorted((k for k in backlog if backlog[k] > 0), key=lambda k: (-backlog[k], k))
    shares = dict.fromkeys(backlog, 0)
    for k in busy[:max_rows]:
        shares[k] = 1
    left = max_rows - sum(shares.values())
    rest = {k: backlog[k] - shares[k] for k in busy}
    rest_total = sum(rest.values())
    if left > 0 and rest_total > 0:
        remainders: list[tuple[float, QueueKey]] = []
        given = 0
        for k in busy:
            exact = rest[k] * left / rest_total
            shares[k] += int(exact)
            given += int(exact)
            remainders.append((exact - int(exact), k))
        left -= given
        remainders.sort(key=lambda item: (-item[0], item[1]))
        for _, k in remainders:
            if left <= 0:
                break
            if shares[k] < backlog[k]:
                shares[k] += 1
                left -= 1
    out = {k: start.get(k, v) + shares[k] for k, v in latest.items()}
    return dict(sorted(out.items()))


def cap(offsets: Mapping[QueueKey, int], ceiling: Mapping[QueueKey, int]) -> Offsets:
    """``offsets`` with every queue held at or below ``ceiling`` (queues absent from it are kept)."""
    return {k: min(v, ceiling[k]) if k in ceiling else v for k, v in sorted(offsets.items())}


def merge_keys(*maps: Iterable[QueueKey]) -> list[QueueKey]:
    keys: set[QueueKey] = set()
    for m in maps:
        keys.update(m)
    return sorted(keys)
