"""Offline analytics over a broker's commit log with Spark (format ``rocketmq-store``; no broker running).

    python examples/spark_store_analytics.py --store /backups/broker-a/store   # a copy of a store directory
    python examples/spark_store_analytics.py --demo                            # writes a small store first

Three reports: traffic per topic per hour (messages, bytes), the distribution of body sizes, and the most
frequent message keys. Each partition of the job is one commit-log file (or a slice of one), decoded with
rocketq's record codec straight from the files.

Requires the ``[spark]`` extra (``pip install -e '.[spark]'``) and Java 17+.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

SIZE_BUCKETS = [(0, "< 128 B"), (128, "128 B - 1 KiB"), (1024, "1 - 4 KiB"), (4096, "4 - 16 KiB"), (16384, ">= 16 KiB")]


def analyze(spark: Any, store: str | Path, *, top: int = 10) -> dict[str, list[dict[str, Any]]]:
    """Run the three reports; returns them as lists of dicts (also printed by ``main``)."""
    from pyspark.sql import functions as F

    msgs = spark.read.format("rocketmq-store").load(str(store)).withColumn("size", F.length("body"))
    msgs.cache()
    try:
        per_hour = (
            msgs.groupBy("topic", F.date_trunc("hour", "storeTimestamp").alias("hour"))
            .agg(F.count("*").alias("messages"), F.sum("size").alias("bytes"))
            .orderBy("hour", "topic")
        )
        bucket = F.lit(SIZE_BUCKETS[0][1])
        for lower, label in SIZE_BUCKETS[1:]:
            bucket = F.when(F.col("size") >= lower, F.lit(label)).otherwise(bucket)
        sizes = (
            msgs.groupBy(bucket.alias("bucket"))
            .agg(F.count("*").alias("messages"), F.min("size").alias("min"), F.max("size").alias("max"))
        )
        order = {label: i for i, (_, label) in enumerate(SIZE_BUCKETS)}
        keys = (
            msgs.where(F.col("keys").isNotNull())
            .select(F.explode(F.split("keys", " ")).alias("key"))
            .where(F.col("key") != "")
            .groupBy("key").count()
            .orderBy(F.desc("count"), "key")
            .limit(top)
        )
        return {
            "traffic_per_topic_per_hour": [r.asDict() for r in per_hour.collect()],
            "size_distribution": sorted((r.asDict() for r in sizes.collect()), key=lambda r: order[r["bucket"]]),
            "top_keys": [r.asDict() for r in keys.collect()],
        }
    finally:
        msgs.unpersist()


def write_demo_store(directory: Path) -> Path:
    """Start an in-process name server + broker in ``directory``, send some traffic, stop; returns the store."""
    from rocketq.client import Message, Producer
    from rocketq.testing import EmbeddedCluster

    rnd = random.Random(7)

    async def main() -> Path:
        async with EmbeddedCluster(directory) as cluster:
            async with Producer("analytics-demo", namesrv_addr=cluster.namesrv_addr) as producer:
                for topic, n, customers in (("Orders", 600, 40), ("Payments", 300, 40), ("Audit", 100, 5)):
                    batch = []
                    for i in range(n):
                        size = int(rnd.lognormvariate(6, 1.2))
                        batch.append(Message(topic, bytes(rnd.getrandbits(8) for _ in range(size)) or b".",
                                             keys=[f"customer-{rnd.randrange(customers)}", f"{topic}-{i}"]))
                    for m in batch:
                        await producer.send(m)
            return Path(cluster.broker.config.storePathRootDir)

    return asyncio.run(main())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--store", help="a broker store directory (holding commitlog/), or a copy of one")
    src.add_argument("--demo", action="store_true", help="write a small demo store first")
    args = ap.parse_args()
    tmp = None
    if args.demo:
        tmp = Path(tempfile.mkdtemp(prefix="rocketq-analytics-"))
        store: str | Path = write_demo_store(tmp)
    else:
        store = args.store
    sys.path.insert(0, str(Path(__file__).parent))
    from spark_order_pipeline import local_spark

    spark = local_spark()
    try:
        report = analyze(spark, store)
    finally:
        spark.stop()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print("traffic per topic per hour")
    for r in report["traffic_per_topic_per_hour"]:
        print(f"  {r['hour']:%Y-%m-%d %H:00}  {r['topic']:<24} {r['messages']:>9} msgs {r['bytes']:>12} bytes")
    print("body sizes")
    for r in report["size_distribution"]:
        print(f"  {r['bucket']:<14} {r['messages']:>9} msgs  (min {r['min']}, max {r['max']})")
    print("top keys")
    for r in report["top_keys"]:
        print(f"  {r['key']:<24} {r['count']:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
