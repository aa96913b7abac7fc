"""The exactly-once sink commit (rocketq-private codes 9001-9003): staging, watermark, replays, crash recovery."""

from __future__ import annotations

from typing import Any

import pytest

from rocketq.codes import ResponseCode
from rocketq.protocol.message import BatchItem, encode_batch, iter_records
from rocketq.protocol.sink import (
    PROP_SINK_BATCH,
    PROP_SINK_ID,
    SINK_COMMIT_BATCH,
    SINK_QUERY_STATE,
    SINK_STAGE_MESSAGES,
    STAGING_TOPIC,
    StagedRange,
    encode_commit_body,
)
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire

_counter = iter(range(10**9))


def item(topic: str, body: bytes, queue_id: int = 0, **props: str) -> BatchItem:
    uniq = f"SINKTEST{next(_counter):024d}"
    return BatchItem(0, body, {"REAL_TOPIC": topic, "REAL_QID": str(queue_id), "UNIQ_KEY": uniq, **props})


async def stage(wire: Wire, sink: str, batch: int, items: list[BatchItem]) -> StagedRange:
    resp = await wire.call(SINK_STAGE_MESSAGES, {"sinkId": sink, "batchId": batch}, encode_batch(items))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    ext = resp.ext_fields
    return StagedRange(int(ext["start"]), int(ext["end"]), int(ext["count"]))


async def commit(wire: Wire, sink: str, batch: int, ranges: list[StagedRange]) -> Any:
    return await wire.call(SINK_COMMIT_BATCH, {"sinkId": sink, "batchId": batch}, encode_commit_body(ranges))


async def bodies(wire: Wire, topic: str, queue_id: int = 0) -> list[bytes]:
    resp = await wire.pull(topic, queue_id, 0, max_nums=1000)
    if resp.code != ResponseCode.SUCCESS:
        return []
    return [r.body for r in iter_records(resp.body)]


async def test_commit_applies_staged_messages_in_order(wire: Wire) -> None:
    r1 = await stage(wire, "s1", 0, [item("SinkT", b"a", TAGS="TA", KEYS="k1"), item("SinkT", b"b")])
    r2 = await stage(wire, "s1", 0, [item("SinkT", b"c"), item("SinkT", b"d", queue_id=1)])
    # Staged but not committed: nothing is visible in the real topic.
    assert await bodies(wire, "SinkT") == []
    resp = await commit(wire, "s1", 0, [r1, r2])
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert resp.ext_fields["applied"] == "true"
    assert resp.ext_fields["messages"] == "4"
    assert await bodies(wire, "SinkT", 0) == [b"a", b"b", b"c"]
    assert await bodies(wire, "SinkT", 1) == [b"d"]
    pulled = await wire.pull("SinkT", 0, 0, max_nums=1)
    rec = next(iter_records(pulled.body))
    assert rec.properties["TAGS"] == "TA"
    assert rec.properties["KEYS"] == "k1"
    for internal in ("REAL_TOPIC", "REAL_QID", PROP_SINK_ID, PROP_SINK_BATCH):
        assert internal not in rec.properties


async def test_replayed_batch_is_refused_and_later_batches_apply(wire: Wire) -> None:
    first = await stage(wire, "s2", 3, [item("SinkR", b"x1"), item("SinkR", b"x2")])
    assert (await commit(wire, "s2", 3, [first])).ext_fields["applied"] == "true"
    # The replay stages the same rows again and commits with the same batch id: nothing is written.
    again = await stage(wire, "s2", 3, [item("SinkR", b"x1"), item("SinkR", b"x2")])
    resp = await commit(wire, "s2", 3, [again])
    assert resp.code == ResponseCode.SUCCESS
    assert resp.ext_fields["applied"] == "false"
    assert resp.ext_fields["lastBatchId"] == "3"
    older = await stage(wire, "s2", 2, [item("SinkR", b"old")])
    assert (await commit(wire, "s2", 2, [older])).ext_fields["applied"] == "false"
    newer = await stage(wire, "s2", 4, [item("SinkR", b"y")])
    assert (await commit(wire, "s2", 4, [newer])).ext_fields["applied"] == "true"
    assert await bodies(wire, "SinkR") == [b"x1", b"x2", b"y"]
    # Another sink has its own watermark.
    other = await stage(wire, "other", 0, [item("SinkR", b"z")])
    assert (await commit(wire, "other", 0, [other])).ext_fields["applied"] == "true"
    state = await wire.call(SINK_QUERY_STATE, {"sinkId": "s2"})
    assert state.ext_fields == {"lastBatchId": "4", "pending": "false"}
    unknown = await wire.call(SINK_QUERY_STATE, {"sinkId": "never"})
    assert unknown.ext_fields["lastBatchId"] == "-1"


async def test_commit_refuses_ranges_of_another_sink_or_batch(wire: Wire) -> None:
    mine = await stage(wire, "mine", 1, [item("SinkV", b"m")])
    theirs = await stage(wire, "theirs", 1, [item("SinkV", b"t")])
    resp = await commit(wire, "mine", 1, [mine, theirs])
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "not a message staged by sink mine" in resp.remark
    resp = await commit(wire, "mine", 2, [mine])
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "staged for batch 1, not 2" in resp.remark
    bad = StagedRange(mine.start, mine.end, mine.count + 1)
    assert (await commit(wire, "mine", 1, [bad])).code == ResponseCode.SYSTEM_ERROR
    # Nothing was applied and the watermark did not move.
    assert await bodies(wire, "SinkV") == []
    assert (await commit(wire, "mine", 1, [mine])).ext_fields["applied"] == "true"
    assert await bodies(wire, "SinkV") == [b"m"]


async def test_stage_validates_each_message(wire: Wire) -> None:
    cases = [
        (item("bad topic!", b"x"), ResponseCode.MESSAGE_ILLEGAL, "staged message 0"),
        (item("SinkQ", b"x", queue_id=99), ResponseCode.MESSAGE_ILLEGAL, "queueId[99] is illegal"),
        (item(STAGING_TOPIC, b"x"), ResponseCode.NO_PERMISSION, "forbidden"),
        (BatchItem(0, b"x", {"REAL_TOPIC": "SinkQ", "REAL_QID": "0"}), ResponseCode.MESSAGE_ILLEGAL, "UNIQ_KEY"),
    ]
    for bad, code, text in cases:
        resp = await wire.call(SINK_STAGE_MESSAGES, {"sinkId": "v", "batchId": 0}, encode_batch([item("SinkQ", b"ok"),
                                                                                                bad]))
        assert resp.code == code, (bad, resp.remark)
        assert text in resp.remark.replace("staged message 1", "staged message 0")
    resp = await wire.call(SINK_STAGE_MESSAGES, {"sinkId": "", "batchId": 0}, encode_batch([item("SinkQ", b"x")]))
    assert resp.code == ResponseCode.SYSTEM_ERROR


async def test_delay_level_survives_staging(wire: Wire, cluster: EmbeddedCluster) -> None:
    staged = await stage(wire, "delay", 0, [item("SinkD", b"later", DELAY="1")])
    assert (await commit(wire, "delay", 0, [staged])).ext_fields["applied"] == "true"
    # Stored in the schedule topic first (level 1 → queue 0), like any delayed send.
    resp = await wire.pull("SCHEDULE_TOPIC_XXXX", 0, 0, max_nums=10)
    assert resp.code == ResponseCode.SUCCESS
    assert [r.properties["REAL_TOPIC"] for r in iter_records(resp.body)] == ["SinkD"]


class Crash(Exception):
    pass


@pytest.mark.parametrize("finish_by", ["restart", "next_commit"])
async def test_half_applied_commit_is_finished_once(
    cluster: EmbeddedCluster, wire: Wire, finish_by: str
) -> None:
    items = [item("SinkC", f"m{i}".encode()) for i in range(5)]
    staged = await stage(wire, "crashy", 7, items)

    def crash_after_two(sink: str, batch: int, applied: int) -> None:
        if applied == 2:
            raise Crash("injected")

    cluster.broker.sink_commit.fault_hook = crash_after_two
    resp = await commit(wire, "crashy", 7, [staged])
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert (await wire.call(SINK_QUERY_STATE, {"sinkId": "crashy"})).ext_fields["pending"] == "true"
    assert await bodies(wire, "SinkC") == [b"m0", b"m1"]
    cluster.broker.sink_commit.fault_hook = None

    if finish_by == "restart":
        await cluster.restart_broker()
        wire = Wire(wire.rc, cluster.broker_addr)
        state = await wire.call(SINK_QUERY_STATE, {"sinkId": "crashy"})
        assert state.ext_fields == {"lastBatchId": "7", "pending": "false"}
    # Spark replays batch 7 with freshly staged rows: the broker finishes the first attempt, refuses the replay.
    replay = await stage(wire, "crashy", 7, [item("SinkC", f"m{i}".encode()) for i in range(5)])
    resp = await commit(wire, "crashy", 7, [replay])
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert resp.ext_fields["applied"] == "false"
    assert await bodies(wire, "SinkC") == [b"m0", b"m1", b"m2", b"m3", b"m4"]


async def test_watermark_survives_restart(cluster: EmbeddedCluster, wire: Wire) -> None:
    staged = await stage(wire, "durable", 11, [item("SinkW", b"w")])
    assert (await commit(wire, "durable", 11, [staged])).ext_fields["applied"] == "true"
    await cluster.restart_broker()
    wire = Wire(wire.rc, cluster.broker_addr)
    replay = await stage(wire, "durable", 11, [item("SinkW", b"w")])
    assert (await commit(wire, "durable", 11, [replay])).ext_fields["applied"] == "false"
    assert await bodies(wire, "SinkW") == [b"w"]
    assert (cluster.base_dir / "broker-a" / "config" / "sinkWatermark.json").exists()


async def test_delivery_time_survives_staging(wire: Wire) -> None:
    import time

    due = int(time.time() * 1000) + 60_000
    staged = await stage(wire, "timed", 0, [item("SinkTimed", b"at", TIMER_DELIVER_MS=str(due)),
                                            item("SinkTimed", b"now")])
    assert (await commit(wire, "timed", 0, [staged])).ext_fields["applied"] == "true"
    assert await bodies(wire, "SinkTimed") == [b"now"]
    resp = await wire.pull("rmq_sys_wheel_timer", 0, 0, max_nums=10)
    assert resp.code == ResponseCode.SUCCESS
    (rec,) = list(iter_records(resp.body))
    assert (rec.body, rec.properties["REAL_TOPIC"], rec.properties["TIMER_OUT_MS"]) == (b"at", "SinkTimed", str(due))


@pytest.mark.parametrize("cluster", [{"flushDiskType": "SYNC_FLUSH"}], indirect=True)
async def test_sync_flush_commit_answers_after_the_flush(cluster: EmbeddedCluster, wire: Wire) -> None:
    staged = await stage(wire, "flushed", 0, [item("SinkF", b"f1"), item("SinkF", b"f2")])
    resp = await commit(wire, "flushed", 0, [staged])
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert resp.ext_fields["applied"] == "true"
    assert await bodies(wire, "SinkF") == [b"f1", b"f2"]


async def test_commit_markers_alone_restore_the_watermarks(cluster: EmbeddedCluster, wire: Wire) -> None:
    """A broker without this sink's file (a slave elected master never had it) learns the watermarks and a
    half-applied batch from the commit markers in its commit log."""
    done = await stage(wire, "marked", 5, [item("SinkM", b"x")])
    assert (await commit(wire, "marked", 5, [done])).ext_fields["applied"] == "true"
    half = await stage(wire, "halfway", 2, [item("SinkH", f"h{i}".encode()) for i in range(3)])

    def crash_after_one(sink: str, batch: int, applied: int) -> None:
        raise Crash("injected")

    cluster.broker.sink_commit.fault_hook = crash_after_one
    assert (await commit(wire, "halfway", 2, [half])).code == ResponseCode.SYSTEM_ERROR
    cluster.broker.sink_commit.fault_hook = None
    await cluster.brokers[0].shutdown()
    config = cluster.base_dir / "broker-a" / "config"
    for path in config.glob("sinkWatermark.json*"):
        path.unlink()
    await cluster.start_broker(0, cluster.broker_config(0))
    wire = Wire(wire.rc, cluster.broker_addr)
    assert (await wire.call(SINK_QUERY_STATE, {"sinkId": "marked"})).ext_fields["lastBatchId"] == "5"
    assert (await wire.call(SINK_QUERY_STATE, {"sinkId": "halfway"})).ext_fields == {"lastBatchId": "2",
                                                                                     "pending": "false"}
    assert await bodies(wire, "SinkH") == [b"h0", b"h1", b"h2"]  # finished, each once
    replay = await stage(wire, "marked", 5, [item("SinkM", b"x")])
    assert (await commit(wire, "marked", 5, [replay])).ext_fields["applied"] == "false"
    assert await bodies(wire, "SinkM") == [b"x"]
    # the markers cannot be forged by a plain send
    for topic in ("RQ_SYS_SINK_COMMIT", STAGING_TOPIC):
        assert (await wire.send(topic, b"forged")).code == ResponseCode.NO_PERMISSION
