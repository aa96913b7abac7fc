"""OPS in a real Chromium: the name servers the console talks to."""

from __future__ import annotations

from collections.abc import Callable

from rocketq.testing.browser import ConsoleCluster, ConsolePage


def test_ops_page_shows_the_name_server(console: ConsolePage, console_cluster: ConsoleCluster,
                                        shot: Callable[[str], None]) -> None:  # fmt: skip
    driver = console.open("/")
    assert driver.current_url.endswith("/ops")
    assert console.rows("namesrv-table") == [[console_cluster.namesrv_addr]]
    assert console.text("tls") == "off"
    assert console.text("signed") == "no"
    admin = console_cluster.admin
    assert admin is not None
    clusters = admin.aio.config and sorted({b.cluster for b in admin.brokers()})
    assert [r[0] for r in console.rows("cluster-table")] == clusters
    assert console.rows("cluster-table")[0][1] == ", ".join(sorted({b.broker_name for b in admin.brokers()}))
    shot("ops")
