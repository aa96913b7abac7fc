"""The ``rocketmq`` sink: ``df.write`` / ``df.writeStream`` into topics, at least once or exactly once.

Columns (only these; anything else is refused when the query starts so a typo cannot drop data silently):

==============  ======================================  ==============================================
column          type                                    meaning
==============  ======================================  ==============================================
body            BINARY or STRING (required)             message body (a STRING is UTF-8 encoded)
topic           STRING                                  destination; the ``topic`` option wins
tags            STRING                                  TAGS
keys            STRING (space-separated) or ARRAY<STRING>  KEYS
properties      MAP<STRING, STRING>                     user properties (system names are ignored)
shardingKey     STRING                                  rows with the same key go to the same queue,
                                                        in row order (Java ``SelectMessageQueueByHash``)
deliveryTime    TIMESTAMP or BIGINT (epoch ms)          deliver at this time (TIMER_DELIVER_MS)
delayLevel      INT                                     RocketMQ delay level 1-18
==============  ======================================  ==============================================

At least once (default): each task sends its rows with the client SDK's producer, batched per queue.
Exactly once (``deliveryGuarantee=exactly-once``): each task stages its rows on the brokers owning their
queues (SINK_STAGE_MESSAGES) and returns the staged ranges; the driver's commit asks each broker to apply
them as batch ``batchId`` of sink ``sinkId`` (SINK_COMMIT_BATCH). A broker applies a batch only if its number
is above the sink's last committed one, so a micro-batch Spark replays after a failure — whether the failure
came before or after the broker commit — is stored once. See ``rocketq.broker.processors.sink_commit``.

Staged ranges are kept per broker NAME, not address: when a group's master stops answering, a stage or a
commit asks the name server again and repeats on the group's new master (``failoverWaitMs``). Both are safe
to repeat: a stage is answered once its bytes are replicated (SYNC_MASTER), so the successor holds them at
the same commit-log offsets, and the successor knows the watermark from the replicated commit markers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from rocketq.client.config import ClientConfig
from rocketq.client.lowlevel import UniqIdGenerator, check_message
from rocketq.client.message import RESERVED_PROPERTIES, Message
from rocketq.client.producer import Producer
from rocketq.client.selectors import java_hash_code
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.message import PROP_REAL_QID, PROP_REAL_TOPIC, PROP_UNIQ_KEY, BatchItem, encode_batch
from rocketq.protocol.sink import StagedRange, check_sink_id
from rocketq.spark._offsets import QueueKey
from rocketq.spark._options import SinkOptions
from rocketq.spark._wire import Cluster, run

log = logging.getLogger("rocketq.spark")

_STRING_TYPES = (StringType,)
_ALLOWED: dict[str, tuple[type, ...]] = {
    "body": (BinaryType, StringType),
    "topic": _STRING_TYPES,
    "tags": _STRING_TYPES,
    "keys": (StringType, ArrayType),
    "properties": (MapType,),
    "shardingKey": _STRING_TYPES,
    "deliveryTime": (TimestampType, TimestampNTZType, LongType),
    "delayLevel": (IntegerType, LongType),
}
#: Rows buffered per task before they are sent (or staged) in one round.
_ROUND_ROWS = 4096
#: Bytes of message bodies per staging request (one message may exceed it alone).
_STAGE_BYTES = 1 << 20
_MAX_MESSAGE_SIZE = 4 * 1024 * 1024


class SinkRowError(ValueError):
    """A row that cannot be written; the message names the row (partition and index within it)."""


def check_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise ValueError("the rocketmq sink only appends: a topic cannot be overwritten; use mode('append')")


def check_sink_schema(schema: StructType, opts: SinkOptions) -> list[str]:
    """Validate the input columns; returns their canonical names in input order."""
    canonical = {name.lower(): name for name in _ALLOWED}
    names: list[str] = []
    for f in schema.fields:
        name = canonical.get(f.name.lower())
        if name is None:
            raise ValueError(
                f"the rocketmq sink does not know column {f.name!r}; it takes {', '.join(_ALLOWED)} "
                "(select or rename the columns to write)"
            )
        if not isinstance(f.dataType, _ALLOWED[name]):
            raise ValueError(f"column {f.name!r} has type {f.dataType.simpleString()}, the sink expects "
                             f"{' or '.join(t.__name__.replace('Type', '').lower() for t in _ALLOWED[name])}")
        if name == "keys" and isinstance(f.dataType, ArrayType) and not isinstance(f.dataType.elementType,
                                                                                     StringType):
            raise ValueError("column 'keys' must be a string or an array of strings")
        if isinstance(f.dataType, MapType) and not (isinstance(f.dataType.keyType, StringType)
                                                    and isinstance(f.dataType.valueType, StringType)):
            raise ValueError("column 'properties' must be a map<string, string>")
        names.append(name)
    if "body" not in names:
        raise ValueError("the rocketmq sink needs a 'body' column (binary or string)")
    if opts.topic is None and "topic" not in names:
        raise ValueError("the rocketmq sink needs the 'topic' option or a 'topic' column")
    return names


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What a task reports: rows written and, for exactly once, the staged ranges per broker name (and, per
    broker name, a topic whose route names it)."""

    partition_id: int
    rows: int
    sink_id: str | None = None
    batch_id: int | None = None
    staged: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)
    route_topics: dict[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------- row → message


@dataclass(slots=True)
class _Row:
    index: int
    msg: Message
    sharding_key: str | None


def _row_error(partition: int, index: int, keys: Any, reason: str) -> SinkRowError:
    where = f"row {index} of partition {partition}"
    if isinstance(keys, Message):
        keys = keys.keys
    if keys:
        where += f" (keys {keys if isinstance(keys, str) else ' '.join(keys)})"
    return SinkRowError(f"{where}: {reason}")


def _messages(
    batches: Iterator[Any], columns: list[str], opts: SinkOptions, partition: int
) -> Iterator[_Row]:
    """Turn Arrow batches into messages, checking each row; raises ``SinkRowError`` naming the row."""
    index = 0
    for batch in batches:
        cols = {name: batch.column(i).to_pylist() for i, name in enumerate(columns)}
        n = batch.num_rows
        empty = [None] * n
        bodies = cols["body"]
        topics = cols.get("topic", empty)
        tags = cols.get("tags", empty)
        keys = cols.get("keys", empty)
        props = cols.get("properties", empty)
        shards = cols.get("shardingKey", empty)
        times = cols.get("deliveryTime", empty)
        delays = cols.get("delayLevel", empty)
        for i in range(n):
            try:
                body = bodies[i]
                if body is None:
                    raise ValueError("body is null")
                topic = opts.topic or topics[i]
                if not topic:
                    raise ValueError("topic is null (set the topic option or fill the topic column)")
                msg = Message(topic, body, tags=tags[i] or None, keys=keys[i] or None)
                for name, value in props[i] or ():
                    if name in RESERVED_PROPERTIES:
                        continue  # system properties (UNIQ_KEY, TAGS, ...) of a message read back are re-derived
                    msg.put_user_property(name, value)
                when = times[i]
                if when is not None:
                    msg.deliver_time_ms = when if isinstance(when, int) else int(when.timestamp() * 1000)
                level = delays[i]
                if level:
                    if not 1 <= level <= 18:
                        raise ValueError(f"delayLevel {level} is not in 1..18")
                    msg.delay_level = level
                check_message(msg, _MAX_MESSAGE_SIZE)
            except (ValueError, TypeError) as exc:
                raise _row_error(partition, index, keys[i], str(exc)) from exc
            yield _Row(index, msg, shards[i])
            index += 1


def _choose(queues: list[tuple[QueueKey, Any]], row: _Row, counter: list[int]) -> tuple[QueueKey, Any]:
    """Queue for a row: by sharding-key hash (same key → same queue), else round robin."""
    if row.sharding_key is not None:
        return queues[abs(java_hash_code(row.sharding_key)) % len(queues)]
    counter[0] += 1
    return queues[counter[0] % len(queues)]


def _task_context() -> tuple[int, str | None, int | None]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, None, None
    raw_batch = ctx.getLocalProperty("streaming.sql.batchId")
    return ctx.partitionId(), ctx.getLocalProperty("sql.streaming.queryId"), int(raw_batch) if raw_batch else None


# -------------------------------------------------------------------------------------------- writing


def write_partition(
    batches: Iterator[Any], columns: list[str], opts: SinkOptions, *, streaming: bool
) -> SinkCommitMessage:
    partition, query_id, stream_batch = _task_context()
    if not opts.exactly_once:
        rows = asyncio.run(_send_all(_messages(batches, columns, opts, partition), opts, partition))
        return SinkCommitMessage(partition, rows)
    sink_id = opts.sink_id or query_id
    batch_id = stream_batch if streaming else opts.batch_id
    if sink_id is None or batch_id is None:
        raise RuntimeError("exactly-once: no sink id / batch id (not running in a streaming query?)")
    check_sink_id(sink_id)
    staged, topics, rows = asyncio.run(_stage_all(_messages(batches, columns, opts, partition), opts, partition,
                                                  sink_id, batch_id))
    return SinkCommitMessage(partition, rows, sink_id, batch_id, staged, topics)


async def _send_all(rows: Iterator[_Row], opts: SinkOptions, partition: int) -> int:
    """At least once: rows grouped per queue (order kept within a queue), queues sent concurrently."""
    creds = opts.credentials
    config = ClientConfig(namesrv_addr=opts.name_server, access_key=creds.access_key if creds else None,
                          secret_key=creds.secret_key if creds else None,
                          security_token=creds.security_token if creds else None)  # fmt: skip
    async with Producer(opts.producer_group, config=config, send_msg_timeout=opts.timeout) as p:
        queues_of: dict[str, list[tuple[QueueKey, MessageQueue]]] = {}
        counter = [partition * 7919]
        total = 0
        pending: dict[QueueKey, tuple[MessageQueue, list[_Row]]] = {}
        count = 0
        for row in rows:
            topic = row.msg.topic
            queues = queues_of.get(topic)
            if queues is None:
                mqs = await p.fetch_publish_message_queues(topic)
                queues = queues_of[topic] = [((m.topic, m.broker_name, m.queue_id), m) for m in mqs]
            key, mq = _choose(queues, row, counter)
            pending.setdefault(key, (mq, []))[1].append(row)
            count += 1
            if count >= _ROUND_ROWS:
                total += await _send_round(p, pending, partition, opts.timeout)
                pending = {}
                count = 0
        total += await _send_round(p, pending, partition, opts.timeout)
        return total


async def _send_round(
    p: Producer, pending: dict[QueueKey, tuple[MessageQueue, list[_Row]]], partition: int, timeout: float
) -> int:
    async def one_queue(mq: MessageQueue, rows: list[_Row]) -> int:
        run_: list[_Row] = []
        for row in rows:
            if row.msg.delay_level or row.msg.deliver_time_ms is not None:
                await _flush_run(p, mq, run_, partition, timeout)
                run_ = []
                try:
                    await p.send(row.msg, queue=mq, timeout=timeout)
                except Exception as exc:
                    raise _row_error(partition, row.index, row.msg, f"send to {mq} failed: {exc}") from exc
            else:
                run_.append(row)
        await _flush_run(p, mq, run_, partition, timeout)
        return len(rows)

    counts = await asyncio.gather(*(one_queue(mq, rows) for mq, rows in pending.values()))
    return sum(counts)


async def _flush_run(p: Producer, mq: MessageQueue, rows: list[_Row], partition: int, timeout: float) -> None:
    if not rows:
        return
    try:
        await p.send_batch([r.msg for r in rows], queue=mq, timeout=timeout)
    except Exception as exc:
        first, last = rows[0].index, rows[-1].index
        where = f"row {first}" if first == last else f"rows {first}..{last}"
        raise SinkRowError(f"{where} of partition {partition}: send to {mq} failed: {exc}") from exc


async def _stage_all(
    rows: Iterator[_Row], opts: SinkOptions, partition: int, sink_id: str, batch_id: int
) -> tuple[dict[str, list[tuple[int, int, int]]], dict[str, str], int]:
    """Exactly once: stage rows on the groups owning their queues; returns the staged ranges per broker name,
    a topic per broker name (to find its master again) and the row count."""
    ids = UniqIdGenerator("127.0.0.1")
    staged: dict[str, list[tuple[int, int, int]]] = {}
    topics: dict[str, str] = {}
    total = 0
    async with Cluster(opts.name_server, opts.timeout, opts.credentials) as cluster:
        queues_of: dict[str, list[tuple[QueueKey, str]]] = {}
        counter = [partition * 7919]
        pending: dict[str, list[tuple[_Row, BatchItem]]] = {}
        count = 0

        async def stage_round() -> None:
            async def one_broker(broker: str, items: list[tuple[_Row, BatchItem]]) -> None:
                chunk: list[tuple[_Row, BatchItem]] = []
                size = 0
                for row, item in items:
                    if chunk and size + len(item.body) > _STAGE_BYTES:
                        await stage_chunk(broker, chunk)
                        chunk, size = [], 0
                    chunk.append((row, item))
                    size += len(item.body)
                if chunk:
                    await stage_chunk(broker, chunk)

            await asyncio.gather(*(one_broker(b, items) for b, items in pending.items()))

        async def stage_chunk(broker: str, chunk: list[tuple[_Row, BatchItem]]) -> None:
            body = encode_batch([i for _, i in chunk])
            try:
                r: StagedRange = await cluster.on_master(
                    topics[broker], broker, lambda addr: cluster.stage(addr, sink_id, batch_id, body),
                    opts.failover_wait,
                )
            except Exception as exc:
                first, last = chunk[0][0].index, chunk[-1][0].index
                where = f"row {first}" if first == last else f"rows {first}..{last}"
                raise SinkRowError(f"{where} of partition {partition}: staging on {broker} failed: {exc}") from exc
            staged.setdefault(broker, []).append((r.start, r.end, r.count))

        for row in rows:
            topic = row.msg.topic
            queues = queues_of.get(topic)
            if queues is None:
                queues = queues_of[topic] = await cluster.publish_queues(topic)
            (real_topic, broker_name, qid), _addr = _choose(queues, row, counter)
            topics.setdefault(broker_name, real_topic)
            props = dict(row.msg.properties)
            props[PROP_REAL_TOPIC] = real_topic
            props[PROP_REAL_QID] = str(qid)
            props[PROP_UNIQ_KEY] = ids.create()
            pending.setdefault(broker_name, []).append((row, BatchItem(row.msg.flag, row.msg.body, props)))
            count += 1
            total += 1
            if count >= _ROUND_ROWS:
                await stage_round()
                pending = {}
                count = 0
        await stage_round()
    return staged, topics, total


def commit_exactly_once(opts: SinkOptions, messages: list[Any], batch_id: int) -> None:
    """Driver side: apply every task's staged ranges as batch ``batch_id``, broker group by group (on its
    current master: a commit is safe to repeat, the broker refuses a batch it already has)."""
    msgs = sorted((m for m in messages if isinstance(m, SinkCommitMessage)), key=lambda m: m.partition_id)
    ranges: dict[str, list[StagedRange]] = {}
    topics: dict[str, str] = {}
    sink_ids = {m.sink_id for m in msgs if m.sink_id}
    for m in msgs:
        for broker, rs in m.staged.items():
            ranges.setdefault(broker, []).extend(StagedRange(*r) for r in rs)
        topics.update(m.route_topics)
    if not ranges:
        return
    if len(sink_ids) != 1:
        raise RuntimeError(f"exactly-once commit: tasks disagree on the sink id: {sorted(sink_ids)}")
    sink_id = sink_ids.pop()

    async def commit_all() -> list[bool]:
        async with Cluster(opts.name_server, opts.timeout, opts.credentials) as cluster:
            async def one(broker: str, rs: list[StagedRange]) -> bool:
                return await cluster.on_master(topics[broker], broker,
                                               lambda addr: cluster.commit_batch(addr, sink_id, batch_id, rs),
                                               opts.failover_wait)  # fmt: skip

            return list(await asyncio.gather(*(one(b, rs) for b, rs in sorted(ranges.items()))))

    applied = run(commit_all)
    log.info("spark.sink_commit sink=%s batch=%s brokers=%s applied=%s", sink_id, batch_id, len(ranges), applied)


# -------------------------------------------------------------------------------------------- writers


class RocketMQBatchWriter(DataSourceArrowWriter):
    def __init__(self, opts: SinkOptions, schema: StructType) -> None:
        self.opts = opts
        self.columns = check_sink_schema(schema, opts)

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        return write_partition(iterator, self.columns, self.opts, streaming=False)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.opts.exactly_once:
            assert self.opts.batch_id is not None
            commit_exactly_once(self.opts, list(messages), self.opts.batch_id)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("spark.sink_abort: staged messages (exactly-once) are never applied; sent ones stay")


class RocketMQStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, opts: SinkOptions, schema: StructType) -> None:
        self.opts = opts
        self.columns = check_sink_schema(schema, opts)

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        return write_partition(iterator, self.columns, self.opts, streaming=True)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.opts.exactly_once:
            commit_exactly_once(self.opts, list(messages), batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("spark.sink_abort batch=%s: staged messages are never applied; the batch is replayed", batchId)
