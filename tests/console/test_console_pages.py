"""The console's Consumers, Messages, Message trace, DLQ, ACL and Replication pages over HTTP (aiohttp's test
client) against a real embedded cluster: each page shows what the admin API says, and its forms act.

One cluster for the module: a traced producer, a consumer that takes everything, and a consumer that refuses
everything (so its messages end in the group's DLQ)."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from rocketq.client import (
    AdminClient,
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    SendResult,
)
from rocketq.console.app import make_app
from rocketq.testing import EmbeddedCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOPIC = "ConsoleT"
GOOD, BAD = "console-good", "console-bad"
WAIT = 30.0


@dataclass
class Env:
    cluster: EmbeddedCluster
    admin: AdminClient
    http: TestClient[Any, Any]
    config: ClientConfig
    sent: list[SendResult] = field(default_factory=list)
    consumed: list[MessageExt] = field(default_factory=list)
    good: PushConsumer | None = None


async def until(check: Any, what: str) -> None:
    """Poll ``check()`` (sync or async) until true (bounded: WAIT seconds)."""
    async with asyncio.timeout(WAIT):
        while True:
            got = check()
            if asyncio.iscoroutine(got):
                got = await got
            if got:
                return
            await asyncio.sleep(0.1)
    raise AssertionError(what)  # pragma: no cover - the timeout raises first


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    base: Path = tmp_path_factory.mktemp("console")
    fast = {"messageDelayLevel": " ".join(["1s"] * 18), "scheduleIntervalMills": 50, "traceTopicEnable": True}
    async with EmbeddedCluster(base / "cluster", **fast) as cluster:
        config = ClientConfig(namesrv_addr=cluster.namesrv_addr, poll_name_server_interval=0.5,
                              heartbeat_broker_interval=1.0, persist_consumer_offset_interval=0.5)  # fmt: skip
        admin = AdminClient(config=config)
        http = TestClient(TestServer(make_app(admin), host="127.0.0.1"))
        await http.start_server()
        env = Env(cluster, admin, http, config)
        await admin.create_topic(TOPIC, read_queue_nums=2, write_queue_nums=2)
        good = PushConsumer(GOOD, config=config, rebalance_interval=0.5, enable_msg_trace=True,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
        good.subscribe(TOPIC, "*")
        good.register_message_listener(lambda msgs, ctx: env.consumed.extend(msgs))
        bad = PushConsumer(BAD, config=config, rebalance_interval=0.5, max_reconsume_times=1,
                           consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
        bad.subscribe(TOPIC, "*")
        bad.register_message_listener(lambda msgs, ctx: ConsumeConcurrentlyStatus.RECONSUME_LATER)
        try:
            async with Producer("console-pg", config=config, enable_msg_trace=True) as producer:
                for i in range(6):
                    env.sent.append(await producer.send(Message(TOPIC, f"body-{i}".encode(), tags="T",
                                                                keys=[f"key-{i}", "shared"])))  # fmt: skip
            await good.start()
            await bad.start()
            env.good = good
            await until(lambda: {m.msg_id for m in env.consumed} >= {s.msg_id for s in env.sent}, "consumed")
            yield env
        finally:
            await bad.shutdown()
            await good.shutdown()
            await http.close()
            await admin.close()


async def page(env: Env, path: str, status: int = 200, **params: str) -> str:
    resp = await env.http.get(path, params=params)
    text = await resp.text()
    assert resp.status == status, (path, resp.status, text[:2000])
    return text


def cells(text: str, table_id: str) -> list[list[str]]:
    """The rows of the table ``table_id`` as lists of cell texts (tags stripped, entities decoded)."""
    m = re.search(rf'<table[^>]* id="{re.escape(table_id)}".*?<tbody>(.*?)</tbody>', text, re.S)
    assert m, f"no table {table_id}"
    rows = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", m.group(1), re.S):
        rows.append([html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                                          row, re.S)])
    return rows


async def test_consumers_list_and_group_match_the_admin_api(env: Env) -> None:
    async def both() -> bool:
        return {GOOD, BAD} <= set(await env.admin.consumer_groups())

    await until(both, "both groups")
    text = await page(env, "/consumers")
    rows = {r[0]: r for r in cells(text, "group-table")}
    for g in await env.admin.consumer_groups():
        s = await env.admin.group_summary(g)
        assert rows[g][1] == str(s.count) and rows[g][3] == s.message_model
    assert GOOD in rows and BAD in rows
    text = await page(env, f"/consumers/{GOOD}")
    progress = await env.admin.consume_progress(GOOD)
    shown = cells(text, "progress-table")
    assert [(r[0], r[1], r[2], r[3]) for r in shown] == [
        (p.message_queue.topic, p.message_queue.broker_name, str(p.message_queue.queue_id), str(p.broker_offset))
        for p in progress]  # fmt: skip
    conns = await env.admin.consumer_connections(GOOD)
    assert [r[0] for r in cells(text, "connection-table")] == [c.client_id for c in conns.connections]
    assert [r[0] for r in cells(text, "subscription-table")] == sorted(conns.subscriptions)


async def test_trace_page_shows_the_records_of_the_cli_lookup(env: Env) -> None:
    from rocketq.client.trace import query_trace

    sent = env.sent[0]

    async def complete() -> bool:
        try:
            kinds = {r["type"] for r in await query_trace(env.admin, sent.msg_id)}
        except Exception:  # the trace topic's route may not be there yet
            return False
        return kinds >= {"Pub", "SubBefore", "SubAfter"}

    await until(complete, "trace records")
    records = await query_trace(env.admin, sent.msg_id)
    text = await page(env, "/trace", msg_id=sent.msg_id)
    [pub] = cells(text, "pub-table")
    assert pub[1:4] == ["console-pg", TOPIC, "T"] and pub[4] == "key-0 shared"
    assert pub[10] == sent.offset_msg_id
    consumed = cells(text, "consume-table")
    assert [(r[0], r[4]) for r in consumed] == [(GOOD, "true")]
    assert [r[0] for r in cells(text, "record-table")] == [r["type"] for r in records]
    text = await page(env, "/trace", msg_id="0A" * 16)
    assert 'id="trace-empty"' in text


async def test_replication_page_shows_the_ha_status_rows(env: Env) -> None:
    from rocketq.client.replication import replication_rows

    text = await page(env, "/replication")
    rows = await replication_rows(env.admin, await env.admin.brokers())
    shown = cells(text, "replication-table")
    assert [(r[1], r[2], r[3], r[4]) for r in shown] == [
        (r["brokerName"], str(r["brokerId"]), r["brokerAddr"], r["brokerRole"]) for r in rows]  # fmt: skip
    assert shown[0][4] == "ASYNC_MASTER" and int(shown[0][5]) > 0


async def test_acl_page_says_acl_is_off(env: Env) -> None:
    text = await page(env, "/acl")
    assert 'id="acl-off"' in text and "account-form" not in text
    resp = await env.http.post("/acl/account", data={"access_key": "x", "secret_key": "12345678"},
                               allow_redirects=False)  # fmt: skip
    assert resp.status == 400 and "not enabled" in await resp.text()


async def test_acl_page_lists_and_edits_accounts(tmp_path: Path) -> None:
    import yaml

    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(yaml.safe_dump({"globalWhiteRemoteAddresses": ["10.9.*.*"], "accounts": [
        {"accessKey": "console-admin", "secretKey": "admin-secret-1", "admin": True},
        {"accessKey": "reader01", "secretKey": "reader-secret", "defaultTopicPerm": "SUB", "topicPerms": ["A=DENY"]},
    ]}))  # fmt: skip
    async with EmbeddedCluster(tmp_path / "c", aclEnable=True, aclFilePath=str(acl_file)) as cluster:
        config = ClientConfig(namesrv_addr=cluster.namesrv_addr, access_key="console-admin",
                              secret_key="admin-secret-1")  # fmt: skip
        async with AdminClient(config=config) as admin:
            http = TestClient(TestServer(make_app(admin), host="127.0.0.1"))
            await http.start_server()
            try:
                resp = await http.get("/acl")
                text = await resp.text()
                assert resp.status == 200 and "admin-secret-1" not in text and "reader-secret" not in text
                [acl] = [await admin.acl_config(b.addr) for b in await admin.brokers()]
                rows = cells(text, "account-table-1")
                assert sorted(r[0] for r in rows) == sorted(a.access_key for a in acl.accounts)
                assert "10.9.*.*" in text
                form = {"access_key": "writer01", "secret_key": "writer-secret", "default_topic_perm": "PUB",
                        "topic_perms": "B=PUB, C=DENY"}  # fmt: skip
                resp = await http.post("/acl/account", data=form, allow_redirects=False)
                assert resp.status == 303 and resp.headers["Location"].startswith("/acl?done=")
                [acl] = [await admin.acl_config(b.addr) for b in await admin.brokers()]
                writer = next(a for a in acl.accounts if a.access_key == "writer01")
                assert (writer.default_topic_perm, writer.topic_perms) == ("PUB", ["B=PUB", "C=DENY"])
                resp = await http.post("/acl/white", data={"addrs": "10.1.*.*,10.2.3.4"}, allow_redirects=False)
                assert resp.status == 303
                resp = await http.post("/acl/account/delete", data={"access_key": "reader01"})
                text = await resp.text()
                assert resp.status == 200 and 'id="flash"' in text
                [acl] = [await admin.acl_config(b.addr) for b in await admin.brokers()]
                assert {a.access_key for a in acl.accounts} == {"console-admin", "writer01"}
                assert acl.global_white_addrs == ["10.1.*.*", "10.2.3.4"]
                resp = await http.post("/acl/account", data={"access_key": "badbad01", "default_topic_perm": "ALL"})
                assert resp.status == 400 and "is not one of" in await resp.text()
            finally:
                await http.close()
