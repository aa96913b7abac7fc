"""The ``rocketmq`` format: batch and streaming readers (writers live in ``rocketq.spark.sink``).

Where each method runs (PySpark 4.3): ``partitions`` of a batch read and the planning of a stream run in a
planner worker; ``initialOffset``/``latestOffset``/``partitions``/``commit`` of a stream run in one long-lived
driver-side runner process per query (state kept on the reader lives only as long as that run); ``read`` runs
in executor workers on a pickled copy of the planner's reader, so everything it needs is in the partition.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from rocketq.spark import _offsets
from rocketq.spark._offsets import Offsets, QueueKey, QueueRange
from rocketq.spark._options import SinkOptions, SourceOptions
from rocketq.spark._plan import is_empty_plan
from rocketq.spark._read import (
    ReadTask,
    broker_addrs,
    check_starts,
    queues_of,
    read_range,
    resolve,
)
from rocketq.spark._schema import READ_SCHEMA_DDL, check_read_schema
from rocketq.spark._wire import Cluster, run

log = logging.getLogger("rocketq.spark")


@dataclass(frozen=True)
class RangePartition(InputPartition):
    """One Spark partition: a queue range plus the options to read it."""

    task: ReadTask


def _partitions(cluster: Cluster, opts: SourceOptions, start: Offsets, end: Offsets) -> Any:
    async def plan() -> list[RangePartition]:
        ranges = _offsets.plan_ranges(start, end, opts.max_records_per_partition, opts.min_partitions)
        if not ranges:
            return []
        addrs = await broker_addrs(cluster, ranges)
        return [RangePartition(ReadTask(r, addrs[(r.topic, r.broker_name)], opts)) for r in ranges]

    return plan()


class RocketMQDataSource(DataSource):
    """``spark.read/readStream/write/writeStream.format("rocketmq")``; see ``docs/spark.md`` for options."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> str:
        return READ_SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        check_read_schema(schema)
        return RocketMQBatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        check_read_schema(schema)
        return RocketMQStreamReader(SourceOptions.parse(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from rocketq.spark.sink import RocketMQBatchWriter, check_overwrite

        check_overwrite(overwrite)
        return RocketMQBatchWriter(SinkOptions.parse(self.options, streaming=False), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from rocketq.spark.sink import RocketMQStreamWriter, check_overwrite

        check_overwrite(overwrite)
        return RocketMQStreamWriter(SinkOptions.parse(self.options, streaming=True), schema)


class RocketMQBatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.opts

        async def plan() -> list[RangePartition]:
            async with Cluster(opts.name_server, opts.timeout, opts.credentials) as cluster:
                keys = await queues_of(cluster, opts, must_exist=True)
                start = await resolve(cluster, opts, keys, opts.starting, opts.starting_timestamp, is_end=False)
                end = await resolve(cluster, opts, keys, opts.ending, opts.ending_timestamp, is_end=True)
                start = await check_starts(cluster, opts, start)
                parts: list[RangePartition] = await _partitions(cluster, opts, start, end)
                return parts

        return run(plan)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if is_empty_plan(partition):  # every queue's range was empty: 0 rows, as Kafka's source returns
            return iter(())
        assert isinstance(partition, RangePartition)
        return read_range(partition.task)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader. Offsets: ``{topic: {brokerName: {queueId: next offset}}}`` (canonical order)."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._initial: Offsets | None = None
        self._frozen: Offsets | None = None
        self._latest: Offsets | None = None
        self._committed: dict[QueueKey, int] = {}

    # -- offsets -----------------------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        # Called twice on a fresh start: resolve once, or messages arriving in between would be skipped.
        if self._initial is None:
            opts = self.opts

            async def initial() -> Offsets:
                async with Cluster(opts.name_server, opts.timeout, opts.credentials) as cluster:
                    keys = await queues_of(cluster, opts, must_exist=False)
                    return await resolve(cluster, opts, keys, opts.starting, opts.starting_timestamp, is_end=False)

            self._initial = run(initial)
        return _offsets.to_json(self._initial)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._frozen = self._max_offsets()

    def _max_offsets(self) -> Offsets:
        opts = self.opts

        async def latest() -> Offsets:
            async with Cluster(opts.name_server, opts.timeout, opts.credentials) as cluster:
                keys = await queues_of(cluster, opts, must_exist=False)
                mins = await cluster.gather(keys, cluster.min_offset)
                maxs = await cluster.gather(keys, cluster.max_offset)
                return {k: max(mins[k], maxs[k]) for k in keys}

        return run(latest)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = _offsets.from_json(start)
        # Everything before `start` is processed and recorded: show it as the group's progress right away.
        self._commit_group(begin)
        latest = self._max_offsets()
        self._latest = latest
        end: Offsets = dict(begin)
        for k, v in latest.items():
            if k in begin:
                end[k] = max(begin[k], v)
            else:
                # A queue seen for the first time: one batch records where it starts (its offsets now held
                # in the checkpoint, so a replay reads the same range); later batches read it.
                end[k] = self._new_queue_start(k)
        known = {k: v for k, v in end.items() if k in begin}
        if self._frozen is not None:
            known = _offsets.cap(known, {k: self._frozen.get(k, begin[k]) for k in known})
        if isinstance(limit, ReadMaxRows):
            known = _offsets.limit_offsets(begin, known, limit.max_rows)
        end.update(known)
        return _offsets.to_json(end)

    def _new_queue_start(self, key: QueueKey) -> int:
        opts = self.opts

        async def first() -> int:
            async with Cluster(opts.name_server, opts.timeout, opts.credentials) as cluster:
                return await cluster.min_offset(key)

        return run(first)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return _offsets.to_json(self._latest) if self._latest is not None else None

    # -- planning and reading ----------------------------------------------------------------------------

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        opts = self.opts
        begin = _offsets.from_json(start)
        finish = _offsets.from_json(end)
        if begin == finish:
            return []

        async def plan() -> list[RangePartition]:
            async with Cluster(opts.name_server, opts.timeout, opts.credentials) as cluster:
                parts: list[RangePartition] = await _partitions(cluster, opts, begin, finish)
                return parts

        return run(plan)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, RangePartition)
        return read_range(partition.task)

    def commit(self, end: dict[str, Any]) -> None:
        self._commit_group(_offsets.from_json(end))

    def stop(self) -> None:  # never observed to be called by PySpark 4.3; nothing to release anyway
        pass

    # -- lag visibility ----------------------------------------------------------------------------------

    def _commit_group(self, offsets: Offsets) -> None:
        group = self.opts.consumer_group
        if group is None:
            return
        changed = {k: v for k, v in offsets.items() if self._committed.get(k) != v}
        if not changed:
            return
        opts = self.opts

        async def commit() -> None:
            async with Cluster(opts.name_server, opts.timeout, opts.credentials) as cluster:
                await cluster.gather(list(changed), lambda k: cluster.commit_offset(group, k, changed[k]))

        try:
            run(commit)
        except Exception as exc:  # display only: never fail the query for it
            log.warning("spark.group_commit_failed group=%s error=%s", group, exc)
            return
        self._committed.update(changed)


__all__ = ["QueueRange", "RangePartition", "RocketMQBatchReader", "RocketMQDataSource", "RocketMQStreamReader"]
