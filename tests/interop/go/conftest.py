"""Apache RocketMQ's Go client (tests/interop/go, built by scripts/go-interop.sh) against rocketq."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # test modules import goharness

from goharness import GoDriver

REPO = Path(__file__).resolve().parents[3]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.go)


@pytest.fixture(scope="session")
def go_driver() -> Path:
    """The driver binary, (re)built first: a no-op taking milliseconds when the sources did not change.

    This runs before any test starts a broker in its event loop, so a blocking call is harmless here.
    """
    cache = Path(os.environ.get("ROCKETQ_GO_CACHE") or Path.home() / ".cache" / "rocketq" / "go")
    script = REPO / "scripts" / "go-interop.sh"
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        pytest.fail(f"{script} failed (run `make interop-go`):\n{done.stderr}")
    return cache / "bin" / "gointerop"


@pytest.fixture
async def go_procs() -> AsyncIterator[list[GoDriver]]:
    """Drivers a test started; any still running at the end are killed."""
    started: list[GoDriver] = []
    yield started
    for d in started:
        await d.kill()
