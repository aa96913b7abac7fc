"""Order events → revenue per minute, by Spark Structured Streaming, into a results topic, exactly once.

    python examples/spark_order_pipeline.py --standalone         # starts its own `rocketq standalone`
    python examples/spark_order_pipeline.py --namesrv 127.0.0.1:9876

(`make pipeline-demo` runs the first form.) What it shows:

1. 400 order events for minutes 0-4 of a day go to the topic ``Orders`` (JSON bodies, key = order id).
2. A streaming query reads ``Orders`` (format ``rocketmq``), parses the JSON, aggregates revenue per 1-minute
   event-time window with a 1-minute watermark, and writes each finished window as one message to
   ``OrderRevenuePerMinute`` (format ``rocketmq``, ``deliveryGuarantee=exactly-once``).
3. The first run crashes on purpose right after the brokers applied its first micro-batch with results,
   before Spark recorded it — the worst moment for an at-least-once sink. The restart replays that batch from the
   checkpoint; the brokers recognise the batch number and store nothing twice.
4. 400 more events (minutes 5-9, plus one at minute 12 that moves the watermark past minute 10) arrive and
   the query runs again from its checkpoint.
5. The results topic is read back: exactly one message per minute 0-9, with the right totals.

Requires the ``[spark]`` extra (``pip install -e '.[spark]'``) and Java 17+.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rocketq.client import Message, Producer

SOURCE = "Orders"
RESULTS = "OrderRevenuePerMinute"
DAY = 1_767_225_600_000  # 2026-01-01T00:00:00Z, in epoch ms
MINUTE = 60_000


# --------------------------------------------------------------------------------------- the events


def order_events(first_minute: int, minutes: int, per_minute: int) -> list[dict[str, Any]]:
    events = []
    for m in range(first_minute, first_minute + minutes):
        for i in range(per_minute):
            events.append({
                "orderId": f"o-{m:02d}-{i:03d}",
                "customer": f"c{i % 13}",
                "amount": round(1 + (m * 31 + i * 7) % 97 + 0.25, 2),
                "eventTime": DAY + m * MINUTE + (i * 997) % MINUTE,
            })
    return events


def expected_revenue(events: list[dict[str, Any]]) -> dict[int, tuple[int, float]]:
    out: dict[int, tuple[int, float]] = {}
    for e in events:
        minute = (e["eventTime"] - DAY) // MINUTE
        n, total = out.get(minute, (0, 0.0))
        out[minute] = (n + 1, round(total + e["amount"], 2))
    return out


def produce(namesrv: str, events: list[dict[str, Any]]) -> None:
    async def main() -> None:
        async with Producer("order-service", namesrv_addr=namesrv) as producer:
            msgs = [Message(SOURCE, json.dumps(e).encode(), tags="created", keys=e["orderId"]) for e in events]
            for i in range(0, len(msgs), 200):
                await producer.send_batch(msgs[i : i + 200])

    asyncio.run(main())


def read_results(spark: Any, namesrv: str) -> list[dict[str, Any]]:
    rows = (spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", RESULTS).load()
            .select("body").collect())
    return sorted((json.loads(r.body) for r in rows), key=lambda r: r["minute"])


# ------------------------------------------------------------------------------------- the pipeline


def revenue_per_minute(spark: Any, namesrv: str) -> Any:
    """The streaming DataFrame: one row per finished 1-minute window, shaped for the rocketmq sink."""
    from pyspark.sql import functions as F

    event = "orderId STRING, customer STRING, amount DOUBLE, eventTime LONG"
    orders = (
        spark.readStream.format("rocketmq")
        .option("nameServer", namesrv)
        .option("topic", SOURCE)
        .option("subExpression", "created")          # tag filter, applied by the broker
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "250")       # bounded micro-batches
        .load()
        .select(F.from_json(F.col("body").cast("string"), event).alias("o"))
        .select("o.*")
        .withColumn("ts", F.timestamp_millis("eventTime"))
    )
    windows = (
        orders.withWatermark("ts", "1 minute")
        .groupBy(F.window("ts", "1 minute"))
        .agg(F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("revenue"))
    )
    minute = ((F.unix_millis(F.col("window.start")) - F.lit(DAY)) / MINUTE).cast("int")
    return windows.select(
        F.to_json(F.struct(minute.alias("minute"), F.col("window.start").cast("string").alias("start"),
                           "orders", "revenue")).alias("body"),
        F.col("window.start").cast("string").alias("keys"),
        F.lit("per-minute").alias("tags"),
    )


def run_query(spark: Any, namesrv: str, checkpoint: Path, sink_format: str = "rocketmq") -> None:
    query = (
        revenue_per_minute(spark, namesrv)
        .writeStream.format(sink_format)
        .outputMode("append")                       # a window is written once, when the watermark closes it
        .option("nameServer", namesrv)
        .option("topic", RESULTS)
        .option("deliveryGuarantee", "exactly-once")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(300)
    finally:
        query.stop()


def crashing_sink(marker: Path) -> Any:
    """The rocketmq sink, but the driver dies once, right after the brokers applied a non-empty batch."""
    from rocketq.spark.sink import RocketMQStreamWriter
    from rocketq.spark.source import RocketMQDataSource

    class CrashAfterCommit(RocketMQStreamWriter):
        def commit(self, messages: list[Any], batchId: int) -> None:
            super().commit(messages, batchId)
            if not marker.exists() and sum(m.rows for m in messages if m is not None):
                marker.write_text(str(batchId))
                raise RuntimeError(f"simulated driver crash after the broker commit of batch {batchId}")

    class CrashingRocketMQ(RocketMQDataSource):
        @classmethod
        def name(cls) -> str:
            return "rocketmq-crash-demo"

        def streamWriter(self, schema: Any, overwrite: bool) -> Any:
            w = super().streamWriter(schema, overwrite)
            return CrashAfterCommit(w.opts, schema)

    return CrashingRocketMQ


def run_demo(spark: Any, namesrv: str, work_dir: Path) -> list[dict[str, Any]]:
    """The whole story; returns the result messages (one dict per minute)."""
    checkpoint = work_dir / "checkpoint"
    first = order_events(0, 5, 80)
    produce(namesrv, first)
    marker = work_dir / "crashed-after-batch"
    spark.dataSource.register(crashing_sink(marker))
    print("run 1: crashes right after the brokers applied the first batch with results ...")
    try:
        run_query(spark, namesrv, checkpoint, sink_format="rocketmq-crash-demo")
    except Exception:  # the StreamingQueryException of the simulated crash
        print(f"  the query failed as planned after the brokers applied batch {marker.read_text()}")
    assert marker.exists(), "the simulated crash did not happen"
    applied = len(read_results(spark, namesrv))
    print(f"  {applied} result message(s) stored so far")
    print("run 2: restart from the checkpoint (that batch is replayed; the brokers refuse it) ...")
    run_query(spark, namesrv, checkpoint)
    second = order_events(5, 5, 80) + order_events(12, 1, 1)
    produce(namesrv, second)
    print("run 3: 400 more orders ...")
    run_query(spark, namesrv, checkpoint)
    results = read_results(spark, namesrv)
    expected = expected_revenue(first + second)
    got = {r["minute"]: (r["orders"], r["revenue"]) for r in results}
    assert len(results) == len(got), f"a window was written twice: {results}"
    assert got == {m: expected[m] for m in range(10)}, (got, expected)
    return results


# ------------------------------------------------------------------------------------------ plumbing


@contextmanager
def standalone(data_dir: Path) -> Iterator[str]:
    """Run ``rocketq standalone`` on ephemeral loopback ports; yields the name server address."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocketq", "--log-level", "WARNING", "standalone", "--dir", str(data_dir),
         "--namesrv-port", "0", "listenPort=0", "listenHost=127.0.0.1", "brokerIP1=127.0.0.1"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        namesrv = broker = None
        for line in proc.stdout:
            if m := re.search(r"name server listening on [^:]+:(\d+)", line):
                namesrv = f"127.0.0.1:{m.group(1)}"
            if re.search(r"broker \S+ listening on", line):
                broker = line
            if namesrv and broker:
                break
        if namesrv is None:
            raise RuntimeError(f"rocketq standalone exited with {proc.wait()} before listening")
        asyncio.run(_wait_for_broker(namesrv))
        yield namesrv
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _wait_for_broker(namesrv: str, timeout: float = 30.0) -> None:
    """Until the name server knows the broker (it registers right after it starts listening)."""
    from rocketq.client import AdminClient

    async with AdminClient(namesrv_addr=namesrv) as admin:
        async with asyncio.timeout(timeout):
            while not await admin.brokers():
                await asyncio.sleep(0.1)


def local_spark() -> Any:
    """A small local session: 2 cores, no UI, loopback only."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if "JAVA_HOME" not in os.environ and (java := shutil.which("java")):
        os.environ["JAVA_HOME"] = str(Path(os.path.realpath(java)).parent.parent)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("rocketq-order-pipeline")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "1g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--standalone", action="store_true", help="start a private `rocketq standalone`")
    where.add_argument("--namesrv", help="name server of a running cluster (topics Orders/OrderRevenuePerMinute)")
    ap.add_argument("--work-dir", help="checkpoint (and standalone data) directory; default a temporary one")
    args = ap.parse_args()
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="rocketq-pipeline-"))
    spark = local_spark()
    try:
        if args.standalone:
            with standalone(work / "rocketq") as namesrv:
                results = run_demo(spark, namesrv, work)
        else:
            results = run_demo(spark, args.namesrv, work)
    finally:
        spark.stop()
    print(f"\n{RESULTS}: one message per minute, exactly once")
    print(f"{'minute':>6}  {'window start':<20} {'orders':>6} {'revenue':>9}")
    for r in results:
        print(f"{r['minute']:>6}  {r['start']:<20} {r['orders']:>6} {r['revenue']:>9.2f}")
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
