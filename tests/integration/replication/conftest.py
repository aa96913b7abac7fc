"""Shared fixtures of the replication tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rocketq.remoting.client import RemotingClient


@pytest.fixture
async def rc() -> AsyncIterator[RemotingClient]:
    """A remoting client for hand-made requests, closed after the test."""
    client = RemotingClient()
    yield client
    await client.close()
