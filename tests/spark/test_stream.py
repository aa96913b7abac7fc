"""spark.readStream.format("rocketmq"): restarts, the per-trigger limit, lag visibility, new queues, data loss."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import Message

TIMEOUT = 180


def _stream(spark: Any, namesrv: str, topic: str, **options: str) -> Any:
    reader = (spark.readStream.format("rocketmq").option("nameServer", namesrv).option("topic", topic)
              .option("startingOffsets", "earliest"))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _run_available_now(df: Any, sink: str, checkpoint: Path, path: Path | None = None) -> Any:
    writer = df.writeStream.format(sink).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
    if path is not None:
        writer = writer.option("path", str(path))
    query = writer.start()
    try:
        assert query.awaitTermination(TIMEOUT), "the availableNow query did not finish"
    finally:
        query.stop()
    if query.exception() is not None:
        raise query.exception()
    return query


def test_restart_from_checkpoint_loses_nothing_duplicates_nothing(spark: Any, rq: Any, tmp_path: Path) -> None:
    topic, group = "SparkStream", "spark-stream-group"
    rq.create_topic(topic, 2)
    rq.produce(topic, [Message(topic, f"a{i}".encode()) for i in range(300)])
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def run() -> None:
        df = _stream(spark, rq.namesrv_addr, topic, consumerGroup=group).select("uniqKey", "body", "queueId",
                                                                              "queueOffset")
        _run_available_now(df, "parquet", ckpt, out)

    def lag_is_zero() -> dict[Any, Any]:
        progress = rq.group_offsets(group, topic)
        assert progress, "the group has no committed offsets"
        assert all(consumer == broker for consumer, broker in progress.values()), progress
        return progress

    run()
    assert sorted(lag_is_zero()) == [("broker-a", 0), ("broker-a", 1)]
    # The topic grows to 4 queues while the query is down; the restart reads the new queues too.
    rq.create_topic(topic, 4)
    rq.produce(topic, [Message(topic, f"b{i}".encode()) for i in range(200)])
    run()
    run()  # nothing new: a no-op run
    rows = spark.read.parquet(str(out)).collect()
    bodies = [r.body.decode() for r in rows]
    assert len(bodies) == 500
    assert sorted(set(bodies)) == sorted([f"a{i}" for i in range(300)] + [f"b{i}" for i in range(200)])
    assert {r.queueId for r in rows if r.body.startswith(b"b")} == {0, 1, 2, 3}
    assert sorted(lag_is_zero()) == [("broker-a", q) for q in range(4)]
    # Offsets in the checkpoint are the documented {topic: {broker: {queueId: next offset}}}, sorted.
    offsets_dir = ckpt / "offsets"
    last = max(offsets_dir.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1)
    recorded = json.loads(last.read_text().splitlines()[-1])
    assert list(recorded) == [topic]
    assert list(recorded[topic]["broker-a"]) == ["0", "1", "2", "3"]


def test_max_offsets_per_trigger_holds_with_available_now(spark: Any, rq: Any, tmp_path: Path) -> None:
    topic = "SparkLimit"
    rq.create_topic(topic, 3)
    rq.produce(topic, [Message(topic, b"x") for _ in range(300)], queue_id=0)
    rq.produce(topic, [Message(topic, b"y") for _ in range(150)], queue_id=1)  # queue 2 stays idle
    df = _stream(spark, rq.namesrv_addr, topic, maxOffsetsPerTrigger="100")
    query = _run_available_now(df, "noop", tmp_path / "ckpt")
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 450
    assert max(sizes) <= 100
    assert len(sizes) >= 5


def test_data_loss_after_retention(spark: Any, make_servers: Any, tmp_path: Path) -> None:
    servers = make_servers(mappedFileSizeCommitLog=str(64 * 1024), fileReservedTime="0")
    rq = servers.rq
    topic = "SparkLoss"
    rq.create_topic(topic, 1)
    body = b"z" * 1000
    rq.produce(topic, [Message(topic, body) for _ in range(50)])
    ckpt = tmp_path / "ckpt"
    _run_available_now(_stream(spark, servers.namesrv_addr, topic), "noop", ckpt)
    rq.produce(topic, [Message(topic, body) for _ in range(250)])

    def delete_old_files() -> int:
        async def run() -> int:
            store = servers.broker.store
            store.trigger_delete_files()
            store.run_cleanup()
            return store.get_min_offset_in_queue(topic, 0)

        return servers.call(run)

    first_kept = delete_old_files()
    assert first_kept > 50, "retention did not remove unread messages"
    with pytest.raises(Exception, match="failOnDataLoss"):
        _run_available_now(_stream(spark, servers.namesrv_addr, topic), "noop", ckpt)
    # Batch reads report it too, or skip what is gone.
    start = json.dumps({topic: {"broker-a": {"0": 0}}})
    batch = spark.read.format("rocketmq").option("nameServer", servers.namesrv_addr).option("topic", topic) \
        .option("startingOffsets", start)
    with pytest.raises(Exception, match="failOnDataLoss"):
        batch.load().collect()
    assert batch.option("failOnDataLoss", "false").load().count() == 300 - first_kept
    # The stream goes on from its checkpoint when told to skip what is gone.
    query = _run_available_now(_stream(spark, servers.namesrv_addr, topic, failOnDataLoss="false"), "noop", ckpt)
    assert sum(p["numInputRows"] for p in query.recentProgress) == 300 - first_kept
