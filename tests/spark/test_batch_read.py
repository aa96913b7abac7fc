"""spark.read.format("rocketmq"): a batch read equals what was produced; positions; schema; options."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from rocketq.client import Message
from rocketq.spark import READ_COLUMNS


def _msg(topic: str, i: int) -> Message:
    m = Message(topic, f"body-{i}".encode(), tags="even" if i % 2 == 0 else "odd", keys=[f"k{i}", "all"])
    m.put_user_property("seq", str(i))
    return m


def test_batch_read_equals_what_was_produced(spark: Any, rq: Any) -> None:
    rq.create_topic("SparkBatch", 4)
    results = rq.produce("SparkBatch", [_msg("SparkBatch", i) for i in range(400)])
    df = spark.read.format("rocketmq").option("nameServer", rq.namesrv_addr).option("topic", "SparkBatch").load()
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        (name, kind.lower().replace(", ", ",")) for name, kind, _ in READ_COLUMNS
    ]
    rows = df.collect()
    assert len(rows) == 400
    by_uniq = {r.uniqKey: r for r in rows}
    for i, sent in enumerate(results):
        row = by_uniq[sent.msg_id]
        assert row.body == f"body-{i}".encode()
        assert row.topic == "SparkBatch"
        assert (row.brokerName, row.queueId, row.queueOffset) == (
            sent.message_queue.broker_name, sent.message_queue.queue_id, sent.queue_offset,
        )
        assert row.msgId == sent.offset_msg_id
        assert row.tags == ("even" if i % 2 == 0 else "odd")
        assert row.keys == f"k{i} all"
        assert row.properties["seq"] == str(i)
        assert row.properties["UNIQ_KEY"] == sent.msg_id
        assert row.storeTimestamp >= row.bornTimestamp
        assert row.reconsumeTimes == 0
        assert row.storeHost.startswith("127.0.0.1:")
    assert {r.commitLogOffset for r in rows} == {int(s.offset_msg_id[16:], 16) for s in results}


def test_positions_json_timestamp_and_split(spark: Any, rq: Any) -> None:
    rq.create_topic("SparkPos", 2)
    rq.produce("SparkPos", [_msg("SparkPos", i) for i in range(40)])  # 20 per queue
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    rq.produce("SparkPos", [_msg("SparkPos", i) for i in range(40, 60)])  # 10 more per queue

    def read(**options: str) -> list[Any]:
        reader = spark.read.format("rocketmq").option("nameServer", rq.namesrv_addr).option("topic", "SparkPos")
        for k, v in options.items():
            reader = reader.option(k, v)
        return reader.load().select("queueId", "queueOffset").collect()

    start = json.dumps({"SparkPos": {"broker-a": {"0": 5, "1": -2}}})
    end = json.dumps({"SparkPos": {"broker-a": {"0": 8, "1": 3}}})
    got = sorted((r.queueId, r.queueOffset) for r in read(startingOffsets=start, endingOffsets=end))
    assert got == [(0, 5), (0, 6), (0, 7), (1, 0), (1, 1), (1, 2)]
    after_cut = read(startingTimestamp=str(cut))
    assert sorted(r.queueOffset for r in after_cut if r.queueId == 0) == list(range(20, 30))
    before_cut = read(endingTimestamp=str(cut))
    assert len(before_cut) == 40
    # Small partitions: the same rows, however the ranges are cut.
    split = read(maxRecordsPerPartition="3", minPartitions="30")
    assert sorted(split) == sorted(read())
    assert len(split) == 60


def test_tag_and_sql92_filters_run_on_the_broker(spark: Any, rq: Any) -> None:
    rq.create_topic("SparkFilter", 2)
    rq.produce("SparkFilter", [_msg("SparkFilter", i) for i in range(30)])
    base = spark.read.format("rocketmq").option("nameServer", rq.namesrv_addr).option("topic", "SparkFilter")
    tagged = base.option("subExpression", "even").load().collect()
    assert sorted(int(r.properties["seq"]) for r in tagged) == list(range(0, 30, 2))
    both = base.option("subExpression", "even || odd").load().count()
    assert both == 30
    sql = base.option("expressionType", "SQL92").option("subExpression", "seq < 10 AND TAGS = 'odd'").load()
    assert sorted(int(r.properties["seq"]) for r in sql.collect()) == [1, 3, 5, 7, 9]


def test_group_position_and_errors(spark: Any, rq: Any) -> None:
    rq.create_topic("SparkErr", 1)
    rq.produce("SparkErr", [_msg("SparkErr", i) for i in range(5)])

    def base() -> Any:  # a DataFrameReader is a mutable builder: a fresh one per case
        return spark.read.format("rocketmq").option("nameServer", rq.namesrv_addr)

    with pytest.raises(Exception, match="unknown option 'topics'"):
        base().option("topics", "SparkErr").load().collect()
    with pytest.raises(Exception, match="fixed schema"):
        base().schema("body BINARY").option("topic", "SparkErr").load().collect()
    with pytest.raises(Exception, match="does not exist"):
        base().option("topic", "NoSuchSparkTopic").load().collect()
    with pytest.raises(Exception, match="needs the consumerGroup option"):
        base().option("topic", "SparkErr").option("startingOffsets", "group").load().collect()
    with pytest.raises(Exception, match="for streaming reads only"):
        base().option("topic", "SparkErr").option("maxOffsetsPerTrigger", "5").load().collect()
    # startingOffsets=group: where the group's committed offsets are.
    rq.commit_offset("spark-err-group", ("SparkErr", "broker-a", 0), 3)
    rows = base().option("topic", "SparkErr").option("consumerGroup", "spark-err-group") \
        .option("startingOffsets", "group").load().collect()
    assert sorted(r.queueOffset for r in rows) == [3, 4]


def test_an_empty_range_reads_zero_rows(spark: Any, rq: Any, tmp_path: Any) -> None:
    """PySpark 4.3 plans ``[InputPartition(None)]`` when ``partitions()`` returns none; that reads 0 rows."""
    rq.create_topic("SparkEmpty", 2)
    rq.produce("SparkEmpty", [_msg("SparkEmpty", i) for i in range(6)])

    def read(**options: str) -> Any:
        reader = spark.read.format("rocketmq").option("nameServer", rq.namesrv_addr).option("topic", "SparkEmpty")
        for k, v in options.items():
            reader = reader.option(k, v)
        return reader.load()

    assert read(startingOffsets="latest").collect() == []
    # A caught-up group, as an incremental batch job finds it on its next run.
    for queue_id in (0, 1):
        rq.commit_offset("spark-empty-group", ("SparkEmpty", "broker-a", queue_id), 3)
    assert read(consumerGroup="spark-empty-group", startingOffsets="group").count() == 0
    # A time window before any message was stored.
    assert read(endingTimestamp="1").collect() == []
    assert read().count() == 6  # the same topic, non-empty range: still read
    # A topic with no message at all.
    rq.create_topic("SparkNothing", 1)
    nothing = spark.read.format("rocketmq").option("nameServer", rq.namesrv_addr).option("topic", "SparkNothing")
    assert nothing.load().collect() == []
