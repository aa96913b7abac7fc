"""Reading queue ranges from brokers (executor side) and resolving positions to offsets (driver side).

Both are plain functions over ``SourceOptions`` and ``QueueRange``s so that the batch and the streaming reader
share them, and so that ``read`` depends only on what its partition carries (Spark runs it in a worker on a
pickled copy of the planner's reader).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rocketq.client.lowlevel import RawPullResult
from rocketq.client.message import PullStatus
from rocketq.errors import RemotingError
from rocketq.protocol.bodies import parse_tag_expression
from rocketq.protocol.message import iter_records
from rocketq.spark._offsets import Offsets, QueueKey, QueueRange
from rocketq.spark._options import Position, SourceOptions
from rocketq.spark._schema import DEFAULT_BATCH_ROWS, RecordBatchBuilder
from rocketq.spark._wire import READER_GROUP, Cluster

log = logging.getLogger("rocketq.spark")
#: Pause between attempts when a read task looks for another replica of its broker group.
_FAILOVER_PAUSE = 0.2

EARLIEST = -2
LATEST = -1


class DataLossError(RuntimeError):
    """Offsets that should be read were removed from the broker (retention, a deleted topic)."""


def data_lost(opts: SourceOptions, key: QueueKey, lo: int, hi: int, why: str) -> None:
    topic, broker, qid = key
    what = (f"messages at offsets {lo}..{hi - 1} of queue {topic}/{broker}/{qid} are gone ({why}) and cannot be "
            "read")
    if opts.fail_on_data_loss:
        raise DataLossError(f"{what}. Set failOnDataLoss=false to skip them.")
    log.warning("spark.data_loss %s; skipped (failOnDataLoss=false)", what)


# ---------------------------------------------------------------------------------------- driver side


async def queues_of(cluster: Cluster, opts: SourceOptions, *, must_exist: bool) -> list[QueueKey]:
    keys: list[QueueKey] = []
    for topic in opts.topics:
        found = await cluster.read_queues(topic)
        if not found and must_exist:
            raise ValueError(f"topic {topic!r} does not exist (the name server has no route for it)")
        keys.extend(found)
    return sorted(keys)


async def resolve(
    cluster: Cluster,
    opts: SourceOptions,
    keys: list[QueueKey],
    position: Position,
    timestamp: int | None,
    *,
    is_end: bool,
) -> Offsets:
    """Offsets of ``keys`` for a start or end position (a timestamp wins over ``position``)."""
    mins = await cluster.gather(keys, cluster.min_offset)
    maxs = await cluster.gather(keys, cluster.max_offset)
    if timestamp is not None:
        ts = timestamp
        return await cluster.gather(keys, lambda k: first_stored_at_or_after(cluster, k, ts, mins[k], maxs[k]))
    if position == "earliest":
        return dict(mins)
    if position == "latest":
        return dict(maxs)
    if position == "group":
        assert opts.consumer_group is not None
        group = opts.consumer_group
        committed = await cluster.gather(keys, lambda k: cluster.committed(group, k))
        # A queue the group never committed starts at the beginning (or, as an end, at the latest offset).
        return {k: committed[k] if committed[k] >= 0 else (maxs[k] if is_end else mins[k]) for k in keys}
    assert isinstance(position, dict)
    out: Offsets = {}
    for k in keys:
        topic, broker, qid = k
        value = position.get(topic, {}).get(broker, {}).get(qid)
        if value is None:
            value = LATEST if is_end else EARLIEST
        out[k] = mins[k] if value == EARLIEST else maxs[k] if value == LATEST else value
    return out


async def first_stored_at_or_after(cluster: Cluster, key: QueueKey, timestamp: int, lo: int, hi: int) -> int:
    """Offset of the queue's first message stored at or after ``timestamp`` (``hi`` when there is none).

    The broker's SEARCH_OFFSET_BY_TIMESTAMP answers the message stored *closest* to the time (RocketMQ 4.9);
    this walks from there to the exact boundary, 32 messages per pull.
    """
    if lo >= hi:
        return hi
    addr = await cluster.broker_addr(key[0], key[1])

    async def times(start: int, n: int) -> list[tuple[int, int]]:
        raw = await cluster.pull_at(addr, key, start, n, READER_GROUP, "*", "TAG")
        return [(r.queue_offset, r.store_timestamp) for r in iter_records(raw.body)]

    pos = max(lo, min(await cluster.search_offset(key, timestamp), hi))
    while pos < hi:  # forward over older messages
        got = await times(pos, 32)
        if not got:
            return hi
        newer = [o for o, t in got if t >= timestamp]
        if newer:
            pos = newer[0]
            break
        pos = got[-1][0] + 1
    else:
        return hi
    while pos > lo:  # backward over messages just as new
        start = max(lo, pos - 32)
        got = [(o, t) for o, t in await times(start, pos - start) if o < pos]
        older = [o for o, t in got if t < timestamp]
        if older:
            return older[-1] + 1
        if not got:
            return pos
        pos = got[0][0]
    return pos


async def check_starts(cluster: Cluster, opts: SourceOptions, starts: Offsets) -> Offsets:
    """Starts below a queue's minimum offset (removed by retention): fail, or move up to the minimum."""
    mins = await cluster.gather(list(starts), cluster.min_offset)
    out = dict(starts)
    for k, s in starts.items():
        if s < mins[k]:
            data_lost(opts, k, s, mins[k], "below the queue's minimum offset")
            out[k] = mins[k]
    return out


async def broker_addrs(cluster: Cluster, ranges: list[QueueRange]) -> dict[tuple[str, str], str]:
    pairs = sorted({(r.topic, r.broker_name) for r in ranges})
    addrs = await asyncio.gather(*(cluster.broker_addr(t, b) for t, b in pairs))
    return dict(zip(pairs, addrs, strict=True))


# -------------------------------------------------------------------------------------- executor side


@dataclass(frozen=True, slots=True)
class ReadTask:
    """Everything one Spark task needs to read one queue range."""

    range: QueueRange
    broker_addr: str
    opts: SourceOptions


def read_range(task: ReadTask, batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[Any]:
    """Yield ``pyarrow.RecordBatch``es with the messages of ``task.range`` (offsets ``[start, end)``)."""
    loop = asyncio.new_event_loop()
    cluster = Cluster(task.opts.name_server, task.opts.timeout, task.opts.credentials)
    try:
        yield from _RangeReader(loop, cluster, task).batches(batch_rows)
    finally:
        loop.run_until_complete(cluster.rc.close())
        loop.close()


class _RangeReader:
    """Reads one queue range with up to ``PULLS_IN_FLIGHT`` pulls outstanding.

    Strategy: pulls are planned ahead at consecutive offsets (``step`` apart: what the last pull covered, at
    most ``pullBatchSize``) and their answers consumed in order. ``expected`` is the next offset not yet
    accounted for: a record below it is a duplicate from an overlapping pull (a filtered pull may scan far
    ahead) and is dropped; an answer that starts above it means the previous pull covered less than planned
    (the broker's per-pull byte cap), so the pulls in flight are dropped and planning restarts at
    ``expected``. Every answer either moves ``expected`` forward or is stale, and a pull at ``expected``
    that makes no progress raises, so the loop ends.
    """

    PULLS_IN_FLIGHT = 4

    def __init__(self, loop: asyncio.AbstractEventLoop, cluster: Cluster, task: ReadTask) -> None:
        self.loop = loop
        self.cluster = cluster
        self.task = task
        opts = task.opts
        self.key = task.range.key
        self.end = task.range.end
        self.expected = task.range.start
        self.group = opts.consumer_group or READER_GROUP
        self.filtered = not (opts.expression_type == "TAG" and opts.sub_expression.strip() == "*")
        self.wanted_tags: set[str] | None = None
        if opts.expression_type == "TAG" and self.filtered:
            self.wanted_tags = set(parse_tag_expression(opts.sub_expression)[0])
        self.builder = RecordBatchBuilder(task.range.broker_name)
        self.inflight: deque[tuple[int, asyncio.Task[RawPullResult]]] = deque()
        self.next_plan = self.expected
        self.step = opts.pull_batch_size
        #: the broker pulled from; replaced by another replica of the group when it stops answering
        self.addr = task.broker_addr
        self._failing_since: float | None = None

    def _plan(self) -> None:
        opts = self.task.opts
        while len(self.inflight) < self.PULLS_IN_FLIGHT and self.next_plan < self.end:
            n = min(opts.pull_batch_size, self.end - self.next_plan)
            coro = self.cluster.pull_at(self.addr, self.key, self.next_plan, n, self.group,
                                        opts.sub_expression, opts.expression_type)
            self.inflight.append((self.next_plan, self.loop.create_task(coro)))
            self.next_plan += min(n, self.step)

    def _drop_inflight(self) -> None:
        tasks = [t for _, t in self.inflight]
        self.inflight.clear()
        for t in tasks:
            t.cancel()
        if tasks:
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))

    def batches(self, batch_rows: int) -> Iterator[Any]:
        try:
            while self.expected < self.end:
                self._plan()
                if not self.inflight:
                    self.next_plan = self.expected
                    continue
                requested, pull = self.inflight.popleft()
                try:
                    raw = self.loop.run_until_complete(pull)
                except (RemotingError, OSError) as exc:
                    self._drop_inflight()
                    self._another_replica(exc)
                    self.next_plan = self.expected
                    continue
                self._failing_since = None
                if requested > self.expected:  # the previous pull covered less than planned
                    self._drop_inflight()
                    self.next_plan = self.expected
                    continue
                self._consume(requested, raw)
                if self.builder.rows >= batch_rows:
                    yield self.builder.flush()
            if self.builder.rows:
                yield self.builder.flush()
        finally:
            self._drop_inflight()

    def _another_replica(self, exc: Exception) -> None:
        """The broker stopped answering (its master died?): ask the route again and pull from the group's
        master, else any replica (queue offsets are the same on each); raises after ``failoverWait``."""
        now = self.loop.time()
        if self._failing_since is None:
            self._failing_since = now
        elif now - self._failing_since >= self.task.opts.failover_wait:
            raise exc
        self.loop.run_until_complete(asyncio.sleep(_FAILOVER_PAUSE))
        try:
            addr = self.loop.run_until_complete(self.cluster.any_replica_addr(self.key[0], self.key[1]))
        except (RemotingError, OSError) as again:
            log.info("spark.read_failover key=%s error=%s (route: %s)", self.key, exc, again)
            return
        log.info("spark.read_failover key=%s from=%s to=%s error=%s", self.key, self.addr, addr, exc)
        if addr is not None:
            self.addr = addr

    def _consume(self, requested: int, raw: RawPullResult) -> None:
        opts = self.task.opts
        key, end = self.key, self.end
        header = raw.header
        status = raw.status
        if header.min_offset > self.expected:
            # Retention removed the head of the queue while this task was running (or before).
            lost_to = min(end, header.min_offset)
            data_lost(opts, key, self.expected, lost_to, "removed by retention")
            self.expected = lost_to
            return
        if status is PullStatus.FOUND:
            expected = self.expected
            builder = self.builder
            wanted = self.wanted_tags
            for rec in iter_records(raw.body):
                q = rec.queue_offset
                if q < expected:
                    continue
                if q >= end:
                    break
                if q > expected and not self.filtered:
                    data_lost(opts, key, expected, q, "missing from the commit log")
                expected = q + 1
                if wanted is not None and rec.properties.get("TAGS") not in wanted:
                    continue  # the broker filters by tag hash code; a hash collision is dropped here
                builder.add(rec)
            covered = header.next_begin_offset - requested
            if covered > 0:
                self.step = max(1, min(opts.pull_batch_size, covered))
            self.expected = max(expected, min(end, header.next_begin_offset))
        elif status is PullStatus.NO_MATCHED_MSG:
            nxt = min(end, header.next_begin_offset)
            if nxt > self.expected:
                if not self.filtered:
                    data_lost(opts, key, self.expected, nxt, "missing from the commit log")
                self.expected = nxt
            elif requested == self.expected:
                raise RuntimeError(f"broker made no progress pulling {key} at offset {requested}")
        elif requested < self.expected:
            return  # a stale answer to a pull that an earlier answer already covered
        elif status is PullStatus.OFFSET_ILLEGAL and header.next_begin_offset > self.expected:
            nxt = min(end, header.next_begin_offset)
            data_lost(opts, key, self.expected, nxt, "removed by retention")
            self.expected = nxt
        else:  # NO_NEW_MSG or OFFSET_ILLEGAL at the end: the queue ends before `end` (truncated or recreated)
            data_lost(opts, key, self.expected, end, f"queue now ends at {header.max_offset}")
            self.expected = end
