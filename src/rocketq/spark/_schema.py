"""The fixed read schema of both sources, and the Arrow batch builder that fills it from stored records.

pyarrow is imported lazily (``RecordBatchBuilder.__init__``): this module itself is importable without it.
"""

from __future__ import annotations

import zlib
from typing import Any

from rocketq.protocol.message import (
    PROP_KEYS,
    PROP_TAGS,
    PROP_UNIQ_KEY,
    SYSFLAG_COMPRESSED,
    MessageRecord,
    encode_host,
)

#: (column, Spark SQL type, meaning) — the documented read schema, in order.
READ_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("topic", "STRING", "topic (for a retried message: the retry topic it was read from)"),
    ("brokerName", "STRING", "broker that stores the queue (store reader: the brokerName option, else null)"),
    ("queueId", "INT", "queue id within the broker"),
    ("queueOffset", "BIGINT", "offset of the message in its queue (consume-queue index)"),
    ("commitLogOffset", "BIGINT", "physical offset of the record in the broker's commit log"),
    ("msgId", "STRING", "offset message id: store host + commit-log offset, 32 hex chars (IPv4)"),
    ("uniqKey", "STRING", "client message id (UNIQ_KEY property), what SendResult.msg_id shows"),
    ("keys", "STRING", "KEYS property: space-separated keys"),
    ("tags", "STRING", "TAGS property"),
    ("body", "BINARY", "message body, decompressed"),
    ("flag", "INT", "producer's int flag"),
    ("bornTimestamp", "TIMESTAMP", "when the producer created the message"),
    ("storeTimestamp", "TIMESTAMP", "when the broker stored it"),
    ("bornHost", "STRING", "producer address ip:port"),
    ("storeHost", "STRING", "broker address ip:port"),
    ("reconsumeTimes", "INT", "redelivery count"),
    ("properties", "MAP<STRING, STRING>", "every property, system ones included"),
)
READ_SCHEMA_DDL = ", ".join(f"{name} {kind}" for name, kind, _ in READ_COLUMNS)
READ_COLUMN_NAMES = tuple(name for name, _, _ in READ_COLUMNS)

#: Rows per Arrow batch handed to Spark.
DEFAULT_BATCH_ROWS = 8192


def read_schema() -> Any:
    """``READ_SCHEMA_DDL`` as a ``StructType``, built in Python (workers have no JVM to parse DDL)."""
    from pyspark.sql import types as t

    kinds = {
        "STRING": t.StringType(),
        "INT": t.IntegerType(),
        "BIGINT": t.LongType(),
        "BINARY": t.BinaryType(),
        "TIMESTAMP": t.TimestampType(),
        "MAP<STRING, STRING>": t.MapType(t.StringType(), t.StringType()),
    }
    return t.StructType([t.StructField(name, kinds[kind], True) for name, kind, _ in READ_COLUMNS])


def check_read_schema(schema: Any) -> None:
    """Refuse a user-supplied schema that differs from the fixed one (Spark would silently use it)."""
    from pyspark.sql.types import StructType

    expected = read_schema()
    if schema is None or not isinstance(schema, StructType):
        return
    got = [(f.name, f.dataType) for f in schema.fields]
    want = [(f.name, f.dataType) for f in expected.fields]
    if got != want:
        raise ValueError(
            "the rocketmq sources have a fixed schema and do not accept a user-specified one; remove .schema(...)"
            f" (expected: {READ_SCHEMA_DDL})"
        )


def arrow_schema() -> Any:
    """The Arrow schema Spark expects for ``READ_SCHEMA_DDL`` (exactly: types, nullability, map layout)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(read_schema(), timezone="UTC")


class RecordBatchBuilder:
    """Accumulates decoded records column by column and cuts ``pyarrow.RecordBatch``es of the read schema."""

    def __init__(self, broker_name: str | None, schema: Any | None = None) -> None:
        import pyarrow  # type: ignore[import-untyped]

        self._pa = pyarrow
        self.schema = schema if schema is not None else arrow_schema()
        self.broker_name = broker_name
        self._host_cache: dict[tuple[str, int], tuple[str, str]] = {}
        self._reset()

    def _reset(self) -> None:
        self.cols: list[list[Any]] = [[] for _ in READ_COLUMNS[:-1]]
        # The properties map, flattened: every row's keys and values end to end, plus row boundaries.
        self.prop_keys: list[str] = []
        self.prop_values: list[str] = []
        self.prop_offsets: list[int] = [0]
        self.rows = 0

    def _host(self, host: tuple[str, int]) -> tuple[str, str]:
        """``ip:port`` text and the offset-msg-id hex prefix of a host, cached."""
        got = self._host_cache.get(host)
        if got is None:
            got = (f"{host[0]}:{host[1]}", encode_host(host).hex().upper())
            self._host_cache[host] = got
        return got

    def add(self, rec: MessageRecord) -> None:
        c = self.cols
        props = rec.properties
        store_text, store_hex = self._host(rec.store_host)
        body = rec.body
        if rec.sys_flag & SYSFLAG_COMPRESSED:
            body = zlib.decompress(body)
        c[0].append(rec.topic)
        c[1].append(self.broker_name)
        c[2].append(rec.queue_id)
        c[3].append(rec.queue_offset)
        c[4].append(rec.commit_log_offset)
        c[5].append(f"{store_hex}{rec.commit_log_offset:016X}")
        c[6].append(props.get(PROP_UNIQ_KEY))
        c[7].append(props.get(PROP_KEYS))
        c[8].append(props.get(PROP_TAGS))
        c[9].append(body)
        c[10].append(rec.flag)
        c[11].append(rec.born_timestamp * 1000)
        c[12].append(rec.store_timestamp * 1000)
        c[13].append(self._host(rec.born_host)[0])
        c[14].append(store_text)
        c[15].append(rec.reconsume_times)
        self.prop_keys.extend(props)
        self.prop_values.extend(props.values())
        self.prop_offsets.append(len(self.prop_keys))
        self.rows += 1

    def flush(self) -> Any:
        """The accumulated rows as one RecordBatch (then empty again)."""
        pa = self._pa
        schema = self.schema
        arrays = [pa.array(col, type=schema.field(i).type) for i, col in enumerate(self.cols)]
        arrays.append(pa.MapArray.from_arrays(
            pa.array(self.prop_offsets, pa.int32()),
            pa.array(self.prop_keys, pa.string()),
            pa.array(self.prop_values, pa.string()),
            type=schema.field(len(arrays)).type,
        ))
        batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
        self._reset()
        return batch
