"""The console's Consumers, Messages, ACL and Replication pages against a Java 4.9.7 name server and broker (the
session's ``java_broker``), in the run's Chromium: the pages speak only the client SDK's requests, so RocketMQ's own
broker answers them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from rocketq.client import ClientConfig, ConsumeFromWhere, Message, MessageExt
from rocketq.client.sync import AdminClient, Producer, PushConsumer, run
from rocketq.console.server import ConsoleServer
from rocketq.testing.browser import ConsolePage
from rocketq.testing.java import JavaCluster

TOPIC, GROUP = "ConsolePagesOnJava", "console-pages-java-cg"
WAIT = 60.0  # a bound on waiting, not a threshold


def until(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def java_scene(java_broker: JavaCluster) -> Iterator[tuple[ConsoleServer, AdminClient, list[Any]]]:
    """The console in-process, an admin, and a consumer group that consumed three messages on the Java broker."""
    config = ClientConfig(namesrv_addr=java_broker.namesrv_addr, poll_name_server_interval=0.5,
                          heartbeat_broker_interval=1.0, persist_consumer_offset_interval=0.5)  # fmt: skip
    server = ConsoleServer(ClientConfig(namesrv_addr=java_broker.namesrv_addr), "127.0.0.1", 0)
    run(server.start())
    admin = AdminClient(namesrv_addr=java_broker.namesrv_addr)
    admin.start()
    got: list[MessageExt] = []
    lock = threading.Lock()

    def take(msgs: list[MessageExt], ctx: object) -> None:
        with lock:
            got.extend(msgs)

    consumer = PushConsumer(GROUP, config=config, rebalance_interval=0.5,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    try:
        admin.create_topic(TOPIC, read_queue_nums=2, write_queue_nums=2)
        with Producer("console-pages-java-pg", config=config) as producer:
            sent = [producer.send(Message(TOPIC, f"java-{i}".encode(), keys=f"jk-{i}")) for i in range(3)]
        consumer.subscribe(TOPIC, "*")
        consumer.register_message_listener(take)
        consumer.start()

        def committed() -> bool:
            with lock:
                if len({m.msg_id for m in got}) < 3:
                    return False
            mine = [p for p in admin.consume_progress(GROUP) if p.message_queue.topic == TOPIC]
            return sum(p.consumer_offset for p in mine) == 3

        until(committed, "the group consumed and committed everything")
        yield server, admin, sent
    finally:
        consumer.shutdown()
        admin.shutdown()
        run(server.close(), timeout=60)


@pytest.fixture
def page(browser: WebDriver, java_scene: tuple[ConsoleServer, AdminClient, list[Any]]) -> ConsolePage:
    browser.delete_all_cookies()
    return ConsolePage(browser, java_scene[0].url)


def test_consumer_pages_on_the_java_broker(page: ConsolePage, java_scene: tuple[ConsoleServer, AdminClient,
                                                                                  list[Any]]) -> None:  # fmt: skip
    _, admin, sent = java_scene
    page.open("/consumers")
    rows = {r[0]: r for r in page.rows("group-table")}
    assert rows[GROUP][1] == "1" and rows[GROUP][3] == "CLUSTERING"
    page.open(f"/consumers/{GROUP}")
    progress = admin.consume_progress(GROUP)
    assert [(r[0], r[2], r[3], r[4]) for r in page.rows("progress-table")] == [
        (p.message_queue.topic, str(p.message_queue.queue_id), str(p.broker_offset), str(p.consumer_offset))
        for p in progress]  # fmt: skip
    cfg = {r[0]: r[1] for r in page.rows("config-table-1")}
    assert cfg["groupName"] == GROUP  # the Java broker's SubscriptionGroupConfig, as it answers it

    page.open("/messages?mode=key")
    page.fill({"message-topic": TOPIC, "message-key": "jk-2"})
    page.submit("message-submit", then="message-table")
    assert [r[0] for r in page.rows("message-table")] == [sent[2].msg_id]
    page.open(f"/messages/view?topic={TOPIC}&msg_id={sent[2].msg_id}")
    assert page.text("message-body") == "java-2"
    assert {r[0]: r[1] for r in page.rows("track-table")}[GROUP] == "consumed"


def test_acl_and_replication_pages_on_the_java_broker(page: ConsolePage, java_broker: JavaCluster) -> None:
    page.open("/acl")
    assert "ACL is off" in page.text("acl-off")  # the Java broker answers the ACL reads with an error
    page.open("/replication")
    [row] = page.rows("replication-table")
    assert (row[1], row[3]) == (java_broker.broker_name, java_broker.broker_addr)
    # a 4.9 broker does not know GET_BROKER_HA_STATUS (a 5.x request): the row says so instead of a role
    assert "not supported" in row[4].lower() and "907" in row[4], row
