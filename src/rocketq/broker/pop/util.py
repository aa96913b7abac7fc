"""Small pure helpers of the POP service: names, tag checks, one-record reads, the in-flight view."""

from __future__ import annotations

import time

from rocketq.broker.context import BrokerContext
from rocketq.broker.pop.checkpoints import PendingCheckpoints
from rocketq.broker.pop.fifo import OrderState
from rocketq.broker.pop.types import InflightCounts, PopRequest, retry_topic
from rocketq.protocol.message import MessageRecord, decode_record
from rocketq.store import GetMessageStatus, MessageStore

RETRY_PREFIX = "%RETRY%"


def read_one(store: MessageStore, topic: str, queue_id: int, offset: int) -> MessageRecord | None:
    result = store.get_message(topic, queue_id, offset, 1, None, counted=False)
    try:
        if result.status != GetMessageStatus.FOUND or not result.buffers:
            return None
        return decode_record(result.buffers[0].view, with_body=True)
    finally:
        result.release()


def origin_topic(group: str, read_topic: str) -> str:
    prefix = f"{RETRY_PREFIX}{group}_"
    return read_topic[len(prefix) :] if read_topic.startswith(prefix) else read_topic


def sub_tags(req: PopRequest) -> frozenset[str] | None:
    """The tags a TAG expression names (None: every message)."""
    if (req.expression_type or "TAG") != "TAG":
        return None
    expr = (req.expression or "*").strip()
    if expr in ("", "*"):
        return None
    return frozenset(t.strip() for t in expr.split("||") if t.strip())


def tag_matches(tags: frozenset[str] | None, rec: MessageRecord) -> bool:
    # the consume queue filters by tag hash; two tags with one hash are told apart here, as Java's proxy does
    return tags is None or (rec.tags or "") in tags


def inflight_counts(
    ctx: BrokerContext, pending: PendingCheckpoints, order: OrderState, seen: set[tuple[str, str]],
    group: str | None,
) -> list[InflightCounts]:  # fmt: skip
    """Per group and subscribed topic: popped and not acked, of which still invisible, and ready."""
    now = int(time.time() * 1000)
    merged: dict[tuple[str, str], tuple[int, int]] = dict.fromkeys(seen, (0, 0))
    for source in (pending.counts(now), order.counts(now)):
        for (g, read_topic), (a, b) in source.items():
            origin = origin_topic(g, read_topic)
            x, y = merged.get((g, origin), (0, 0))
            merged[(g, origin)] = (x + a, y + b)
    return [InflightCounts(t, g, a, b, _ready_of(ctx, g, t)) for (g, t), (a, b) in sorted(merged.items())
            if group is None or g == group]  # fmt: skip


def _ready_of(ctx: BrokerContext, group: str, topic: str) -> int:
    total = 0
    for name in (topic, retry_topic(group, topic)):
        tc = ctx.topics.get(name)
        if tc is None:
            continue
        for q in range(tc.read_queue_nums):
            committed = ctx.offsets.query(group, name, q)
            if committed >= 0:
                total += max(0, ctx.store.get_max_offset_in_queue(name, q) - committed)
    return total
