"""Consumers, Messages, Message trace, DLQ, ACL and Replication in a real Chromium against the session's
console cluster (a ``rocketq standalone`` child process): each page shows what the admin API says; a reset from
the Consumers page and a resend from the DLQ page act (the group receives the messages again)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from rocketq.client import ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, MessageExt, SendResult
from rocketq.client.config import ClientConfig
from rocketq.client.sync import Producer, PushConsumer, run
from rocketq.client.trace import query_trace
from rocketq.testing.browser import ConsoleCluster, ConsolePage

TOPIC = "ConsoleLaneC"
GOOD, BAD = "lanec-good", "lanec-bad"
WAIT = 60.0  # a bound on waiting (a loaded machine), not a threshold


def until(check: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@dataclass
class Scene:
    admin: Any
    sent: list[SendResult]
    started_ms: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    consumed: list[MessageExt] = field(default_factory=list)
    refused: list[MessageExt] = field(default_factory=list)

    def got(self, which: list[MessageExt]) -> list[MessageExt]:
        with self.lock:
            return list(which)


@pytest.fixture(scope="module")
def scene(console_cluster: ConsoleCluster) -> Iterator[Scene]:
    """A traced producer's messages, a group that consumes them and one that refuses them (straight to its DLQ:
    max_reconsume_times=0)."""
    admin = console_cluster.admin
    assert admin is not None
    config = ClientConfig(namesrv_addr=console_cluster.namesrv_addr, poll_name_server_interval=0.5,
                          heartbeat_broker_interval=1.0, persist_consumer_offset_interval=0.5)  # fmt: skip
    admin.create_topic(TOPIC, read_queue_nums=2, write_queue_nums=2)
    scene = Scene(admin, [], int(time.time() * 1000) - 1000)

    def take(msgs: list[MessageExt], ctx: object) -> ConsumeConcurrentlyStatus:
        with scene.lock:
            scene.consumed.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def refuse(msgs: list[MessageExt], ctx: object) -> ConsumeConcurrentlyStatus:
        with scene.lock:
            scene.refused.extend(msgs)
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    good = PushConsumer(GOOD, config=config, rebalance_interval=0.5, enable_msg_trace=True,
                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    bad = PushConsumer(BAD, config=config, rebalance_interval=0.5, max_reconsume_times=0,
                       consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    good.aio.reset_offset_settle_time = 0.5  # Java waits 10 s for in-flight pulls before a reset's rebalance
    for consumer, listener in ((good, take), (bad, refuse)):
        consumer.subscribe(TOPIC, "*")
        consumer.register_message_listener(listener)
    try:
        with Producer("lanec-pg", config=config, enable_msg_trace=True) as producer:
            for i in range(4):
                scene.sent.append(producer.send(Message(TOPIC, f"browser-{i}".encode(), tags="B",
                                                        keys=[f"bk-{i}", "browser"])))  # fmt: skip
        good.start()
        bad.start()
        ids = {s.msg_id for s in scene.sent}
        until(lambda: {m.msg_id for m in scene.got(scene.consumed)} >= ids, "the good group consumed everything")
        yield scene
    finally:
        bad.shutdown()
        good.shutdown()


def test_consumers_page_and_a_reset(console: ConsolePage, scene: Scene, shot: Callable[[str], None]) -> None:
    admin = scene.admin
    until(lambda: {GOOD, BAD} <= set(admin.consumer_groups()), "both groups' retry topics")
    console.open("/consumers")
    rows = {r[0]: r for r in console.rows("group-table")}
    for g in (GOOD, BAD):
        s = admin.group_summary(g)
        assert (rows[g][1], rows[g][3]) == (str(s.count), s.message_model)

    def committed() -> bool:  # the consumer's offsets reach the broker a moment after the messages are consumed
        mine = [p for p in admin.consume_progress(GOOD) if p.message_queue.topic == TOPIC]
        return sum(p.consumer_offset for p in mine) == len(scene.sent) and all(p.lag == 0 for p in mine)

    until(committed, "the good group's offsets committed")
    console.open(f"/consumers/{GOOD}")
    assert not console.driver.find_elements("id", "progress-error"), console.text("progress-error")
    progress = admin.consume_progress(GOOD)
    assert [(r[0], r[2], r[3]) for r in console.rows("progress-table")] == [
        (p.message_queue.topic, str(p.message_queue.queue_id), str(p.broker_offset)) for p in progress]  # fmt: skip
    [conn] = admin.consumer_connections(GOOD).connections
    assert [r[0] for r in console.rows("connection-table")] == [conn.client_id]
    shot("consumers-detail")

    before = len(scene.got(scene.consumed))
    console.fill({"reset-topic": TOPIC, "reset-time": str(scene.started_ms)})
    console.submit("reset-submit", then="flash")
    assert console.text("flash").startswith(f"reset {GOOD} on {TOPIC}:")
    ids = {s.msg_id for s in scene.sent}
    until(lambda: {m.msg_id for m in scene.got(scene.consumed)[before:]} >= ids, "everything consumed again")

    console.open(f"/consumers/{GOOD}/clients/{quote(conn.client_id)}")
    assert TOPIC in [r[0] for r in console.rows("running-subscription-table")]
    info = run(admin.aio.consumer_running_info(GOOD, conn.client_id))
    assert len(console.rows("queue-table")) == len(info["mqTable"])
    shot("consumers-client")


def test_messages_pages(console: ConsolePage, scene: Scene, shot: Callable[[str], None]) -> None:
    now = int(time.time() * 1000)
    query = urlencode({"mode": "topic", "topic": TOPIC, "begin": scene.started_ms, "end": now + 60_000})
    console.open(f"/messages?{query}")
    shown = sorted(r[0] for r in console.rows("message-table"))
    listed = run(scene.admin.aio.browse_messages(TOPIC, begin_ms=scene.started_ms, max_messages=64))
    assert shown == sorted(m.msg_id for m in listed) == sorted(s.msg_id for s in scene.sent)
    shot("messages-detail")
    console.open("/messages?mode=key")
    console.fill({"message-topic": TOPIC, "message-key": "bk-1"})
    console.submit("message-submit", then="message-table")
    assert [r[0] for r in console.rows("message-table")] == [scene.sent[1].msg_id]
    console.by_id("message-table").find_element("css selector", "a.msg-id").click()
    assert console.text("view-msg-id") == scene.sent[1].msg_id
    assert console.text("message-body") == "browser-1"
    tracks = {r[0]: r[1] for r in console.rows("track-table")}
    assert tracks[GOOD] == "consumed"
    shot("messages-view")


def test_trace_page(console: ConsolePage, scene: Scene, shot: Callable[[str], None]) -> None:
    sent = scene.sent[0]

    def traced() -> bool:
        try:
            kinds = {r["type"] for r in run(query_trace(scene.admin.aio, sent.msg_id))}
        except Exception:  # the trace topic's route may not be there yet
            return False
        return kinds >= {"Pub", "SubBefore", "SubAfter"}

    until(traced, "the trace records")
    console.open("/trace")
    console.fill({"trace-msg-id": sent.msg_id})
    console.submit("trace-submit", then="pub-table")
    [pub] = console.rows("pub-table")
    assert (pub[1], pub[2], pub[10]) == ("lanec-pg", TOPIC, sent.offset_msg_id)
    assert {(r[0], r[4]) for r in console.rows("consume-table")} >= {(GOOD, "true")}
    shot("trace-detail")


def test_dlq_page_and_a_resend(console: ConsolePage, scene: Scene, shot: Callable[[str], None]) -> None:
    admin = scene.admin
    ids = {s.msg_id for s in scene.sent}

    def all_dead() -> bool:
        try:
            return {m.msg_id for m in run(admin.aio.browse_messages(f"%DLQ%{BAD}", max_messages=64))} >= ids
        except Exception:  # the DLQ topic's route comes with its first message
            return False

    until(all_dead, "every refused message in the DLQ")
    console.open("/dlq")
    console.fill({"dlq-group": BAD, "dlq-begin": str(scene.started_ms)})
    console.submit("dlq-submit", then="dlq-table")
    rows = console.rows("dlq-table")
    assert {r[0] for r in rows} == ids and {r[1] for r in rows} == {TOPIC}
    shot("dlq-detail")
    target = scene.sent[2].msg_id
    seen = len(scene.got(scene.refused))
    console.submit(f"resend-{target}", then="flash")
    assert console.text("flash").startswith(f"{target} sent back to {BAD}")
    until(lambda: any(m.msg_id == target for m in scene.got(scene.refused)[seen:]),
          "the resent message delivered to its group again")  # fmt: skip
    href = console.by_id("dlq-export").get_attribute("href") or ""
    assert href.startswith(console.base_url + "/dlq/export?group=")


def test_acl_and_replication_pages(console: ConsolePage, scene: Scene) -> None:
    console.open("/acl")
    assert "ACL is off" in console.text("acl-off")
    console.open("/replication")
    rows = console.rows("replication-table")
    brokers = scene.admin.brokers()
    assert [(r[1], r[3]) for r in rows] == [(b.broker_name, b.addr) for b in brokers]
    assert rows[0][4] == scene.admin.broker_runtime_info(brokers[0].addr)["brokerRole"]
