"""The Spark source and the exactly-once sink across a controller-mode failover.

A name server with the embedded controller and a SYNC_MASTER + slave group (broker-a) in 5.x controller mode.
A stream reads topic ``SparkFoIn`` through the source and writes ``SparkFoOut`` through the exactly-once sink.
Its driver fails right after the broker applied micro-batch 1 (the answer lost, as when the master dies at
that moment); the master then stops and the slave is elected. The restarted query replays batch 1 and goes on
against the new master: the new master refuses the replay (it learned the watermark from the replicated
commit markers), the source resumes at the checkpointed queue offsets on the new master, and every row is in
the target exactly once. A batch read of the target through the source, from the new master, sees them all.

The same failover also catches a batch write half-way: its rows were staged on the old master, and its commit
starts as the master stops, before the new one is elected — the commit asks the name server again until the
group has a master, and applies the batch there (the staged bytes were replicated at the same offsets). And a
read task planned against the old master finds the queue's replica through the name server and reads it all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.client import Message
from rocketq.spark._offsets import QueueRange
from rocketq.spark._options import SinkOptions, SourceOptions
from rocketq.spark._read import ReadTask, read_range
from rocketq.spark.sink import RocketMQStreamWriter, commit_exactly_once, write_partition
from rocketq.spark.source import RocketMQDataSource
from rocketq.testing.cluster import TEST_BROKER_DEFAULTS

TIMEOUT = 180
SOURCE, TARGET, DIRECT = "SparkFoIn", "SparkFoOut", "SparkFoDirect"
ROWS = 300
KEYS = {
    "brokerName": "broker-a",
    "brokerRole": "SYNC_MASTER",
    "enableControllerMode": "true",
    "brokerHeartbeatInterval": "200",
    "syncBrokerMetadataPeriod": "300",
    "checkSyncStateSetPeriod": "200",
    "haMaxTimeSlaveNotCatchup": "30000",
    "controllerHeartBeatTimeoutMills": "2000",
    "haSendHeartbeatInterval": "200",
    "haReconnectInterval": "100",
    "slaveSyncIntervalMills": "300",
    "registerNameServerPeriod": "300",
    # the set-up sends its 300 rows at once into a broker that shares this process with Spark's driver: on a
    # loaded CI machine the send queue's head waited 238 ms, past Java's 200 ms flow-control limit (SYSTEM_BUSY)
    "waitTimeMillsInSendQueue": "10000",
}


def until(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Group:
    """The name server (controller inside) and broker-a's two replicas, on a background event loop."""

    def __init__(self, servers: Any) -> None:
        self.bg = servers  # conftest's Servers: a BackgroundCluster with the client helpers as ``rq``
        self.rq = servers.rq
        self.a = self.start(0, "a")
        self.b = self.start(1, "b")

    def start(self, index: int, name: str) -> Any:
        cluster = self.bg.cluster
        values = {**TEST_BROKER_DEFAULTS, **KEYS, "storePathRootDir": str(cluster.base_dir / name),
                  "namesrvAddr": cluster.namesrv_addr, "controllerAddr": cluster.namesrv_addr}  # fmt: skip
        return self.bg.call(lambda: cluster.start_broker(index, BrokerConfig.from_mapping(values)))

    def route_master(self) -> str | None:
        from rocketq.spark._wire import Cluster

        async def main() -> str | None:
            async with Cluster(self.bg.namesrv_addr, 5.0) as c:
                await c.route(TARGET, refresh=True)
                return c.routes.master_addr("broker-a")

        return asyncio.run(main())


@pytest.fixture
def group(make_servers: Callable[..., Any]) -> Group:
    return Group(make_servers(brokers=0, namesrv_settings={"enableControllerInNamesrv": "true"}))


class CommitThenFail(RocketMQDataSource):
    """The rocketmq sink whose driver fails once right after the broker applied batch ``failBatch``."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq-commit-then-fail"

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        options = dict(self.options)
        marker, batch = options.pop("failmarker"), int(options.pop("failbatch"))
        return CommitThenFailWriter(SinkOptions.parse(options, streaming=True), schema, marker, batch)


class CommitThenFailWriter(RocketMQStreamWriter):
    def __init__(self, opts: Any, schema: Any, marker: str, batch: int) -> None:
        super().__init__(opts, schema)
        self.marker, self.batch = marker, batch

    def commit(self, messages: list[Any], batchId: int) -> None:
        super().commit(messages, batchId)
        if batchId == self.batch and not Path(self.marker).exists():
            Path(self.marker).touch()
            raise RuntimeError("injected failure after the broker commit")


def test_source_and_exactly_once_sink_across_a_failover(spark: Any, group: Group, tmp_path: Path) -> None:
    rq, a, b = group.rq, group.a, group.b
    until(lambda: b.ha.client.connected and a.ha.sync_state_set == frozenset({1, 2}), "the slave in the set")
    rq.create_topic(SOURCE, 2)
    rq.create_topic(TARGET, 2)
    rq.create_topic(DIRECT, 2)
    rq.produce(SOURCE, [Message(SOURCE, f"m{i}".encode(), keys=f"k{i}") for i in range(ROWS)])
    # the slave learns the topics (SlaveSynchronize) so that, once master, it registers and serves them
    until(lambda: all(b.topics.get(t) is not None for t in (SOURCE, TARGET, DIRECT)), "topics on the slave")
    import pyarrow as pa

    spark.dataSource.register(CommitThenFail)
    ckpt, marker = tmp_path / "ckpt", tmp_path / "fired"

    def run() -> Any:
        df = (spark.readStream.format("rocketmq").option("nameServer", rq.namesrv_addr).option("topic", SOURCE)
              .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "100").load()
              .select("body", "keys"))
        query = (df.writeStream.format("rocketmq-commit-then-fail").option("checkpointLocation", str(ckpt))
                 .option("nameServer", rq.namesrv_addr).option("topic", TARGET)
                 .option("deliveryGuarantee", "exactly-once").option("failoverWaitMs", "20000")
                 .option("failMarker", str(marker)).option("failBatch", "1")
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(TIMEOUT)
        except Exception as exc:  # a failed query raises here
            return exc
        finally:
            query.stop()
        return query.exception()

    error = run()
    assert error is not None and "injected failure after" in str(error)
    assert len(rq.consume_all(TARGET)) == 200  # batches 0 and 1 applied on the master (and replicated)
    until(lambda: b.store.get_max_phy_offset() == a.store.get_max_phy_offset(), "the slave caught up")

    # a batch write staged on the master, whose commit comes when the master is gone
    direct = SinkOptions.parse({"nameServer": rq.namesrv_addr, "topic": DIRECT, "deliveryGuarantee": "exactly-once",
                                "sinkId": "direct", "batchId": "1", "failoverWaitMs": "20000"}, streaming=False)
    bodies_in = [f"d{i}".encode() for i in range(50)]
    staged = write_partition(iter([pa.record_batch([pa.array(bodies_in, pa.binary())], names=["body"])]),
                             ["body"], direct, streaming=False)
    assert sum(len(r) for r in staged.staged.values()) > 0

    # a read task planned now, against the master
    queue_end = a.store.get_max_offset_in_queue(SOURCE, 0)
    read_opts = SourceOptions.parse({"nameServer": rq.namesrv_addr, "topic": SOURCE, "failoverWaitMs": "20000"},
                                    streaming=False)
    task = ReadTask(QueueRange(SOURCE, "broker-a", 0, 0, queue_end), a.config.broker_addr, read_opts)

    group.bg.call(a.shutdown)  # its controller connection closes: the slave is elected
    commit_exactly_once(direct, [staged], 1)  # retried until the route names the new master
    assert b.role.is_master and b.role.broker_id == 0
    assert sorted(rec.body for _, rec in rq.consume_all(DIRECT)) == sorted(bodies_in)
    read = [body for batch in read_range(task) for body in batch.to_pydict()["body"]]
    assert len(read) == queue_end and len(set(read)) == queue_end
    until(lambda: group.route_master() == b.config.broker_addr, "the route naming the new master")

    assert run() is None  # batch 1 replayed (refused by the new master), then batch 2, all on b
    bodies = sorted(rec.body for _, rec in rq.consume_all(TARGET))
    assert bodies == sorted(f"m{i}".encode() for i in range(ROWS))  # each row once
    df = spark.read.format("rocketmq").option("nameServer", rq.namesrv_addr).option("topic", TARGET).load()
    assert sorted(r.body for r in df.select("body").collect()) == bodies
