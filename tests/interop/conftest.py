"""Run the Apache C++ client (tests/interop/cppdriver.py in .venv-interop) against our servers."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.testing import EmbeddedCluster

sys.path.insert(0, str(Path(__file__).parent))  # test modules import cppharness

from cppharness import Driver


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.interop)


@pytest.fixture
async def drivers() -> AsyncIterator[list[Driver]]:
    started: list[Driver] = []
    yield started
    for d in started:
        await d.kill()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path / "cluster", mappedFileSizeCommitLog=16 * 1024 * 1024) as c:
        yield c
