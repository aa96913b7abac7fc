"""Producers and Dashboard in a real Chromium, with a producer of the test's own connected: its group and
connection as the admin API reports them, and the messages it sent in the dashboard's per-topic numbers."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from rocketq.client import ClientConfig, Message
from rocketq.client.sync import Producer, run
from rocketq.testing.browser import ConsoleCluster, ConsolePage

TOPIC = "ConsoleDashTopic"
GROUP = "console-dash-pg"
SENT = 7


@pytest.fixture(scope="module")
def producer(console_cluster: ConsoleCluster) -> Iterator[Producer]:
    admin = console_cluster.admin
    assert admin is not None
    admin.create_topic(TOPIC, write_queue_nums=2, read_queue_nums=2)
    # a heartbeat each second: a producer's first heartbeat reaches a broker only after a send taught it the
    # broker's address (the one at start knows none), then once per interval (Java: 30 s)
    p = Producer(GROUP, config=ClientConfig(namesrv_addr=console_cluster.namesrv_addr, heartbeat_broker_interval=1.0))
    p.start()
    try:
        for i in range(SENT):
            p.send(Message(TOPIC, f"dash-{i}".encode()))
        deadline = time.monotonic() + 60
        while not any(GROUP in groups for groups in run(admin.aio.all_producers()).values()):
            assert time.monotonic() < deadline, "the producer's group never reached the broker"
            time.sleep(0.2)
        yield p
    finally:
        p.shutdown()


def test_producers_page_shows_the_group_and_its_connection(
    console: ConsolePage, console_cluster: ConsoleCluster, producer: Producer, shot: Callable[[str], None]
) -> None:
    admin = console_cluster.admin
    assert admin is not None
    expected = [c for groups in run(admin.aio.all_producers()).values() for c in groups.get(GROUP, [])]
    assert len(expected) == 1
    console.open("/producers")
    listed = [r for r in console.rows("producers-table") if r[0] == GROUP]
    assert [(r[1], r[2], r[3]) for r in listed] == [
        (c["clientId"], c["remoteIP"].lstrip("/"), c["language"]) for c in expected
    ]

    console.fill({"producer-topic": TOPIC, "producer-group": GROUP})
    console.submit("producer-submit", then="connections-table")
    conns = run(admin.aio.producer_connections(GROUP, TOPIC))
    assert [tuple(r) for r in console.rows("connections-table")] == [
        (c.client_id, c.client_addr, c.language, str(c.version)) for c in conns
    ]
    assert conns and conns[0].client_id == expected[0]["clientId"]
    shot("producers")


def test_a_group_nobody_produces_with_is_an_error_page(console: ConsolePage, producer: Producer) -> None:
    console.open(f"/producers?topic={TOPIC}&group=nobody-here")
    assert "not exist" in console.text("error-message")


def test_dashboard_charts_the_brokers_and_the_topics_messages(
    console: ConsolePage, console_cluster: ConsoleCluster, producer: Producer, shot: Callable[[str], None]
) -> None:
    admin = console_cluster.admin
    assert admin is not None
    console.open("/dashboard?refresh=0")
    masters = sorted(b.broker_name for b in admin.brokers() if b.broker_id == 0)
    assert [r[0] for r in console.rows("broker-tps-table")] == masters
    rows = {(r[0], r[1]): r for r in console.rows("topic-stats-table")}
    broker = admin.brokers()[0]
    stats = run(admin.aio.view_broker_stats(broker.addr, "TOPIC_PUT_NUMS", TOPIC))
    assert stats["statsDay"]["sum"] == SENT
    assert rows[(TOPIC, broker.broker_name)][3] == str(SENT)
    # the charts: one line per broker, and the topic among the topic lines
    assert [p.get_attribute("data-label") for p in console.by_id("broker-put-chart").find_elements(
        "css selector", "polyline.series")] == masters  # fmt: skip
    labels = [p.get_attribute("data-label") for p in console.by_id("topic-chart").find_elements(
        "css selector", "polyline.series")]  # fmt: skip
    assert TOPIC in labels
    assert int(console.text("sample-count")) >= 1
    shot("dashboard")
