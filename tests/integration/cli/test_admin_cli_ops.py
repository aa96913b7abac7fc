"""The mqadmin-reach commands (issue 23) through the real ``rocketq`` command against one ``rocketq standalone``:
subscription groups, producers, a consumer's running info and consume-directly, stats, queue inspection,
broker / name-server config, KV, write permission, clean-ups and offset moves. The commands run in this
process (``rocketq.cli.main.main``), one at a time; every test has its own topics and groups."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from clihelpers import WAIT, Run, camel_keys, table

from rocketq.cli.main import main
from rocketq.client import ClientConfig, Message, Producer, PushConsumer
from rocketq.testing.process import StandaloneProcess

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def standalone(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[StandaloneProcess]:
    base = tmp_path_factory.mktemp("cli-ops")
    sa = await StandaloneProcess.start(base / "data", log_path=base / "standalone.log", timeout=WAIT)
    try:
        yield sa
    finally:
        await sa.stop()


_one_at_a_time = asyncio.Lock()  # stdout / stderr are the process's: one command captures them at a time


def _in_process(argv: list[str]) -> Run:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return Run(rc, out.getvalue(), err.getvalue())


@pytest.fixture
def cli(standalone: StandaloneProcess) -> Any:
    """``rocketq ARGV -n NAMESRV`` run in this process (its own event loop, on a worker thread): the same
    parser and commands as the ``rocketq`` executable (test_admin_cli.py runs that one) without an interpreter
    start-up per command."""

    async def run(*argv: str) -> Run:
        async with _one_at_a_time:
            return await asyncio.to_thread(_in_process, [*argv, "-n", standalone.namesrv_addr])

    return run


def _config(standalone: StandaloneProcess) -> ClientConfig:
    return ClientConfig(namesrv_addr=standalone.namesrv_addr, heartbeat_broker_interval=0.5,
                        poll_name_server_interval=0.5, persist_consumer_offset_interval=0.5)  # fmt: skip


async def test_subscription_group_settings_round_trip(cli: Any) -> None:
    updated = await cli("group", "update", "-g", "sg-cli", "--retry-max-times", "3", "--no-broadcast", "--json")
    assert [u["groupName"] for u in updated.json()] == ["sg-cli"]
    config, listed = await asyncio.gather(cli("group", "config", "-g", "sg-cli", "--json"), cli("group", "list"))
    (conf,) = config.json()
    assert (conf["retryMaxTimes"], conf["consumeBroadcastEnable"], conf["consumeEnable"]) == (3, False, True)
    assert conf["consumeFromMinEnable"] is True  # mqadmin updateSubGroup's default
    assert camel_keys(config.json()) == []
    rows = table(listed.out, "broker", "group", "consume", "from min", "broadcast", "retry queues", "retry max",
                 "broker id", "slow broker", "notify")  # fmt: skip
    assert next(r for r in rows if r[1] == "sg-cli")[4:7:2] == ["False", "3"]
    assert (await cli("group", "delete", "-g", "sg-cli")).rc == 0
    (await cli("group", "config", "-g", "sg-cli")).failed(1, "sg-cli")


async def test_live_clients_stats_and_queues(cli: Any, standalone: StandaloneProcess) -> None:
    topic, group = "CliOpsT", "cg-cli-ops"
    assert (await cli("topic", "create", "-t", topic, "-r", "2", "-w", "2")).rc == 0
    got: list[Any] = []
    consumer = PushConsumer(group, config=_config(standalone))
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(lambda msgs, ctx: got.extend(msgs))
    async with Producer("pg-cli-ops", config=_config(standalone)) as producer:
        sent = [await producer.send(Message(topic, f"b{i}".encode())) for i in range(4)]
        await consumer.start()
        try:
            async with asyncio.timeout(WAIT):
                # the consume offsets too: `group topics` reads them, and the consumer commits them on its own
                # schedule after consuming (CI lost that race once on a loaded machine)
                while (len(got) < 4 or (await cli("producer", "connections", "-g", "pg-cli-ops")).rc != 0
                       or (await cli("group", "topics", "-g", group)).rc != 0):  # fmt: skip
                    await asyncio.sleep(0.2)
            cid, producer_id = consumer.client_id, producer.instance.client_id
            first = sent[0]
            mq = first.message_queue
            (producers, plist, status, detail, direct, topics, consumers, clusters, stats, bcs, by_offset, cq,
             alloc) = await asyncio.gather(
                cli("producer", "connections", "-g", "pg-cli-ops", "-t", topic, "--json"),
                cli("producer", "list", "--json"),
                cli("group", "status", "-g", group),
                cli("group", "status", "-g", group, "-i", cid, "--json"),
                cli("message", "consume-directly", "-g", group, "-c", cid, "-i", first.offset_msg_id, "--json"),
                cli("group", "topics", "-g", group, "--json"),
                cli("topic", "consumers", "-t", topic, "--json"),
                cli("topic", "clusters", "-t", topic, "--json"),
                cli("stats", "all", "-t", topic, "--json"),
                cli("stats", "broker-consume", "-b", standalone.broker_addr, "--json"),
                cli("message", "by-offset", "-t", topic, "-b", mq.broker_name, "-q", str(mq.queue_id), "-o",
                    str(first.queue_offset), "--json", "--print-body"),
                cli("topic", "cq", "-t", topic, "-q", str(mq.queue_id), "-i", "0", "--json"),
                cli("topic", "allocate", "-t", topic, "-i", "a,b,c"),
            )  # fmt: skip
        finally:
            await consumer.shutdown()
    assert [c["clientId"] for c in producers.json()] == [producer_id]
    assert {p["producerGroup"] for p in plist.json()} >= {"pg-cli-ops"}
    text, summary = status.out.rsplit("\n\n", 1)
    assert summary.strip() == "subscriptions the same on every client"
    rows = table(text, "client id", "version", "type", "model", "queues held", "subscriptions")
    assert [r[0] for r in rows] == [cid] and rows[0][4] == "3"  # the topic's 2 queues and the retry queue
    assert f"{topic}:*" in rows[0][5]
    assert "properties" in detail.json() and detail.json()["subscriptionSet"][0]["topic"] == topic
    assert direct.json()["consumeResult"] == "CR_SUCCESS"
    assert [t["topic"] for t in topics.json()] == [topic]
    assert [g["group"] for g in consumers.json()] == [group]
    assert [c["clusterName"] for c in clusters.json()] == ["DefaultCluster"]
    (row,) = [r for r in stats.json() if r["consumerGroup"] == group]
    assert (row["inMsg24Hour"], row["accumulation"]) == (4, 0) and camel_keys(stats.json()) == []
    mine = [q for q in bcs.json()["queues"] if (q["group"], q["topic"]) == (group, topic)]
    assert len(mine) == 2 and sum(q["consumerOffset"] for q in mine) == 4
    (msg,) = by_offset.json()
    assert (msg["msgId"], msg["body"]) == (first.msg_id, "b0")
    assert cq.json()["minQueueIndex"] == 0 and len(cq.json()["queueData"]) == cq.json()["maxQueueIndex"]
    assert [r[0] for r in table(alloc.out, "client id", "queues")] == ["a", "b", "c"]


async def test_config_kv_permission_cleanups_and_offsets(cli: Any, standalone: StandaloneProcess) -> None:
    b = standalone.broker_addr
    topic = "CliCfgT"
    assert (await cli("topic", "create", "-t", topic, "-r", "1", "-w", "1")).rc == 0
    assert (await cli("send", "-t", topic, "--count", "3")).rc == 0
    consumed = await cli("consume", "-t", topic, "-g", "cg-src", "--count", "2", "--commit", "--idle-timeout", "30")
    assert consumed.rc == 0, consumed.err

    upd, bad, ns_get, kv_put, order = await asyncio.gather(
        cli("broker-config", "update", "-b", b, "maxMessageSize=65536"),
        cli("broker-config", "update", "-b", b, "brokerName=renamed"),
        cli("namesrv-config", "get", "--json"),
        cli("kv", "put", "-s", "ns-cli", "-k", "k1", "-v", "v1"),
        cli("topic", "order-conf", "-t", topic, "--set", "broker-a:1"),
    )
    assert upd.rc == 0, upd.err
    bad.failed(1)
    assert ns_get.json()[0]["namesrvAddr"] == standalone.namesrv_addr and ns_get.json()[0]["config"]
    assert kv_put.rc == 0 and order.rc == 0, (kv_put.err, order.err)

    got, kv_get, kv_list, order_get, wiped, clone, skip, clean1, clean2 = await asyncio.gather(
        cli("broker-config", "get", "-b", b, "-k", "maxMessageSize", "--json"),
        cli("kv", "get", "-s", "ns-cli", "-k", "k1", "--json"),
        cli("kv", "list", "-s", "ns-cli", "--json"),
        cli("topic", "order-conf", "-t", topic, "--json"),
        cli("broker-perm", "wipe", "--broker-name", "broker-a", "--json"),
        cli("group", "clone-offset", "-s", "cg-src", "-d", "cg-dst", "-t", topic),
        cli("group", "skip", "-g", "cg-late", "-t", topic, "--json"),
        cli("clean", "expired-cq", "-b", b),
        cli("clean", "unused-topics"),
    )
    assert got.json() == [{"brokerAddr": b, "config": {"maxMessageSize": "65536"}}]
    assert kv_get.json()["value"] == "v1" and kv_list.json()["table"] == {"k1": "v1"}
    assert order_get.json()["orderConf"] == "broker-a:1"
    assert wiped.json()[0]["topicCount"] >= 1
    assert clone.rc == 0 and clean1.rc == 0 and clean2.rc == 0, (clone.err, clean1.err, clean2.err)
    assert [s["offset"] for s in skip.json()] == [3]

    route, added, dst, kv_del, restore = await asyncio.gather(
        cli("topic", "route", "-t", topic, "--json"),
        cli("broker-perm", "add", "--broker-name", "broker-a", "--json"),
        cli("group", "progress", "-g", "cg-dst", "--json"),
        cli("kv", "delete", "-s", "ns-cli", "-k", "k1"),
        cli("broker-config", "update", "-b", b, "maxMessageSize=4194304"),
    )
    assert [q["perm"] & 2 for q in route.json()["queueDatas"]] == [0]  # write permission wiped
    assert added.json()[0]["topicCount"] == wiped.json()[0]["topicCount"]
    assert [p["consumerOffset"] for p in dst.json()] == [2]  # cloned from cg-src
    assert kv_del.rc == 0 and restore.rc == 0
    (await cli("kv", "get", "-s", "ns-cli", "-k", "k1")).failed(1, "k1")


async def test_exports_and_send_round_trip(cli: Any, tmp_path: Path) -> None:
    assert (await cli("topic", "create", "-t", "CliExportT", "-r", "2", "-w", "3")).rc == 0
    assert (await cli("group", "update", "-g", "cg-export", "--retry-queues", "2")).rc == 0
    meta, meta_file, configs, metrics, rt = (
        await cli("cluster", "export-metadata", "-c", "DefaultCluster"),
        await cli("cluster", "export-metadata", "-c", "DefaultCluster", "--topics-only", "-f",
                  str(tmp_path / "topic.json")),
        await cli("cluster", "export-configs", "-c", "DefaultCluster"),
        await cli("cluster", "export-metrics", "-c", "DefaultCluster"),
        await cli("cluster", "rt", "--amount", "3", "--json"),
    )  # fmt: skip
    doc = meta.json()
    mine = doc["topicConfigTable"]["CliExportT"]
    assert (mine["readQueueNums"], mine["writeQueueNums"]) == (2, 3)
    assert doc["subscriptionGroupTable"]["cg-export"]["retryQueueNums"] == 2
    assert "TOOLS_CONSUMER" not in doc["subscriptionGroupTable"] and "broker-a" not in doc["topicConfigTable"]
    assert meta_file.rc == 0, meta_file.err
    written = json.loads((tmp_path / "topic.json").read_text())
    assert "CliExportT" in written["topicConfigTable"] and "subscriptionGroupTable" not in written
    conf = configs.json()
    assert conf["brokerConfigs"]["broker-a"]["brokerName"] == "broker-a"
    assert conf["clusterScale"] == {"namesrvSize": 1, "masterBrokerSize": 1, "slaveBrokerSize": 0}
    report = metrics.json()["evaluateReport"]["broker-a"]
    assert report["runtimeQuota"]["topicSize"] >= 1
    assert set(metrics.json()["totalData"]) == {"totalTps", "totalOneDayNum"}
    (row,) = rt.json()
    assert (row["brokerName"], row["topic"], row["sent"], row["failed"]) == ("broker-a", "broker-a", 3, 0)
