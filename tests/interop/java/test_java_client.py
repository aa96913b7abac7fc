"""Apache RocketMQ's Java client 4.9.7 against rocketq: rocketq's driver (tests/interop/java/src) run per scenario.

Each test starts a rocketq name server and broker in its own event loop (the driver JVM is awaited as an
asyncio subprocess, so the broker keeps serving) and checks what the driver reports: every message sent
arrives once with its body, keys, tags and properties; per-key order; offsets; statuses.

``ROCKETQ_JAVA_REFERENCE=1`` runs the same tests against Apache's Java 4.9.7 name server and broker instead
(one per test, same settings; a few minutes): the assertions are the reference's behaviour.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import pytest
from javaharness import run_driver  # type: ignore[import-not-found]
from selenium.webdriver.remote.webdriver import WebDriver

from rocketq.cli.main import main as cli_main
from rocketq.client import AdminClient, ClientConfig
from rocketq.client.trace import query_trace
from rocketq.console.server import ConsoleServer
from rocketq.testing import EmbeddedCluster
from rocketq.testing.browser import ConsolePage
from rocketq.testing.java import JavaCluster

Line = dict[str, Any]

# Short delay levels (level 2 = 2 s, every other level 1 s) so delays and retries (level 3 + reconsumeTimes)
# take seconds; SQL92 on; transactions checked every second once a second old.
BROKER = {
    "messageDelayLevel": "1s 2s " + " ".join(["1s"] * 16),
    "enablePropertyFilter": True,
    "transactionCheckInterval": 1000,
    "transactionTimeOut": 1000,
    "mappedFileSizeCommitLog": 16 * 1024 * 1024,
}
TOPIC = "DriverTopic"
GROUP = "DriverGroup"
USER_PROPS = ("mode", "seq", "note")


class Cluster(Protocol):
    @property
    def namesrv_addr(self) -> str: ...


@asynccontextmanager
async def rocketq(tmp_path: Path, **overrides: Any) -> AsyncIterator[Cluster]:
    settings = {**BROKER, **overrides}
    if os.environ.get("ROCKETQ_JAVA_REFERENCE") == "1":
        conf = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in settings.items()}
        java = JavaCluster(tmp_path / "java-cluster", cluster_name="DefaultCluster", broker_settings=conf)
        await asyncio.to_thread(java.start)
        try:
            yield java
        finally:
            java.stop()
        return
    async with EmbeddedCluster(tmp_path / "cluster", **settings) as cluster:
        yield cluster


async def drive(cluster: Cluster, tmp_path: Path, scenario: str, *args: str, timeout: int = 45) -> list[Line]:
    lines: list[Line] = await run_driver(
        scenario, "--namesrv", cluster.namesrv_addr, "--timeout", str(timeout), *args,
        home=tmp_path / "java-home", timeout=timeout + 30,
    )  # fmt: skip
    assert lines and lines[-1].get("done"), lines[-3:]
    assert lines[-1]["complete"], f"{scenario} did not see everything it waited for: {lines[-1]}"
    return lines


def of(lines: list[Line], event: str, **match: Any) -> list[Line]:
    return [x for x in lines if x.get("event") == event and all(x.get(k) == v for k, v in match.items())]


def once_each(received: list[Line]) -> dict[str, Line]:
    """The received lines by keys, asserting no message came twice."""
    twice = [k for k, n in Counter(x["keys"] for x in received).items() if n > 1]
    assert not twice, f"delivered more than once: {twice}"
    return {x["keys"]: x for x in received}


async def test_sync_async_oneway_and_batch_sends_arrive_once_intact_and_can_be_looked_up(tmp_path: Path) -> None:
    async with rocketq(tmp_path) as cluster:
        lines = await drive(cluster, tmp_path, "send", "--count", "5")
    sent = {x["keys"]: x for x in of(lines, "sent")}
    assert Counter(x["mode"] for x in sent.values()) == {"sync": 5, "async": 5, "oneway": 5, "batch": 5}
    assert all(x["status"] == "SEND_OK" for x in sent.values() if x["mode"] != "oneway")
    got = once_each(of(lines, "received"))
    assert got.keys() == sent.keys()
    for key, s in sent.items():
        r = got[key]
        assert (r["msgId"], r["topic"], r["tags"], r["body"]) == (s["msgId"], TOPIC, s["tags"], s["body"])
        assert {p: r["props"].get(p) for p in USER_PROPS} == {p: s["props"][p] for p in USER_PROPS}
        assert r["props"]["CLUSTER"] == "DefaultCluster"
        if s["mode"] in ("sync", "async"):  # the answer named where the message is
            assert (r["queueId"], r["queueOffset"], r["offsetMsgId"]) == (
                s["queueId"], s["queueOffset"], s["offsetMsgId"]
            )  # fmt: skip
    # A batch is one queue, consecutive offsets from the one the answer named, in the order sent.
    batch = sorted((got[k] for k in sent if sent[k]["mode"] == "batch"), key=lambda x: int(x["props"]["seq"]))
    first = sent[batch[0]["keys"]]
    assert {x["queueId"] for x in batch} == {first["queueId"]}
    assert [x["queueOffset"] for x in batch] == list(range(first["queueOffset"], first["queueOffset"] + 5))
    assert first["resultMsgId"].split(",") == [x["msgId"] for x in batch]
    # viewMessage by offset msgId and by unique id, queryMessage by key: the first sync message.
    looked_up = of(lines, "viewed")
    assert sorted(x["consumer"] for x in looked_up) == ["key", "offsetMsgId", "uniqKey"]
    s0 = sent["k-sync-0"]
    want = ("k-sync-0", s0["msgId"], s0["offsetMsgId"], s0["body"])
    assert all((x["keys"], x["msgId"], x["offsetMsgId"], x["body"]) == want for x in looked_up), looked_up


async def test_orderly_producer_and_orderly_consumer_keep_per_key_order(tmp_path: Path) -> None:
    async with rocketq(tmp_path) as cluster:
        lines = await drive(cluster, tmp_path, "orderly", "--keys", "4", "--count", "10")
    sent_queue = {x["keys"]: x["queueId"] for x in of(lines, "sent")}
    got = of(lines, "received")
    once_each(got)
    per_key: dict[str, list[int]] = defaultdict(list)
    for x in got:  # lines in the order the listener saw them
        per_key[x["props"]["okey"]].append(int(x["props"]["seq"]))
        assert x["queueId"] == sent_queue[x["keys"]]
    assert per_key == {f"order-{k}": list(range(10)) for k in range(4)}
    # The selector put every message of a key on one queue.
    assert all(len({sent_queue[f"order-{k}-{i}"] for i in range(10)}) == 1 for k in range(4))


async def test_delay_level_is_not_delivered_before_its_delay(tmp_path: Path) -> None:
    async with rocketq(tmp_path) as cluster:
        lines = await drive(cluster, tmp_path, "delay", "--level", "2", "--count", "3")
    sent = {x["keys"]: x for x in of(lines, "sent")}
    got = once_each(of(lines, "received"))
    assert got.keys() == sent.keys()
    for key, r in got.items():
        assert r["topic"] == TOPIC and r["msgId"] == sent[key]["msgId"]
        assert r["receivedAt"] - r["bornTimestamp"] >= 2000, r  # level 2 is 2 s here
        assert r["props"]["REAL_TOPIC"] == TOPIC


async def test_transactions_commit_rollback_and_check_back(tmp_path: Path) -> None:
    async with rocketq(tmp_path) as cluster:
        lines = await drive(cluster, tmp_path, "transaction", "--count", "3")
    sent = {x["keys"]: x for x in of(lines, "sent")}
    expected_state = {"commit": "COMMIT_MESSAGE", "rollback": "ROLLBACK_MESSAGE",
                      "check-commit": "UNKNOW", "check-rollback": "UNKNOW"}  # fmt: skip
    assert all(x["status"] == "SEND_OK" for x in sent.values())
    assert all(x["localState"] == expected_state[x["props"]["kind"]] for x in sent.values())
    committed = {k for k, x in sent.items() if x["props"]["kind"] in ("commit", "check-commit")}
    got = once_each(of(lines, "received"))
    assert got.keys() == committed  # rolled back ones never arrive, committed ones once
    for key, r in got.items():
        assert (r["msgId"], r["body"], r["topic"]) == (sent[key]["msgId"], sent[key]["body"], TOPIC)
    # The broker checked back exactly the undecided ones, naming the transaction as sent.
    checks = of(lines, "check")
    assert {x["keys"] for x in checks} == {k for k, x in sent.items() if x["localState"] == "UNKNOW"}
    for c in checks:
        assert c["transactionId"] == sent[c["keys"]]["msgId"] and c["topic"] == TOPIC
        assert int(c["props"]["TRANSACTION_CHECK_TIMES"]) >= 1


async def test_broadcasting_consumers_each_get_every_message(tmp_path: Path) -> None:
    async with rocketq(tmp_path) as cluster:
        lines = await drive(cluster, tmp_path, "broadcast", "--count", "6")
    keys = {x["keys"] for x in of(lines, "sent")}
    for name in ("consumer-1", "consumer-2"):
        assert once_each(of(lines, "received", consumer=name)).keys() == keys


async def test_reconsume_later_retries_then_dead_letter_queue(tmp_path: Path) -> None:
    async with rocketq(tmp_path) as cluster:
        lines = await drive(cluster, tmp_path, "retry-dlq", "--count", "3", "--max-reconsume", "2")
    sent = {x["keys"]: x for x in of(lines, "sent")}
    deliveries: dict[str, list[int]] = defaultdict(list)
    for x in of(lines, "received"):
        assert (x["topic"], x["msgId"], x["body"]) == (TOPIC, sent[x["keys"]]["msgId"], sent[x["keys"]]["body"])
        deliveries[x["keys"]].append(x["reconsumeTimes"])
    # First delivery, then one per retry, reconsumeTimes growing each time.
    assert deliveries == {k: [0, 1, 2] for k in sent}
    dlq = once_each(of(lines, "dlq"))
    assert dlq.keys() == sent.keys()
    for key, d in dlq.items():
        assert d["topic"] == f"%DLQ%{GROUP}" and d["msgId"] == sent[key]["msgId"] and d["body"] == sent[key]["body"]
        assert d["props"]["RETRY_TOPIC"] == TOPIC and d["reconsumeTimes"] == 3


async def test_lite_pull_subscribe_assign_seek_commit_and_resume(tmp_path: Path) -> None:
    async with rocketq(tmp_path) as cluster:
        lines = await drive(cluster, tmp_path, "lite-pull", "--count", "5")
    sent = {x["keys"]: x for x in of(lines, "sent")}
    phase = {p: {k for k in sent if k.startswith(p)} for p in ("first", "second", "third")}

    def keys_of(consumer: str) -> set[str]:
        return set(once_each(of(lines, "received", consumer=consumer)))

    assert keys_of("subscribe-1") == phase["first"]
    # commitSync then a restart: the group resumes after what it committed, nothing read twice.
    assert sum(x["offset"] for x in of(lines, "committed", consumer="subscribe-1")) == 5
    assert keys_of("subscribe-2") == phase["second"]
    assert keys_of("assign-1") == phase["first"] | phase["second"]  # seekToBegin on every queue
    [seek] = of(lines, "seek")
    in_queue = sorted(x["queueOffset"] for x in sent.values() if x["queueId"] == seek["queueId"]
                      and not x["keys"].startswith("third"))  # fmt: skip
    again = of(lines, "received", consumer="seek")
    assert [(x["queueId"], x["queueOffset"]) for x in again] == [(seek["queueId"], o) for o in in_queue[1:]]
    assert sum(x["offset"] for x in of(lines, "committed", consumer="assign-1")) == 10
    assert keys_of("assign-2") == phase["third"]


async def test_sql92_subscription_gets_only_matching_messages(tmp_path: Path) -> None:
    async with rocketq(tmp_path) as cluster:
        lines = await drive(cluster, tmp_path, "sql", "--count", "12", "--sql", "a > 4 AND color = 'red'",
                            "--expect", "3")  # fmt: skip
    sent = of(lines, "sent")
    matching = {x["keys"] for x in sent if int(x["props"]["a"]) > 4 and x["props"]["color"] == "red"}
    assert matching == {"sql-6", "sql-8", "sql-10"}
    got = once_each(of(lines, "received"))
    assert got.keys() == matching


async def test_message_trace_lands_in_the_trace_topic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], browser: WebDriver
) -> None:
    # As on a Java broker with traceTopicEnable: the trace topic exists (one queue) without auto-creation.
    async with rocketq(tmp_path, traceTopicEnable=True, autoCreateTopicEnable=False) as cluster:
        async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)
        lines = await drive(cluster, tmp_path, "trace", "--count", "3")
        # rocketq's look-up (QUERY_MESSAGE by msg id on the trace topic, as the console) finds the Java traces
        shown: dict[str, list[dict[str, str]]] = {}
        pages: dict[str, dict[str, list[list[str]]]] = {}
        # the console's Message trace page, in the run's Chromium, served from this loop (the cluster keeps serving
        # while the blocking browser works in a thread)
        console = ConsoleServer(ClientConfig(namesrv_addr=cluster.namesrv_addr), "127.0.0.1", 0)
        await console.start()
        browser.delete_all_cookies()
        page = ConsolePage(browser, console.url)
        try:
            async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
                for msg_id in {x["msgId"] for x in of(lines, "sent")}:
                    found = await query_trace(admin, msg_id)
                    assert sorted(r["type"] for r in found) == ["Pub", "SubAfter", "SubBefore"], found
                    capsys.readouterr()
                    argv = ["message", "trace", "-n", cluster.namesrv_addr, "-i", msg_id, "--json"]
                    assert await asyncio.to_thread(cli_main, argv) == 0
                    shown[msg_id] = json.loads(capsys.readouterr().out)
                    await asyncio.to_thread(page.open, f"/trace?msg_id={msg_id}")
                    pages[msg_id] = {t: await asyncio.to_thread(page.rows, t) for t in ("pub-table", "consume-table")}
        finally:
            await console.close()
    sent = {x["msgId"]: x for x in of(lines, "sent")}
    assert len(once_each(of(lines, "received"))) == 3
    traces = of(lines, "trace")
    assert {x["traceTopicQueueId"] for x in traces} == {0}
    for msg_id, s in sent.items():
        [pub] = of(lines, "trace", type="Pub", msgId=msg_id)
        assert (pub["keys"], pub["topic"], pub["tags"]) == (s["keys"], TOPIC, s["tags"])
        assert pub["group"] == f"{GROUP}-producer" and pub["success"]
        for kind in ("SubBefore", "SubAfter"):
            [sub] = of(lines, "trace", type=kind, msgId=msg_id)
            assert (sub["keys"], sub["group"]) == (s["keys"], GROUP)
        # The trace message itself is keyed by the traced ids (so it can be queried by them).
        assert any(msg_id in x["traceKeys"].split() for x in traces)
        by_type = {r["type"]: r for r in shown[msg_id]}
        assert by_type.keys() == {"Pub", "SubBefore", "SubAfter"}
        assert (by_type["Pub"]["groupName"], by_type["Pub"]["topic"], by_type["Pub"]["keys"]) == (
            f"{GROUP}-producer", TOPIC, s["keys"])  # fmt: skip
        assert by_type["SubAfter"]["requestId"] == by_type["SubBefore"]["requestId"]
        assert by_type["SubBefore"]["groupName"] == GROUP
        # the console shows the Java client's records: the Pub row and the delivery to the group, succeeded
        pub_row = pages[msg_id]["pub-table"]
        assert [(r[1], r[2], r[3], r[4]) for r in pub_row] == [(f"{GROUP}-producer", TOPIC, s["tags"], s["keys"])]
        consumed = pages[msg_id]["consume-table"]
        assert [(r[0], r[4], r[6]) for r in consumed] == [(GROUP, "true", by_type["SubBefore"]["requestId"])]


async def test_request_reply(tmp_path: Path) -> None:
    async with rocketq(tmp_path) as cluster:
        lines = await drive(cluster, tmp_path, "request", "--count", "3")
    assert of(lines, "request-error") == [] and of(lines, "reply-error") == []
    replies = of(lines, "reply")
    assert [(x["requestKeys"], x["body"]) for x in replies] == [
        (f"request-{i}", f"reply to request {i}") for i in range(3)
    ]
    for x in replies:
        assert x["topic"] == "DefaultCluster_REPLY_TOPIC" and x["props"]["MSG_TYPE"] == "reply"
        assert x["props"]["CORRELATION_ID"] and int(x["props"]["PUSH_REPLY_TIME"]) > 0
    asked = of(lines, "received", consumer="responder")
    assert Counter(x["keys"] for x in asked) == Counter(["warm-up", *(f"request-{i}" for i in range(3))])
    # The responder's sends were answered SEND_OK with the stored reply's place.
    assert [x["status"] for x in of(lines, "sent", mode="reply")] == ["SEND_OK"] * 3
