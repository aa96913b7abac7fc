"""Two-broker failover, the admin client, the CLI, the blocking facade and the docs' examples."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from rocketq.cli.main import main as cli_main
from rocketq.client import (
    AdminClient,
    ConsumeFromWhere,
    LitePullConsumer,
    Message,
    NoRouteError,
    Producer,
    SendStatus,
)
from rocketq.client import sync as blocking

DOCS = Path(__file__).resolve().parents[3] / "docs" / "client.md"


async def wait_for_route(admin: AdminClient, topic: str, brokers: int = 1) -> None:
    """Until the name server has the topic's route (brokers register new topics asynchronously)."""
    async with asyncio.timeout(30):
        while True:
            try:
                if len((await admin.topic_route(topic)).queue_datas) >= brokers:
                    return
            except NoRouteError:
                pass
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("cluster", [{"brokers": 2}], indirect=True)
@pytest.mark.parametrize("fault_avoidance", [False, True])
async def test_send_is_retried_on_the_second_broker(cluster: Any, fast_config: Any, fault_avoidance: bool) -> None:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        brokers = await admin.brokers()
        assert {b.broker_name for b in brokers} == {"broker-a", "broker-b"}
        await admin.create_topic("TwoBrokers", cluster=brokers[0].cluster, read_queue_nums=2, write_queue_nums=2)
        await wait_for_route(admin, "TwoBrokers", brokers=2)
    # No route refresh during the test: the producer keeps believing broker-a is there.
    cfg = fast_config(poll_name_server_interval=3600, heartbeat_broker_interval=3600)
    async with Producer("pg", config=cfg, send_latency_fault_enable=fault_avoidance) as producer:
        queues = await producer.fetch_publish_message_queues("TwoBrokers")
        assert len(queues) == 4
        await cluster.brokers[0].shutdown()
        results = [await producer.send(Message("TwoBrokers", f"{i}".encode())) for i in range(8)]
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert {r.message_queue.broker_name for r in results} == {"broker-b"}


async def test_admin_client(cluster: Any, fast_config: Any) -> None:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        brokers = await admin.brokers(runtime=True)
        assert brokers[0].broker_name == "broker-a" and brokers[0].runtime
        await admin.create_topic("AdminT", cluster=brokers[0].cluster, read_queue_nums=3, write_queue_nums=3)
        async with asyncio.timeout(30):
            while "AdminT" not in await admin.topic_list():
                await asyncio.sleep(0.1)
        route = await admin.topic_route("AdminT")
        assert route.queue_datas[0].write_queue_nums == 3
        async with Producer("pg", config=fast_config()) as producer:
            sent = [await producer.send(Message("AdminT", f"{i}".encode(), keys=f"order-{i}")) for i in range(6)]
        status = await admin.topic_status("AdminT")
        assert sum(s.max_offset for s in status) == 6 and len(status) == 3
        by_offset_id = await admin.query_message_by_id(sent[0].offset_msg_id)
        assert by_offset_id[0].body == b"0" and by_offset_id[0].msg_id == sent[0].msg_id
        by_key = await admin.query_message_by_key("AdminT", "order-3")
        assert [m.body for m in by_key] == [b"3"]
        by_uniq = await admin.query_message_by_id(sent[4].msg_id, "AdminT")
        assert [m.body for m in by_uniq] == [b"4"]
        # A group that consumed everything, then reset to the beginning (the group is offline: fallback path).
        consumer = LitePullConsumer("cg-admin", config=fast_config(), auto_commit=False,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
        consumer.subscribe("AdminT", "*")
        async with consumer:
            got = 0
            async with asyncio.timeout(30):
                while got < 6:
                    got += len(await consumer.poll(0.5))
            await consumer.commit()
            conns = await admin.consumer_connections("cg-admin")
            assert [c.client_id for c in conns.connections] == [consumer.instance.client_id]
            assert conns.subscriptions == {"AdminT": "*"}
        progress = await admin.consume_progress("cg-admin", "AdminT")
        assert sum(p.consumer_offset for p in progress) == 6 and sum(p.lag for p in progress) == 0
        reset = await admin.reset_offset_by_timestamp("cg-admin", "AdminT", 0)
        assert sum(reset.values()) == 0
        progress = await admin.consume_progress("cg-admin", "AdminT")
        assert sum(p.lag for p in progress) == 6
        await admin.delete_topic("AdminT", cluster=brokers[0].cluster)
        assert "AdminT" not in await admin.topic_list()


async def _cli(*argv: str) -> tuple[int, str]:
    import contextlib
    import io

    out = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out):
            return cli_main(list(argv))

    code = await asyncio.to_thread(run)
    return code, out.getvalue()


async def test_cli_commands(cluster: Any) -> None:
    ns = cluster.namesrv_addr
    code, out = await _cli("topic", "create", "-n", ns, "-t", "CliT", "-r", "2", "-w", "2")
    assert code == 0 and "CliT" in out
    code, out = await _cli("send", "-n", ns, "-t", "CliT", "-b", "hi", "--keys", "k1", "--count", "3", "--json")
    assert code == 0
    sends = json.loads(out)
    assert len(sends) == 3 and {s["sendStatus"] for s in sends} == {"SEND_OK"}
    code, out = await _cli("topic", "status", "-n", ns, "-t", "CliT", "--json")
    assert code == 0 and sum(q["maxOffset"] for q in json.loads(out)) == 3
    code, out = await _cli("topic", "route", "-n", ns, "-t", "CliT")
    assert code == 0 and "broker-a" in out
    code, out = await _cli("consume", "-n", ns, "-t", "CliT", "-g", "cli-g", "--count", "3", "--commit", "--json")
    assert code == 0 and len(json.loads(out)) == 3
    code, out = await _cli("group", "progress", "-n", ns, "-g", "cli-g", "--json")
    assert code == 0 and sum(q["lag"] for q in json.loads(out)) == 0
    code, out = await _cli("message", "by-key", "-n", ns, "-t", "CliT", "-k", "k1", "--json", "--print-body")
    assert code == 0 and {m["body"] for m in json.loads(out)} == {"hi"}
    code, out = await _cli("message", "by-id", "-n", ns, "-i", sends[0]["offsetMsgId"])
    assert code == 0 and sends[0]["msgId"] in out
    code, out = await _cli("cluster", "list", "-n", ns)
    assert code == 0 and "broker-a" in out
    code, out = await _cli("broker-status", "-n", ns, "-b", cluster.broker_addr, "--json")
    assert code == 0 and [b["brokerAddr"] for b in json.loads(out)] == [cluster.broker_addr]
    code, out = await _cli("group", "reset-offset", "-n", ns, "-g", "cli-g", "-t", "CliT", "--timestamp", "0")
    assert code == 0
    code, out = await _cli("topic", "list", "-n", ns)
    assert code == 0 and "CliT" in out
    code, _ = await _cli("topic", "route", "-n", ns, "-t", "NoSuchTopic")
    assert code == 1


async def test_blocking_facade(cluster: Any) -> None:
    def work() -> list[bytes]:
        with blocking.Producer("sync-pg", namesrv_addr=cluster.namesrv_addr) as p:
            r = p.send(Message("SyncT", b"one"))
            assert p.send_async(Message("SyncT", b"two"), queue=r.message_queue).result(10).status is SendStatus.SEND_OK
        consumer = blocking.LitePullConsumer("sync-cg", namesrv_addr=cluster.namesrv_addr,
                                             consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
        consumer.assign([r.message_queue])
        bodies: list[bytes] = []
        with consumer:
            for _ in range(100):
                bodies += [m.body for m in consumer.poll(0.5)]
                if len(bodies) >= 2:
                    break
        return bodies

    assert await asyncio.to_thread(work) == [b"one", b"two"]


def _examples() -> list[tuple[str, str]]:
    text = DOCS.read_text()
    return re.findall(r"```python\n# example: ([\w-]+)\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize(("name", "code"), _examples(), ids=[n for n, _ in _examples()])
async def test_docs_examples_run(cluster: Any, name: str, code: str) -> None:
    code = code.replace("127.0.0.1:9876", cluster.namesrv_addr)
    await asyncio.wait_for(asyncio.to_thread(exec, compile(code, f"docs/client.md:{name}", "exec"), {}), 120)
