"""df.write / writeStream.format("rocketmq"): round trips, per-key order, row errors, exactly once."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import Message
from rocketq.spark.sink import RocketMQStreamWriter
from rocketq.spark.source import RocketMQDataSource

TIMEOUT = 180
SINK_SCHEMA = ("body BINARY, keys STRING, tags STRING, properties MAP<STRING, STRING>, shardingKey STRING, "
               "seq INT")


def _rows(n: int, keys: int) -> list[tuple[Any, ...]]:
    out = []
    for i in range(n):
        shard = f"order-{i % keys}"
        out.append((f"payload-{i}".encode(), f"k{i} {shard}", "T" if i % 3 else "U",
                    {"seq": str(i), "shard": shard}, shard, i))
    return out


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_sink_round_trips_bodies_properties_and_per_key_order(
    spark: Any, rq: Any, guarantee: str
) -> None:
    topic = f"SparkSink-{guarantee}"
    rq.create_topic(topic, 4)
    df = spark.createDataFrame(_rows(240, 7), SINK_SCHEMA)
    # Each key in one partition, rows in order: order must hold per key, whatever queue it lands in.
    df = df.repartition(3, "shardingKey").sortWithinPartitions("seq").drop("seq")
    writer = df.write.format("rocketmq").mode("append").option("nameServer", rq.namesrv_addr) \
        .option("topic", topic).option("deliveryGuarantee", guarantee)
    if guarantee == "exactly-once":
        writer = writer.option("sinkId", "round-trip").option("batchId", "1")
    writer.save()
    stored = rq.consume_all(topic)
    assert len(stored) == 240
    queues_of_key: dict[str, set[Any]] = defaultdict(set)
    seqs_of_key: dict[str, list[int]] = defaultdict(list)
    for key, rec in stored:
        i = int(rec.properties["seq"])
        assert rec.body == f"payload-{i}".encode()
        assert rec.properties["KEYS"] == f"k{i} order-{i % 7}"
        assert rec.properties["TAGS"] == ("T" if i % 3 else "U")
        assert rec.properties["shard"] == f"order-{i % 7}"
        queues_of_key[rec.properties["shard"]].add(key)
        seqs_of_key[rec.properties["shard"]].append(i)
    assert all(len(qs) == 1 for qs in queues_of_key.values()), queues_of_key
    assert all(seqs == sorted(seqs) for seqs in seqs_of_key.values())
    if guarantee == "exactly-once":
        writer.save()  # the same job again: batch 1 of this sink is already in
        assert len(rq.consume_all(topic)) == 240
        writer.option("batchId", "2").save()
        assert len(rq.consume_all(topic)) == 480


def test_sink_errors_name_the_row(spark: Any, rq: Any) -> None:
    rq.create_topic("SparkSinkErr", 1)

    def write(rows: list[tuple[Any, ...]], schema: str, **options: str) -> None:
        w = spark.createDataFrame(rows, schema).coalesce(1).write.format("rocketmq").mode("append") \
            .option("nameServer", rq.namesrv_addr)
        for k, v in options.items():
            w = w.option(k, v)
        w.save()

    with pytest.raises(Exception, match=r"row 2 of partition 0 \(keys k2\): body is null"):
        write([("a", "k0"), ("b", "k1"), (None, "k2")], "body STRING, keys STRING", topic="SparkSinkErr")
    with pytest.raises(Exception, match=r"row 1 of partition 0: .*delayLevel 40"):
        write([("a", 1), ("b", 40)], "body STRING, delayLevel INT", topic="SparkSinkErr")
    with pytest.raises(Exception, match=r"row 0 of partition 0: topic is null"):
        write([("a", None)], "body STRING, topic STRING")
    with pytest.raises(Exception, match="does not know column 'value'"):
        write([("a",)], "value STRING", topic="SparkSinkErr")
    with pytest.raises(Exception, match="only appends"):
        spark.createDataFrame([("a",)], "body STRING").write.format("rocketmq").mode("overwrite") \
            .option("nameServer", rq.namesrv_addr).option("topic", "SparkSinkErr").save()
    with pytest.raises(Exception, match="needs the options 'sinkId' and 'batchId'"):
        write([("a",)], "body STRING", topic="SparkSinkErr", deliveryGuarantee="exactly-once")
    assert rq.consume_all("SparkSinkErr") == []


class FailingSink(RocketMQDataSource):
    """The rocketmq sink, failing its driver commit once, before or after the broker applied the batch."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq-failing"

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        from rocketq.spark._options import SinkOptions

        options = dict(self.options)
        marker, when, batch = options.pop("failmarker"), options.pop("failwhen"), int(options.pop("failbatch"))
        return FailingWriter(SinkOptions.parse(options, streaming=True), schema, marker, when, batch)


class FailingWriter(RocketMQStreamWriter):
    def __init__(self, opts: Any, schema: Any, marker: str, when: str, batch: int) -> None:
        super().__init__(opts, schema)
        self.marker, self.when, self.batch = marker, when, batch

    def commit(self, messages: list[Any], batchId: int) -> None:
        fire = batchId == self.batch and not Path(self.marker).exists()
        if fire and self.when == "before":
            Path(self.marker).touch()
            raise RuntimeError("injected failure before the broker commit")
        super().commit(messages, batchId)
        if fire:
            Path(self.marker).touch()
            raise RuntimeError("injected failure after the broker commit")


def test_exactly_once_sink_survives_failures_before_and_after_commit(
    spark: Any, rq: Any, tmp_path: Path
) -> None:
    source, target = "SparkEOIn", "SparkEOOut"
    rq.create_topic(source, 2)
    rq.create_topic(target, 3)
    rq.produce(source, [Message(source, f"m{i}".encode(), keys=f"k{i}") for i in range(300)])
    spark.dataSource.register(FailingSink)
    ckpt = tmp_path / "ckpt"

    def run(when: str, batch: int) -> Any:
        df = (spark.readStream.format("rocketmq").option("nameServer", rq.namesrv_addr).option("topic", source)
              .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "100").load()
              .select("body", "keys", "tags", "properties"))
        query = (df.writeStream.format("rocketmq-failing").option("checkpointLocation", str(ckpt))
                 .option("nameServer", rq.namesrv_addr).option("topic", target)
                 .option("deliveryGuarantee", "exactly-once")
                 .option("failMarker", str(tmp_path / f"fired-{when}")).option("failWhen", when)
                 .option("failBatch", str(batch)).trigger(availableNow=True).start())
        try:
            query.awaitTermination(TIMEOUT)
        except Exception as exc:  # a failed query raises here
            return exc
        finally:
            query.stop()
        return query.exception()

    error = run("before", 1)
    assert error is not None and "injected failure before" in str(error)
    assert len(rq.consume_all(target)) == 100  # batch 0 only: batch 1 failed before reaching the broker
    error = run("after", 2)
    assert error is not None and "injected failure after" in str(error)
    # Batch 1 was replayed and applied; batch 2 was applied by the broker, then the driver failed.
    assert len(rq.consume_all(target)) == 300
    assert run("never", -1) is None  # replays batch 2: the broker refuses it
    bodies = [rec.body for _, rec in rq.consume_all(target)]
    assert len(bodies) == 300
    assert sorted(bodies) == sorted(f"m{i}".encode() for i in range(300))
