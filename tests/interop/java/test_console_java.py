"""The web console against a Java 4.9.7 name server and broker (the session's ``java_broker``), in the run's
Chromium: it speaks only the client SDK's requests, so RocketMQ's own servers answer its pages and forms."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from rocketq.client import ClientConfig
from rocketq.client.sync import AdminClient, run
from rocketq.console.server import ConsoleServer
from rocketq.testing.acl import AclJavaCluster
from rocketq.testing.browser import ConsolePage
from rocketq.testing.java import JavaCluster

TOPIC = "ConsoleOnJavaTopic"


@pytest.fixture(scope="module")
def java_console(java_broker: JavaCluster) -> Iterator[tuple[ConsoleServer, AdminClient]]:
    """``rocketq console`` in-process (in the blocking client's loop) and an admin, both on the Java cluster."""
    server = ConsoleServer(ClientConfig(namesrv_addr=java_broker.namesrv_addr), "127.0.0.1", 0)
    run(server.start())
    admin = AdminClient(namesrv_addr=java_broker.namesrv_addr)
    admin.start()
    try:
        yield server, admin
    finally:
        admin.shutdown()
        run(server.close(), timeout=60)


@pytest.fixture
def page(browser: WebDriver, java_console: tuple[ConsoleServer, AdminClient]) -> ConsolePage:
    browser.delete_all_cookies()
    return ConsolePage(browser, java_console[0].url)


def test_cluster_page_shows_the_java_broker_and_its_config(
    page: ConsolePage, java_broker: JavaCluster, java_console: tuple[ConsoleServer, AdminClient]
) -> None:
    page.open("/cluster")
    rows = page.rows("brokers-table")
    assert [(r[0], r[1], r[3]) for r in rows] == [
        (java_broker.cluster_name, java_broker.broker_name, java_broker.broker_addr)
    ]
    assert rows[0][4] == "V4_9_7"  # the Java broker's brokerVersionDesc
    page.open(f"/cluster/broker?addr={java_broker.broker_addr}")
    config = {r[0]: r[1] for r in page.rows("config-table")}
    assert config["brokerName"] == java_broker.broker_name
    assert config["brokerClusterName"] == java_broker.cluster_name
    assert config == {k: ("******" if "secret" in k.lower() and v else v)
                      for k, v in run(java_console[1].aio.broker_config(java_broker.broker_addr)).items()}  # fmt: skip


def test_topic_forms_act_on_the_java_broker(
    page: ConsolePage, java_broker: JavaCluster, java_console: tuple[ConsoleServer, AdminClient]
) -> None:
    admin = java_console[1]
    page.open("/topics")
    page.fill({"create-topic": TOPIC, "create-write-queues": "2", "create-read-queues": "2"})
    page.submit("create-topic-submit", then="topic-name")
    assert [(q.read_queue_nums, q.write_queue_nums) for q in admin.topic_route(TOPIC).queue_datas] == [(2, 2)]
    page.fill({"send-body": "to java", "send-keys": "jk1"})
    page.submit("send-submit", then="flash")
    m = re.search(r"sent SEND_OK: msgId=(\S+)", page.text("flash"))
    assert m is not None, page.text("flash")
    assert [x.body for x in admin.query_message_by_id(m.group(1), TOPIC)] == [b"to java"]

    page.open("/dashboard?refresh=0")  # Java's VIEW_BROKER_STATS_DATA feeds the topic table
    rows = {r[0]: r for r in page.rows("topic-stats-table")}
    assert rows[TOPIC][1] == java_broker.broker_name

    page.open(f"/topics/detail?topic={TOPIC}")
    page.by_id("delete-confirm").click()
    page.submit("delete-submit", then="topics-table")
    assert TOPIC not in admin.topic_list()


def test_login_against_a_java_acl_broker_admits_its_admin_only(browser: WebDriver, java_acl_cluster: AclJavaCluster,
                                                               ) -> None:  # fmt: skip
    """The login's proof (an empty UPDATE_BROKER_CONFIG, admin-only) as Java 4.9.7's PlainAccessValidator and
    AdminBrokerProcessor answer it: a wrong secret and a non-admin account refused, the admin let in, and the
    admin's session reads the broker's runtime info (signed)."""
    accounts = java_acl_cluster.accounts
    server = ConsoleServer(ClientConfig(namesrv_addr=java_acl_cluster.namesrv_addr), "127.0.0.1", 0, login=True)
    run(server.start())
    try:
        browser.delete_all_cookies()
        page = ConsolePage(browser, server.url)
        page.open("/cluster")
        for key, secret in ((accounts.admin_key, "wrong"), (accounts.user_key, accounts.user_secret)):
            page.fill({"login-access-key": key, "login-secret-key": secret})
            page.submit("login-submit", then="login-error")
            assert f"login refused for {key}" in page.text("login-error")
        page.fill({"login-access-key": accounts.admin_key, "login-secret-key": accounts.admin_secret})
        page.submit("login-submit", then="brokers-table")
        assert [r[4] for r in page.rows("brokers-table")] == ["V4_9_7"]
        assert page.text("user") == accounts.admin_key
    finally:
        browser.delete_all_cookies()
        run(server.close(), timeout=60)
