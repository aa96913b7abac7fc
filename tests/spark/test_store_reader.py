"""spark.read.format("rocketmq-store"): a commit-log copy decodes record for record, no broker running."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import Message


def test_store_reader_decodes_what_the_broker_wrote(spark: Any, make_servers: Any, tmp_path: Path) -> None:
    servers = make_servers(mappedFileSizeCommitLog=str(16 * 1024))
    rq = servers.rq
    rq.create_topic("StoreA", 2)
    rq.create_topic("StoreB", 1)
    sent: list[tuple[Any, bytes]] = []
    for i in range(300):
        # Every 25th body is big enough for the producer to compress it (stored with sysFlag bit 0).
        body = (f"a{i}-".encode() * (800 if i % 25 == 0 else 3))
        m = Message("StoreA", body, tags=f"t{i % 3}", keys=f"key{i % 10}")
        m.put_user_property("i", str(i))
        sent.append((m, body))
    results = rq.produce("StoreA", [m for m, _ in sent])
    results += rq.produce("StoreB", [Message("StoreB", f"b{i}".encode()) for i in range(50)])
    bodies = [b for _, b in sent] + [f"b{i}".encode() for i in range(50)]
    store = servers.store_dir
    servers.stop()
    copy = tmp_path / "store-copy"
    shutil.copytree(store, copy)
    assert len(list((copy / "commitlog").iterdir())) > 3, "the test wants several commit-log files"

    def read(**options: str) -> list[Any]:
        reader = spark.read.format("rocketmq-store")
        for k, v in options.items():
            reader = reader.option(k, v)
        return reader.load(str(copy)).collect()

    rows = read(brokerName="broker-a")
    assert len(rows) == 350
    by_msg_id = {r.msgId: r for r in rows}
    for result, body in zip(results, bodies, strict=True):
        row = by_msg_id[result.offset_msg_id]
        assert row.body == body
        assert row.uniqKey == result.msg_id
        assert (row.topic, row.queueId, row.queueOffset) == (
            result.message_queue.topic, result.message_queue.queue_id, result.queue_offset
        )
        assert row.brokerName == "broker-a"
        assert row.commitLogOffset == int(result.offset_msg_id[16:], 16)
    assert {r.properties["i"] for r in rows if r.topic == "StoreA"} == {str(i) for i in range(300)}
    # Split files into byte ranges: the same records, each once.
    split = read(maxBytesPerPartition="9000")
    assert sorted(r.msgId for r in split) == sorted(by_msg_id)
    assert {r.topic for r in read(topic="StoreB")} == {"StoreB"}
    assert len(read(topic="StoreB")) == 50


def test_store_reader_errors(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no commit-log directory"):
        spark.read.format("rocketmq-store").load(str(tmp_path / "missing")).collect()
    with pytest.raises(Exception, match="unknown option 'topics'"):
        spark.read.format("rocketmq-store").option("topics", "x").load(str(tmp_path)).collect()


def test_store_reader_over_empty_files_reads_zero_rows(spark: Any, tmp_path: Path) -> None:
    # A store whose only commit-log file is still empty plans no partition (PySpark then passes InputPartition(None)).
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / ("0" * 20)).touch()
    assert spark.read.format("rocketmq-store").load(str(tmp_path)).collect() == []
