"""Run the Go driver (tests/interop/go/main.go) as an asyncio subprocess and collect its JSON lines."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any


class GoDriver:
    """One gointerop process; its stdout JSON lines are collected as they arrive."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[dict[str, Any]] = []
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            self.lines.append(json.loads(raw))  # the driver prints nothing else on stdout

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every line but the final summary."""
        return [line for line in self.lines if not line.get("done")]

    @property
    def done(self) -> dict[str, Any] | None:
        return next((line for line in self.lines if line.get("done")), None)

    async def wait(self, timeout: float) -> int:
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


async def start(binary: Path, mode: str, *args: str, namesrv: str, cwd: Path) -> GoDriver:
    """Start ``gointerop MODE -namesrv NAMESRV ARGS...`` in ``cwd``.

    The client logs errors only; ROCKETMQ_GO_LOG_LEVEL=info in the environment shows its whole log on stderr.
    """
    cwd.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    env["HOME"] = str(cwd)  # anything the client might write stays in the test's directory
    proc = await asyncio.create_subprocess_exec(
        str(binary), mode, "-namesrv", namesrv, *args,
        stdout=asyncio.subprocess.PIPE, stderr=sys.stderr, cwd=cwd, env=env,
    )  # fmt: skip
    return GoDriver(proc)
