"""Helpers to run the Apache C++ client (tests/interop/cppdriver.py in .venv-interop) from pytest."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
INTEROP_PY = REPO / ".venv-interop" / "bin" / "python"
DRIVER = REPO / "tests" / "interop" / "cppdriver.py"


class Driver:
    """One cppdriver subprocess; its JSON lines are collected as they arrive."""

    def __init__(self, proc: asyncio.subprocess.Process, name: str) -> None:
        self.proc = proc
        self.name = name
        self.lines: list[dict[str, Any]] = []
        self.started = asyncio.Event()
        self.changed = asyncio.Event()
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            self.lines.append(obj)
            if obj.get("event") == "started":
                self.started.set()
            self.changed.set()

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m for m in self.lines if "msg_id" in m and "event" not in m and "error" not in m]

    @property
    def done(self) -> dict[str, Any] | None:
        return next((m for m in self.lines if m.get("done")), None)

    async def wait(self, timeout: float = 120) -> int:
        async with asyncio.timeout(timeout):
            rc = await self.proc.wait()
            await self._reader
        return rc

    async def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._reader, 5)

    def errors(self) -> list[dict[str, Any]]:
        return [m for m in self.lines if "error" in m]


async def start_driver(command: str, *args: str, namesrv: str, home: Path, name: str = "") -> Driver:
    if not INTEROP_PY.exists():
        pytest.fail(f"{INTEROP_PY} is missing: run `make interop-venv` (make test does it)")
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    proc = await asyncio.create_subprocess_exec(
        str(INTEROP_PY), str(DRIVER), command, "--namesrv", namesrv, "--home", str(home), "--log-level", "warn",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=sys.stderr,
        env=env,
    )  # fmt: skip
    return Driver(proc, name or command)


async def wait_until(predicate: Any, timeout: float, what: str, step: float = 0.1) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(step)
    except TimeoutError:
        pytest.fail(f"timed out after {timeout}s waiting for {what}")


async def create_topic(cluster: Any, topic: str, queues: int = 4) -> None:
    """Create a topic on the broker (as mqadmin updateTopic does) and wait until the name server routes it."""
    from rocketq.codes import RequestCode
    from rocketq.protocol.command import RemotingCommand
    from rocketq.remoting.client import RemotingClient

    rc = RemotingClient()
    try:
        ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues), "writeQueueNums": str(queues),
               "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}  # fmt: skip
        resp = await rc.invoke(cluster.broker_addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext))
        assert resp.code == 0, resp.remark
        async with asyncio.timeout(15):
            while True:
                route = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
                if (await rc.invoke(cluster.namesrv_addr, route)).code == 0:
                    return
                await asyncio.sleep(0.1)
    finally:
        await rc.close()
