"""Read throughput of a topic into Spark (local[2]) beside rocketq's own Python consumer, same data, same run.

    .venv/bin/python benchmarks/spark_bench.py                      # 1,000,000 messages of 1 KiB
    .venv/bin/python benchmarks/spark_bench.py --messages 100000    # a quicker look

Steps: start ``rocketq standalone`` as a separate process (ephemeral loopback ports, store in a temp dir),
fill a topic of ``--queues`` queues with ``--messages`` bodies of ``--size`` bytes (batched sends), then
time, on the same data:

* ``python consumer``: ``rocketq.client.LitePullConsumer`` assigned every queue, polling until it has every
  message (one process, one event loop);
* ``spark batch read``: ``spark.read.format("rocketmq")`` summing the body lengths (every row is decoded and
  materialised; the first job of the session, which starts the Python workers, is run and reported apart);
* ``spark stream (availableNow)``: the same topic read by a streaming query into the ``noop`` sink.

Not a test: pytest never collects it. Prints a table and, with ``--json``, writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from spark_order_pipeline import local_spark, standalone

from rocketq.client import AdminClient, LitePullConsumer, Message, Producer

TOPIC = "SparkBench"


async def fill(namesrv: str, n: int, size: int, queues: int) -> float:
    async with AdminClient(namesrv_addr=namesrv) as admin:
        await admin.create_topic(TOPIC, cluster="DefaultCluster", read_queue_nums=queues, write_queue_nums=queues)
    body = os.urandom(size)
    started = time.perf_counter()
    async with Producer("spark-bench", namesrv_addr=namesrv, send_msg_timeout=30.0) as producer:
        mqs = await producer.fetch_publish_message_queues(TOPIC)
        per_request = max(1, (256 * 1024) // (size + 64))
        sent = 0
        inflight: list[Any] = []
        i = 0
        while sent < n:
            k = min(per_request, n - sent)
            msgs = [Message(TOPIC, body, keys=f"k{sent + j}") for j in range(k)]
            inflight.append(producer.send_batch(msgs, queue=mqs[i % len(mqs)]))
            sent += k
            i += 1
            if len(inflight) >= 16:
                await asyncio.gather(*inflight)
                inflight = []
        await asyncio.gather(*inflight)
    return time.perf_counter() - started


async def python_consumer(namesrv: str, n: int) -> tuple[float, int]:
    consumer = LitePullConsumer("spark-bench-python", namesrv_addr=namesrv, auto_commit=False, pull_batch_size=32,
                                poll_timeout=1.0)
    await consumer.start()
    try:
        mqs = await consumer.fetch_message_queues(TOPIC)
        consumer.assign(mqs)
        for mq in mqs:
            await consumer.seek_to_begin(mq)
        started = time.perf_counter()
        got = 0
        body_bytes = 0
        empty_polls = 0
        while got < n and empty_polls < 30:
            batch = await consumer.poll()
            if not batch:
                empty_polls += 1
                continue
            got += len(batch)
            body_bytes += sum(len(m.body) for m in batch)
        elapsed = time.perf_counter() - started
    finally:
        await consumer.shutdown()
    if got != n:
        raise RuntimeError(f"python consumer read {got} of {n} messages")
    return elapsed, body_bytes


def spark_batch(spark: Any, namesrv: str) -> tuple[float, int, int]:
    from pyspark.sql import functions as F

    df = spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", TOPIC).load()
    started = time.perf_counter()
    row = df.agg(F.count("*").alias("n"), F.sum(F.length("body")).alias("bytes")).collect()[0]
    return time.perf_counter() - started, row.n, row.bytes


def spark_stream(spark: Any, namesrv: str, checkpoint: Path) -> tuple[float, int]:
    df = (spark.readStream.format("rocketmq").option("nameServer", namesrv).option("topic", TOPIC)
          .option("startingOffsets", "earliest").load())
    started = time.perf_counter()
    query = (df.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(3600)
    finally:
        query.stop()
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    return time.perf_counter() - started, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=1024, help="body bytes (default 1024)")
    ap.add_argument("--queues", type=int, default=8)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    n = args.messages
    work = Path(tempfile.mkdtemp(prefix="rocketq-spark-bench-"))
    figures: dict[str, Any] = {"messages": n, "size": args.size, "queues": args.queues,
                               "python": platform.python_version(), "cpus": os.cpu_count()}
    try:
        with standalone(work / "rocketq") as namesrv:
            t_fill = asyncio.run(fill(namesrv, n, args.size, args.queues))
            print(f"filled {n} x {args.size} B into {args.queues} queues in {t_fill:.1f} s ({n / t_fill:,.0f} msg/s)")
            t_py, py_bytes = asyncio.run(python_consumer(namesrv, n))
            assert py_bytes == n * args.size
            figures["python_consumer"] = {"seconds": t_py, "msgs_per_s": n / t_py}
            print(f"python consumer (LitePullConsumer)   {t_py:7.1f} s  {n / t_py:12,.0f} msg/s")
            started = time.perf_counter()
            spark = local_spark()
            figures["spark_session_start_s"] = time.perf_counter() - started
            try:
                runs = []
                for _ in range(3):
                    t, rows, total = spark_batch(spark, namesrv)
                    assert (rows, total) == (n, n * args.size), (rows, total)
                    runs.append(t)
                    print(f"spark batch read, local[2]           {t:7.1f} s  {n / t:12,.0f} msg/s")
                figures["spark_batch_first"] = {"seconds": runs[0], "msgs_per_s": n / runs[0]}
                best = min(runs[1:])
                figures["spark_batch_warm"] = {"seconds": best, "msgs_per_s": n / best}
                t, rows = spark_stream(spark, namesrv, work / "ckpt")
                assert rows == n, rows
                figures["spark_stream_available_now"] = {"seconds": t, "msgs_per_s": n / t}
                print(f"spark stream (availableNow -> noop)  {t:7.1f} s  {n / t:12,.0f} msg/s")
            finally:
                spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
