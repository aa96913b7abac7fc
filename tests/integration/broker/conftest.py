"""Fixtures: an embedded cluster and a raw remoting client speaking to it like a C++/Java client would."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.remoting.client import RemotingClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire


@pytest.fixture
async def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[EmbeddedCluster]:
    overrides: dict[str, Any] = getattr(request, "param", {}) or {}
    async with EmbeddedCluster(tmp_path, **overrides) as c:
        yield c


@pytest.fixture
async def rc() -> AsyncIterator[RemotingClient]:
    client = RemotingClient()
    yield client
    await client.close()


@pytest.fixture
def wire(cluster: EmbeddedCluster, rc: RemotingClient) -> Wire:
    return Wire(rc, cluster.broker_addr)
