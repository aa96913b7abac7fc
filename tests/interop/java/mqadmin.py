"""Apache RocketMQ's stock mqadmin (rocketmq-tools 4.9.7) from pytest: one JVM for many commands, and parsers.

``MqadminSession`` keeps one ``MqadminBatch`` JVM (tests/interop/java/src) running and feeds it one command
at a time, so a test can act between two commands (send with the SDK, start a consumer) without paying a JVM
start (~3-4 s) per command. The JVM runs as an asyncio subprocess: a rocketq cluster embedded in the test's
event loop keeps serving while mqadmin talks to it.

The parsers read what the 4.9.7 commands print (their ``printf`` formats) back into data.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import pytest

from rocketq.testing.java import TOOL_HEAP, JavaUnavailable, driver_classpath, java_env

BATCH_MAIN = "MqadminBatch"


@dataclass(frozen=True)
class Run:
    """One mqadmin command's outcome: what it printed and how main0 ended (0, or System.exit's code)."""

    args: tuple[str, ...]
    stdout: str
    stderr: str
    exit: int

    @property
    def failed(self) -> bool:
        """mqadmin prints a SubCommandException's stack trace to stderr and still exits 0."""
        return self.exit != 0 or "Exception" in self.stderr

    def lines(self) -> list[str]:
        """The non-blank lines, without trailing blanks."""
        return [line.rstrip() for line in self.stdout.splitlines() if line.strip()]

    def rows(self) -> list[list[str]]:
        """Every non-blank line split on whitespace (tables without a header)."""
        return [line.split() for line in self.lines()]


class MqadminSession:
    """``async with MqadminSession(home) as mq: run = await mq.run("topicList", "-n", addr)``."""

    def __init__(self, home: Path, *, command_timeout: float = 60.0, rocketmq_home: Path | None = None) -> None:
        self.home = home
        self.rocketmq_home = rocketmq_home  # e.g. one with conf/tools.yml: mqadmin then signs its requests
        self.command_timeout = command_timeout
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr = home / "mqadmin-batch.stderr"
        self.history: list[Run] = []

    async def __aenter__(self) -> MqadminSession:
        try:
            cp = driver_classpath()
        except JavaUnavailable as exc:
            pytest.fail(str(exc))
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self._stderr, "wb") as err:
            self._proc = await asyncio.create_subprocess_exec(
                "java", *TOOL_HEAP, "-Djava.security.manager=allow", f"-Duser.home={self.home}",
                f"-Drocketmq.client.logRoot={self.home / 'logs'}", "-cp", cp,
                BATCH_MAIN, str(int(self.command_timeout * 1000)),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=err,
                env=java_env(self.rocketmq_home), start_new_session=True, limit=64 * 1024 * 1024,
                cwd=self.home,  # consumerStatus writes its running-info files under the working directory
            )  # fmt: skip
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        proc = self._proc
        if proc is None:
            return
        assert proc.stdin is not None
        with contextlib.suppress(ConnectionError):
            proc.stdin.close()
        try:
            async with asyncio.timeout(15):
                await proc.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL)
            await proc.wait()

    async def run(self, *args: str) -> Run:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None, "session not started"
        proc.stdin.write(json.dumps(list(args)).encode() + b"\n")
        await proc.stdin.drain()
        try:
            # MqadminBatch gives up on a command itself after command_timeout; this is the backstop.
            async with asyncio.timeout(self.command_timeout + 30):
                line = await proc.stdout.readline()
        except TimeoutError:
            line = b""
        if not line:
            tail = self._stderr.read_text(errors="replace")[-3000:] if self._stderr.exists() else ""
            pytest.fail(f"MqadminBatch gave no answer to {list(args)} (exit {proc.returncode}):\n{tail}")
        obj = json.loads(line)
        run = Run(tuple(obj["args"]), obj["stdout"], obj["stderr"], int(obj["exit"]))
        self.history.append(run)
        return run

    async def ok(self, *args: str) -> Run:
        """run() that fails the test when the command failed."""
        run = await self.run(*args)
        if run.failed:
            pytest.fail(f"mqadmin {' '.join(args)} failed (exit {run.exit}):\n{run.stdout}\n{run.stderr[-4000:]}")
        return run


# ------------------------------------------------------------------------------------------------ parsers


def columns(run: Run, header_prefix: str = "#") -> list[list[str]]:
    """The rows of a table whose header line starts with ``#``, split on whitespace (cells never hold spaces)."""
    rows: list[list[str]] = []
    seen_header = False
    for line in run.lines():
        if line.startswith(header_prefix):
            seen_header = True
            continue
        if seen_header:
            rows.append(line.split())
    return rows


def key_values(run: Run, sep: str) -> dict[str, str]:
    """``key <spaces> sep <spaces> value`` lines (brokerStatus uses ':', getBrokerConfig '=')."""
    out: dict[str, str] = {}
    for line in run.lines():
        if line.startswith("====="):
            continue
        key, found, value = line.partition(sep)
        if found:
            out[key.strip()] = value.strip()
    return out


def labelled(run: Run) -> dict[str, str]:
    """queryMsgById and friends: ``Label:   value`` lines."""
    out: dict[str, str] = {}
    for line in run.lines():
        m = re.match(r"^([A-Za-z][A-Za-z ]*?):\s+(.*)$", line)
        if m:
            out.setdefault(m.group(1), m.group(2).strip())
    return out


def route(run: Run) -> dict[str, object]:
    """topicRoute prints fastjson's pretty form, with unquoted integer map keys (``{0:"addr"}``)."""
    text = re.sub(r"([{,]\s*)(-?\d+):", r'\1"\2":', run.stdout)
    obj = json.loads(text)
    assert isinstance(obj, dict)
    return obj
