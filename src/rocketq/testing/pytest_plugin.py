"""pytest plugin: the ``rocketq_cluster`` fixture, a name server + broker per test on ephemeral 127.0.0.1 ports.

Installing rocketq enables it (a ``pytest11`` entry point named ``rocketq.testing.pytest_plugin``), so
``-p rocketq.testing.pytest_plugin`` is only needed where entry points are not loaded
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD``); ``-p no:rocketq.testing.pytest_plugin`` turns it off. Example::

    from rocketq.client.sync import Producer
    from rocketq.client import Message


    def test_send(rocketq_cluster):
        with Producer("pg", namesrv_addr=rocketq_cluster.namesrv_addr) as producer:
            assert producer.send(Message("Orders", b"hello")).status.name == "SEND_OK"

The cluster runs on its own event loop in a background thread (``BackgroundCluster``), so synchronous tests,
asyncio tests and subprocesses reach it alike. Broker settings and more brokers come from a marker::

    @pytest.mark.rocketq_cluster(brokers=2, autoCreateTopicEnable=False)
    def test_without_auto_create(rocketq_cluster): ...
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported when a test asks for the fixture: loading the plugin must stay cheap
    from rocketq.testing.background import BackgroundCluster

MARKER = "rocketq_cluster"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(brokers=1, **broker_settings): settings of the rocketq_cluster fixture's brokers "
        "(broker.conf keys, e.g. autoCreateTopicEnable=False)",
    )


@pytest.fixture
def rocketq_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackgroundCluster]:
    """A started ``BackgroundCluster`` (``.namesrv_addr``, ``.broker_addr``, ``.cluster``, ``.call``)."""
    from rocketq.testing.background import BackgroundCluster

    marker = request.node.get_closest_marker(MARKER)
    if marker is not None and marker.args:
        raise pytest.UsageError(f"@pytest.mark.{MARKER} takes keyword arguments only, got {marker.args!r}")
    kwargs = dict(marker.kwargs) if marker is not None else {}
    with BackgroundCluster(tmp_path / "rocketq-cluster", **kwargs) as cluster:
        yield cluster
