"""The console's Consumers, Messages, Message trace, DLQ, ACL and Replication pages over HTTP (aiohttp's test
client) against a real embedded cluster: each page shows what the admin API says, and its forms act.

One cluster for the module: a traced producer, a consumer that takes everything, and a consumer that refuses
everything (so its messages end in the group's DLQ)."""

from __future__ import annotations

import asyncio
import csv
import html
import io
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

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
    refused: list[MessageExt] = field(default_factory=list)
    started_ms: int = 0
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
        env = Env(cluster, admin, http, config, started_ms=int(time.time() * 1000) - 1000)
        await admin.create_topic(TOPIC, read_queue_nums=2, write_queue_nums=2)
        good = PushConsumer(GOOD, config=config, rebalance_interval=0.5, enable_msg_trace=True,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
        good.reset_offset_settle_time = 0.5  # Java waits 10 s for in-flight pulls before a reset's rebalance
        good.subscribe(TOPIC, "*")
        good.register_message_listener(lambda msgs, ctx: env.consumed.extend(msgs))
        bad = PushConsumer(BAD, config=config, rebalance_interval=0.5, max_reconsume_times=1,
                           consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
        bad.subscribe(TOPIC, "*")

        def refuse(msgs: list[MessageExt], ctx: object) -> ConsumeConcurrentlyStatus:
            env.refused.extend(msgs)
            return ConsumeConcurrentlyStatus.RECONSUME_LATER

        bad.register_message_listener(refuse)
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

    async def committed() -> bool:  # offsets reach the broker a moment after the messages are consumed
        mine = [p for p in await env.admin.consume_progress(GOOD) if p.message_queue.topic == TOPIC]
        return sum(p.consumer_offset for p in mine) == len(env.sent) and all(p.lag == 0 for p in mine)

    await until(committed, "the good group's offsets committed")
    text = await page(env, f"/consumers/{GOOD}")
    progress = await env.admin.consume_progress(GOOD)
    shown = cells(text, "progress-table")
    assert [(r[0], r[1], r[2], r[3]) for r in shown] == [
        (p.message_queue.topic, p.message_queue.broker_name, str(p.message_queue.queue_id), str(p.broker_offset))
        for p in progress]  # fmt: skip
    conns = await env.admin.consumer_connections(GOOD)
    assert [r[0] for r in cells(text, "connection-table")] == [c.client_id for c in conns.connections]
    assert [r[0] for r in cells(text, "subscription-table")] == sorted(conns.subscriptions)
    [cfg] = [i.config for i in await env.admin.subscription_groups() if i.group_name == GOOD]
    shown_cfg = dict((r[0], r[1]) for r in cells(text, "config-table-1"))
    assert shown_cfg["groupName"] == GOOD and shown_cfg["retryMaxTimes"] == str(cfg["retryMaxTimes"])


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
                assert resp.status == 303 and resp.headers["Location"].startswith("/acl?flash=")
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


def window(env: Env) -> dict[str, str]:
    return {"begin": str(env.started_ms), "end": str(int(time.time() * 1000) + 60_000)}


async def test_messages_by_topic_key_and_id(env: Env) -> None:
    ids = sorted(s.msg_id for s in env.sent)
    text = await page(env, "/messages", mode="topic", topic=TOPIC, **window(env))
    shown = [r[0] for r in cells(text, "message-table")]
    listed = await env.admin.browse_messages(TOPIC, begin_ms=env.started_ms, max_messages=64)
    assert sorted(shown) == sorted(m.msg_id for m in listed) == ids
    # at most 2: the earliest two over both queues (not the first queue's two)
    text = await page(env, "/messages", mode="topic", topic=TOPIC, max="2", **window(env))
    earliest = sorted(listed, key=lambda m: (m.store_timestamp, m.queue_id))[:2]
    assert [r[0] for r in cells(text, "message-table")] == [m.msg_id for m in earliest]
    text = await page(env, "/messages", mode="key", topic=TOPIC, key="shared")
    assert sorted(r[0] for r in cells(text, "message-table")) == ids
    text = await page(env, "/messages", mode="key", topic=TOPIC, key="key-3")
    [row] = cells(text, "message-table")
    assert row[0] == env.sent[3].msg_id and row[2] == "key-3 shared"
    for wanted in (env.sent[2].msg_id, env.sent[2].offset_msg_id):
        text = await page(env, "/messages", mode="id", topic=TOPIC, msg_id=wanted)
        assert [r[0] for r in cells(text, "message-table")] == [env.sent[2].msg_id]
    text = await page(env, "/messages", 400, mode="id", topic=TOPIC, msg_id="not-an-id")
    assert 'id="error-message"' in text
    text = await page(env, "/messages", 400, mode="topic", topic=TOPIC, begin="yesterday")
    assert "is not a time" in text


async def test_message_view_tracks_the_groups_and_resends_to_a_consumer(env: Env) -> None:
    sent = env.sent[2]
    text = await page(env, "/messages/view", topic=TOPIC, msg_id=sent.msg_id)
    assert re.search(r'<pre id="message-body">body-2</pre>', text)
    props = dict((r[0], r[1]) for r in cells(text, "property-table"))
    assert props["KEYS"] == "key-2 shared" and props["UNIQ_KEY"] == sent.msg_id
    tracks = {r[0]: r[1] for r in cells(text, "track-table")}
    assert tracks[GOOD] == "consumed", tracks
    before = sum(m.msg_id == sent.msg_id for m in env.consumed)
    [client] = [c.client_id for c in (await env.admin.consumer_connections(GOOD)).connections]
    resp = await env.http.post("/messages/resend", data={"topic": TOPIC, "msg_id": sent.msg_id, "group": GOOD,
                                                         "client_id": client}, allow_redirects=False)  # fmt: skip
    assert resp.status == 303, await resp.text()
    text = await page(env, resp.headers["Location"])
    flash = html.unescape(re.search(r'id="flash">([^<]*)<', text).group(1))  # type: ignore[union-attr]
    assert flash.startswith(f"resent to {client} of {GOOD}: CR_SUCCESS"), flash
    assert sum(m.msg_id == sent.msg_id for m in env.consumed) == before + 1  # the listener got it once more
    resp = await env.http.post("/messages/resend", data={"topic": TOPIC, "msg_id": sent.msg_id,
                                                         "group": "nobody-here"})  # fmt: skip
    assert resp.status == 400 and 'id="error-message"' in await resp.text()


async def test_consumer_running_info_page(env: Env) -> None:
    from rocketq.client.admin._base import mq_table

    [client] = [c.client_id for c in (await env.admin.consumer_connections(GOOD)).connections]
    text = await page(env, f"/consumers/{GOOD}")
    link = f"/consumers/{GOOD}/clients/{quote(client)}"
    assert f'href="{link}"' in text
    info = await env.admin.consumer_running_info(GOOD, client)
    text = await page(env, link)
    shown = [r[0] for r in cells(text, "running-subscription-table")]
    assert shown == [s["topic"] for s in info["subscriptionSet"]] and TOPIC in shown
    queues = sorted(mq_table(info["mqTable"]), key=lambda e: e[0])
    assert [(r[0], r[1], r[2]) for r in cells(text, "queue-table")] == [
        (mq.topic, mq.broker_name, str(mq.queue_id)) for mq, _ in queues]  # fmt: skip
    assert [r[0] for r in cells(text, "status-table")] == sorted(info.get("statusTable") or {})
    text = await page(env, link, jstack="1")
    assert 'id="jstack"' in text and "Thread: MainThread" in text  # the client answered jstackEnable
    text = await page(env, f"/consumers/{GOOD}/clients/no-such-client", 400)


async def test_create_and_delete_a_group(env: Env) -> None:
    name = "console-created"
    resp = await env.http.post("/consumers", data={"group": name, "retry_max_times": "3"}, allow_redirects=False)
    assert resp.status == 303
    [cfg] = [i.config for i in await env.admin.subscription_groups() if i.group_name == name]
    assert cfg["retryMaxTimes"] == 3 and cfg["consumeEnable"] is True
    text = await page(env, "/consumers")
    assert name in [r[0] for r in cells(text, "group-table")]
    assert "TOOLS_CONSUMER" not in text and "TOOLS_CONSUMER" in await page(env, "/consumers", system="1")
    resp = await env.http.post(f"/consumers/{name}/delete", data={"remove_offset": "on"})
    assert resp.status == 200 and 'id="flash"' in await resp.text()
    assert name not in [i.group_name for i in await env.admin.subscription_groups()]
    resp = await env.http.post("/consumers", data={"group": " ", "retry_max_times": "x"})
    assert resp.status == 400


async def test_dlq_lists_exports_and_resends(env: Env) -> None:
    dlq = f"%DLQ%{BAD}"
    ids = {s.msg_id for s in env.sent}

    async def all_dead() -> bool:
        try:
            return {m.msg_id for m in await env.admin.browse_messages(dlq, max_messages=64)} >= ids
        except Exception:  # the DLQ topic's route comes with its first message
            return False

    await until(all_dead, "every message of the refusing group in its DLQ")
    text = await page(env, "/dlq", group=BAD, **window(env))
    rows = cells(text, "dlq-table")
    assert {r[0] for r in rows} == ids and {r[1] for r in rows} == {TOPIC}
    resp = await env.http.get("/dlq/export", params={"group": BAD, **window(env)})
    assert resp.status == 200 and resp.headers["Content-Disposition"] == f'attachment; filename="dlq-{BAD}.csv"'
    exported = list(csv.DictReader(io.StringIO(await resp.text())))
    assert {r["msgId"] for r in exported} == ids and {r["originalTopic"] for r in exported} == {TOPIC}
    assert {r["body"] for r in exported} == {f"body-{i}" for i in range(6)}

    target = env.sent[4].msg_id
    seen = len(env.refused)
    resp = await env.http.post("/dlq/resend", data={"group": BAD, "msg_id": target}, allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"].startswith("/dlq?")
    await until(lambda: any(m.msg_id == target and m.reconsume_times == 0 for m in env.refused[seen:]),
                "the resent dead letter delivered to its group again")  # fmt: skip
    text = await page(env, "/dlq", group=GOOD)
    assert 'id="dlq-none"' in text


@pytest.mark.parametrize(("method", "path", "data"), [
    ("GET", "/messages?mode=topic&topic=NoSuchTopic", None),
    ("GET", "/messages?mode=nope&topic=x", None),
    ("GET", f"/messages?mode=topic&topic={TOPIC}&max=lots", None),
    ("GET", f"/messages?mode=topic&topic={TOPIC}&begin=2030-01-01 00:00:00&end=2020-01-01 00:00:00", None),
    ("GET", "/messages?mode=key&topic=NoSuchTopic&key=k", None),
    ("GET", f"/messages/view?topic={TOPIC}&msg_id=7F0000010000B24B00000000DEADBEEF", None),
    ("GET", "/messages/view?topic=&msg_id=", None),
    ("GET", "/consumers/no-such-group/clients/no-such-client", None),
    ("GET", "/dlq/export?group=", None),
    ("GET", "/dlq?group=x&max=0", None),
    ("GET", "/trace?msg_id=abc&trace_topic=NoSuchTraceTopic", None),
    ("GET", "/replication?controller=127.0.0.1:1", None),
    ("POST", "/messages/resend", {"topic": TOPIC}),
    ("POST", "/dlq/resend", {"group": "no-such-group", "msg_id": "C0A8000100002A9F0000000000000000"}),
    ("POST", f"/consumers/{GOOD}/reset", {"topic": "NoSuchTopic", "time": "0"}),
    ("POST", "/acl/white", {"addrs": "10.0.0.1"}),
    ("POST", "/acl/account/delete", {"access_key": ""}),
])  # fmt: skip
async def test_a_bad_request_is_an_error_page_never_a_crash(env: Env, method: str, path: str,
                                                            data: dict[str, str] | None) -> None:  # fmt: skip
    resp = await env.http.request(method, path, data=data, allow_redirects=False)
    text = await resp.text()
    assert resp.status == 400, (resp.status, text[-600:])
    assert 'id="error-message"' in text and "Traceback" not in text


async def test_reset_from_the_consumers_page_redelivers(env: Env) -> None:
    """Near the end: it makes the consuming group read everything again."""
    ids = {s.msg_id for s in env.sent}
    before = len(env.consumed)
    resp = await env.http.post(f"/consumers/{GOOD}/reset", data={"topic": TOPIC, "time": str(env.started_ms)},
                               allow_redirects=False)  # fmt: skip
    assert resp.status == 303
    text = await page(env, resp.headers["Location"])
    assert "→0" in html.unescape(re.search(r'id="flash">([^<]*)<', text).group(1))  # type: ignore[union-attr]
    await until(lambda: {m.msg_id for m in env.consumed[before:]} >= ids, "every message consumed again")
    # an offline group put at the start has a backlog; -1 skips it: every queue's offset goes to its end
    behind = "console-behind"
    resp = await env.http.post(f"/consumers/{behind}/reset", data={"topic": TOPIC, "time": str(env.started_ms)})
    assert resp.status == 200
    progress = await env.admin.consume_progress(behind, TOPIC)
    assert sum(p.lag for p in progress) == len(env.sent)
    resp = await env.http.post(f"/consumers/{behind}/reset", data={"topic": TOPIC, "time": "-1"})
    assert resp.status == 200 and 'id="flash"' in await resp.text()
    progress = await env.admin.consume_progress(behind, TOPIC)
    assert len(progress) == 2 and all(p.consumer_offset == p.broker_offset > 0 for p in progress)
    resp = await env.http.post(f"/consumers/{GOOD}/reset", data={"topic": TOPIC, "time": "never"})
    assert resp.status == 400


async def test_replication_page_shows_a_slave_catching_up(env: Env) -> None:
    """After the others (it adds a broker to the cluster): a slave's role, offset, lag and HA connection."""
    from rocketq.client.replication import replication_rows

    slave = await env.cluster.start_slave(0, 1)

    async def caught_up() -> bool:
        rows = await replication_rows(env.admin, await env.admin.brokers())
        return len(rows) == 2 and all("error" not in r for r in rows) and rows[1].get("lag") == 0 \
            and rows[1]["maxOffset"] == rows[0]["maxOffset"] > 0  # fmt: skip

    await until(caught_up, "the slave registered and caught up")
    text = await page(env, "/replication")
    rows = cells(text, "replication-table")
    assert [(r[2], r[3], r[4]) for r in rows] == [("0", env.cluster.broker_addr, "ASYNC_MASTER"),
                                                  ("1", slave.config.broker_addr, "SLAVE")]  # fmt: skip
    assert rows[1][5] == rows[0][5] and rows[1][6] == "0"
    assert rows[0][7] == "1 slave(s), 1 in sync" and rows[1][7].startswith("following ")
