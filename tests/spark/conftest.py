"""Spark test fixtures: ONE local SparkSession for the whole run, and rocketq servers Spark workers can reach.

* ``spark``: ``local[2]``, UI off, every socket on loopback, small driver memory, Python workers running this
  interpreter (so they import the installed ``rocketq``). Starting a session costs 6-10 s and the first
  Python-worker job a few more: one session is shared by every Spark test.
* ``servers``: a name server + broker (``EmbeddedCluster``) on their own event loop in a background thread,
  listening on 127.0.0.1 ephemeral ports — Spark's executors are separate processes and reach them over TCP.
  Tests use distinct topic names instead of restarting it.
* ``make_servers``: a dedicated cluster (own store, e.g. small commit-log files for retention tests).

Everything Spark-related is marked ``spark``; the rest of the suite never imports pyspark.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.testing import BackgroundCluster


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: needs pyspark (the [spark] extra) and a local Spark session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the Spark tests and run them last.

    Their session-scoped JVM and servers thread live until the end of the run; running them after every
    other test keeps them out of the way of tests that check for stray store threads.
    """
    here = Path(__file__).parent
    spark_items = [item for item in items if here in Path(str(item.fspath)).parents]
    for item in spark_items:
        item.add_marker(pytest.mark.spark)
    chosen = set(map(id, spark_items))
    items[:] = [item for item in items if id(item) not in chosen] + spark_items


def _java_home() -> str | None:
    """JAVA_HOME as set, else derived from the ``java`` on PATH, else a JDK 17+ under /usr/lib/jvm."""
    current = os.environ.get("JAVA_HOME")
    if current and os.path.exists(os.path.join(current, "bin", "java")):
        return current
    java = shutil.which("java")
    if java:
        home = os.path.dirname(os.path.dirname(os.path.realpath(java)))
        if os.path.exists(os.path.join(home, "bin", "java")):
            return home
    for candidate in sorted(glob.glob("/usr/lib/jvm/*"), reverse=True):
        if os.path.exists(os.path.join(candidate, "bin", "java")):
            return candidate
    return None


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    pytest.importorskip("pyspark", reason="the Spark tests need the [spark] extra (make test installs it)")
    pytest.importorskip("pyarrow")
    java_home = _java_home()
    if java_home is None:
        pytest.skip("no Java runtime found (PySpark needs Java 17+)")
    os.environ["JAVA_HOME"] = java_home
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("rocketq-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        for q in session.streams.active:
            q.stop()
        session.stop()


class Servers(BackgroundCluster):
    """An ``EmbeddedCluster`` running on its own event loop in a daemon thread (``BackgroundCluster``)."""

    def __init__(self, base_dir: Path, **overrides: Any) -> None:
        super().__init__(base_dir, **overrides)
        self.start()
        self.rq = Helpers(self.namesrv_addr)

    @property
    def broker(self) -> Any:
        return self.cluster.broker

    @property
    def store_dir(self) -> Path:
        return Path(self.cluster.broker.config.storePathRootDir)


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    s = Servers(tmp_path_factory.mktemp("rocketq-servers"), enablePropertyFilter="true")
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def make_servers(tmp_path: Path) -> Iterator[Callable[..., Servers]]:
    started: list[Servers] = []

    def make(**overrides: Any) -> Servers:
        s = Servers(tmp_path / f"cluster{len(started)}", **overrides)
        started.append(s)
        return s

    try:
        yield make
    finally:
        for s in started:
            s.stop()


@pytest.fixture(scope="session")
def rq(servers: Servers) -> Any:
    """Client-side helpers bound to the shared servers (see ``Helpers``)."""
    return servers.rq


class Helpers:
    """Create topics, produce and consume with the client SDK from the test thread (each call its own loop)."""

    def __init__(self, namesrv_addr: str) -> None:
        self.namesrv_addr = namesrv_addr

    def create_topic(self, topic: str, queues: int) -> None:
        from rocketq.client import AdminClient

        async def main() -> None:
            async with AdminClient(namesrv_addr=self.namesrv_addr) as admin:
                await admin.create_topic(topic, cluster="DefaultCluster", read_queue_nums=queues,
                                         write_queue_nums=queues)
                for _ in range(200):  # wait until the name server routes the new queue count
                    route = await admin.topic_route(topic)
                    if sum(q.read_queue_nums for q in route.queue_datas) == queues:
                        return
                    await asyncio.sleep(0.05)
                raise AssertionError(f"route of {topic} never showed {queues} queues")

        asyncio.run(main())

    def produce(self, topic: str, messages: list[Any], *, queue_id: int | None = None) -> list[Any]:
        """Send ``Message``s (queue round robin, or one queue); returns the SendResults in order."""
        from rocketq.client import Producer

        async def main() -> list[Any]:
            async with Producer("spark-test-producer", namesrv_addr=self.namesrv_addr) as p:
                queues = await p.fetch_publish_message_queues(topic)
                out = []
                for i, m in enumerate(messages):
                    mq = queues[queue_id if queue_id is not None else i % len(queues)]
                    out.append(p.send_async(m, queue=mq))
                return list(await asyncio.gather(*out))

        return asyncio.run(main())

    def consume_all(self, topic: str) -> list[Any]:
        """``(queue, MessageRecord)`` for every message of every queue of ``topic``, in queue order."""
        from rocketq.protocol.message import iter_records
        from rocketq.spark._wire import Cluster

        async def main() -> list[Any]:
            out = []
            async with Cluster(self.namesrv_addr, 10.0) as c:
                for key in await c.read_queues(topic):
                    addr = await c.broker_addr(key[0], key[1])
                    end = await c.max_offset(key)
                    off = await c.min_offset(key)
                    while off < end:
                        raw = await c.pull_at(addr, key, off, 32, "spark-test-reader", "*", "TAG")
                        recs = list(iter_records(raw.body))
                        assert recs, (key, off, raw.status)
                        out.extend((key, r) for r in recs)
                        off = recs[-1].queue_offset + 1
            return out

        return asyncio.run(main())

    def commit_offset(self, group: str, key: tuple[str, str, int], offset: int) -> None:
        from rocketq.spark._wire import Cluster

        async def main() -> None:
            async with Cluster(self.namesrv_addr, 10.0) as c:
                await c.commit_offset(group, key, offset)

        asyncio.run(main())

    def group_offsets(self, group: str, topic: str) -> dict[tuple[str, int], tuple[int, int]]:
        """``{(broker, queueId): (consumerOffset, brokerOffset)}`` as ``rocketq group progress`` shows it."""
        from rocketq.client import AdminClient

        async def main() -> dict[tuple[str, int], tuple[int, int]]:
            async with AdminClient(namesrv_addr=self.namesrv_addr) as admin:
                progress = await admin.consume_progress(group, topic)
                return {(p.message_queue.broker_name, p.message_queue.queue_id): (p.consumer_offset,
                                                                                 p.broker_offset)
                        for p in progress}

        return asyncio.run(main())
