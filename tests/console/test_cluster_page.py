"""Cluster in a real Chromium: the brokers the name server knows, and one broker's runtime table and config,
compared with the admin API."""

from __future__ import annotations

from collections.abc import Callable

from rocketq.client.sync import run
from rocketq.testing.browser import ConsoleCluster, ConsolePage


def test_cluster_lists_the_brokers_and_their_status_and_config(
    console: ConsolePage, console_cluster: ConsoleCluster, shot: Callable[[str], None]
) -> None:
    admin = console_cluster.admin
    assert admin is not None
    brokers = admin.brokers()
    assert brokers, "the standalone registers one broker"
    console.open("/cluster")
    rows = console.rows("brokers-table")
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        (b.cluster, b.broker_name, str(b.broker_id), b.addr) for b in brokers
    ]
    assert "rocketq" in rows[0][4]  # brokerVersionDesc
    shot("cluster")

    b = brokers[0]
    console.by_id(f"broker-link-{b.broker_name}-{b.broker_id}").click()
    runtime = dict((r[0], r[1]) for r in console.rows("runtime-table"))
    assert set(runtime) == set(admin.broker_runtime_info(b.addr))
    assert runtime["brokerVersionDesc"] == admin.broker_runtime_info(b.addr)["brokerVersionDesc"]
    config = dict((r[0], r[1]) for r in console.rows("config-table"))
    assert config == run(admin.aio.broker_config(b.addr))
    assert config["brokerName"] == b.broker_name
    shot("broker")


def test_a_broker_the_name_server_does_not_know_is_refused(console: ConsolePage) -> None:
    console.open("/cluster/broker?addr=127.0.0.1:1")
    assert "not a broker registered with the name server" in console.text("error-message")
