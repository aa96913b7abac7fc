"""Apache RocketMQ's Java client, mqadmin and broker (from Maven; scripts/java-interop.sh) as the reference."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.testing.java import JavaCluster

sys.path.insert(0, str(Path(__file__).parent))  # test modules import javaharness

from javaharness import running_java_cluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.java)


@pytest.fixture(scope="session")
def java_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaCluster]:
    """One Java 4.9 name server + broker for the whole run (started on first use)."""
    yield from running_java_cluster(tmp_path_factory.mktemp("java-broker"))
