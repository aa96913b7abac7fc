"""The ``rocketmq-store`` format: a batch source over a broker's commit-log files, no broker running.

Point ``path`` at a copy of a broker's store directory (the one holding ``commitlog/``) or at its
``commitlog`` directory. Every commit-log file (named by its 20-digit start offset) is one Spark partition,
or several of about ``maxBytesPerPartition`` bytes each: a partition owns the records that *start* in its
byte range, and finds its first one by hopping over the sizes of the records before it.

A file is read up to its end-of-file marker (BLANK_MAGIC) or up to the last valid record: the first
position whose size or magic is not a whole message (the zero-filled tail of the last file, or a torn write)
ends it. Records are decoded with the project's one record codec (``rocketq.protocol.message``) into the
same fixed schema as the ``rocketmq`` source (``brokerName`` is the ``brokerName`` option).
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from rocketq.errors import ProtocolError
from rocketq.protocol.message import BLANK_MAGIC, MESSAGE_MAGIC, decode_record
from rocketq.protocol.topics import (
    AUTO_CREATE_TOPIC,
    OFFSET_MOVED_EVENT,
    RMQ_SYS_PREFIX,
    ROCKETQ_SYSTEM_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    SELF_TEST_TOPIC,
    SYSTEM_TOPIC_PREFIX,
    TRANS_CHECK_MAX_TIME_TOPIC,
)
from rocketq.spark._options import StoreOptions
from rocketq.spark._plan import is_empty_plan
from rocketq.spark._schema import DEFAULT_BATCH_ROWS, READ_SCHEMA_DDL, RecordBatchBuilder, check_read_schema

_SIZE_MAGIC = struct.Struct(">iI")
_PHYS_OFFSET = struct.Struct(">q")
_MIN_RECORD = 91

#: Internal topics skipped unless includeSystemTopics=true.
SYSTEM_TOPICS = frozenset(
    {SCHEDULE_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC, OFFSET_MOVED_EVENT, AUTO_CREATE_TOPIC}
)
SYSTEM_TOPIC_PREFIXES = (RMQ_SYS_PREFIX, ROCKETQ_SYSTEM_TOPIC_PREFIX, SYSTEM_TOPIC_PREFIX)


def is_system_topic(topic: str) -> bool:
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIXES)


def commit_log_files(path: str) -> list[Path]:
    root = Path(path)
    directory = root / "commitlog" if (root / "commitlog").is_dir() else root
    if not directory.is_dir():
        raise FileNotFoundError(f"no commit-log directory at {path!r} (expected a store root or its commitlog/)")
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.name.isdigit() and len(p.name) == 20)
    if not files:
        raise FileNotFoundError(f"{directory} holds no commit-log file (20-digit names)")
    return files


@dataclass(frozen=True)
class FileSlice(InputPartition):
    """Records of one commit-log file whose start lies in ``[lo, hi)`` (byte positions in the file)."""

    path: str
    lo: int
    hi: int
    opts: StoreOptions


class RocketMQStoreDataSource(DataSource):
    """``spark.read.format("rocketmq-store").load("/copy/of/store")``."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq-store"

    def schema(self) -> str:
        return READ_SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        check_read_schema(schema)
        return StoreReader(StoreOptions.parse(self.options))


class StoreReader(DataSourceReader):
    def __init__(self, opts: StoreOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        out: list[InputPartition] = []
        step = self.opts.max_bytes_per_partition
        for f in commit_log_files(self.opts.path):
            size = f.stat().st_size
            if size == 0:
                continue
            if step is None or step >= size:
                out.append(FileSlice(str(f), 0, size, self.opts))
                continue
            for lo in range(0, size, step):
                out.append(FileSlice(str(f), lo, min(size, lo + step), self.opts))
        return out

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if is_empty_plan(partition):  # every commit-log file was empty
            return iter(())
        assert isinstance(partition, FileSlice)
        return read_slice(partition)


def read_slice(part: FileSlice, batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[Any]:
    opts = part.opts
    topics = set(opts.topics) if opts.topics else None
    builder = RecordBatchBuilder(opts.broker_name)
    base = int(os.path.basename(part.path))
    with open(part.path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        view = memoryview(mm)
        try:
            for pos in iter_record_positions(view, base, part.hi):
                if pos < part.lo:
                    continue
                try:
                    rec = decode_record(view, pos)  # copies what it keeps: no view outlives the mapping
                except ProtocolError:
                    break  # a torn record: the end of what was written
                if topics is not None and rec.topic not in topics:
                    continue
                if not opts.include_system_topics and is_system_topic(rec.topic):
                    continue
                builder.add(rec)
                if builder.rows >= batch_rows:
                    yield builder.flush()
        finally:
            view.release()
    if builder.rows:
        yield builder.flush()


def iter_record_positions(buf: Any, base: int, stop: int) -> Iterator[int]:
    """Start positions of the valid records of one file, before ``stop``; ends at the marker or garbage."""
    pos = 0
    end = len(buf)
    while pos < stop and pos + 8 <= end:
        size, magic = _SIZE_MAGIC.unpack_from(buf, pos)
        if magic == BLANK_MAGIC or magic != MESSAGE_MAGIC or size < _MIN_RECORD or pos + size > end:
            return
        # A stale record left behind a truncation would carry another position: trust only matching ones.
        if _PHYS_OFFSET.unpack_from(buf, pos + 28)[0] != base + pos:
            return
        yield pos
        pos += size
