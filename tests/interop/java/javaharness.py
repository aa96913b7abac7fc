"""Run rocketq's Java driver (tests/interop/java/src, compiled by scripts/java-interop.sh) from pytest.

The driver runs as an asyncio subprocess so a rocketq broker embedded in the test's own event loop
keeps serving while the JVM talks to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.testing.java import DRIVER_MAIN, TOOL_HEAP, JavaCluster, JavaUnavailable, driver_classpath, java_env


def java_cp() -> str:
    try:
        return driver_classpath()
    except JavaUnavailable as exc:
        pytest.fail(str(exc))


async def run_java(
    main: str, *args: str, home: Path, timeout: float = 120, stdin: bytes | None = None,
    rocketmq_home: Path | None = None,
) -> tuple[int, str, str]:
    """Run one Java main class to completion; returns (exit code, stdout, stderr). ``rocketmq_home``
    replaces the shared ROCKETMQ_HOME (rocketq.testing.java.rocketmq_home)."""
    home.mkdir(parents=True, exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        "java", *TOOL_HEAP, f"-Duser.home={home}", "-Drocketmq.client.logRoot=" + str(home / "logs"),
        "-cp", java_cp(), main, *args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=java_env(rocketmq_home),
        start_new_session=True,
    )  # fmt: skip
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate(stdin)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL)
        out, err = await proc.communicate()
        pytest.fail(f"{main} {' '.join(args)} timed out after {timeout}s\n{err.decode(errors='replace')[-3000:]}")
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


async def run_driver(*args: str, home: Path, timeout: float = 120) -> list[dict[str, Any]]:
    """Run one driver scenario; its stdout is JSON lines."""
    rc, out, err = await run_java(DRIVER_MAIN, *args, home=home, timeout=timeout)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if rc != 0:
        pytest.fail(f"driver {' '.join(args)} exited {rc}\nstdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}")
    return lines


def running_java_cluster(base_dir: Path, version: str = "4.9", timeout: float = 60.0) -> Iterator[JavaCluster]:
    """A Java name server + broker for a fixture to yield; always stopped afterwards."""
    try:
        cluster = JavaCluster(base_dir, version=version).start(timeout=timeout)
    except JavaUnavailable as exc:
        pytest.fail(str(exc))
    try:
        yield cluster
    finally:
        cluster.stop()
