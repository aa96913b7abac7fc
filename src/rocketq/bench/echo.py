"""The request/response ceiling: a bare asyncio ``Protocol`` server answering canned frames, in its own process.

This is the baseline every one-request-per-message figure is compared with: the same frame sizes as the
scenario's requests and responses, the same event loop (uvloop when installed), the same machine, the same run.
The server reads the 4-byte length prefix and nothing else, and writes one canned reply per request (one
``transport.write`` each, as a naive server does); the client keeps N requests in flight and does the same. What
it cannot beat is the cost of a Python event loop turning bytes around — rocketq's broker does that *and* parses,
stores and answers, so the ratio ``rocketq / ceiling`` says how much of the ceiling is left to the broker's work.

The server is ``rocketq.bench._echo_server`` (stdlib only): ``python -c "from rocketq.bench._echo_server import main;
main()" --reply-size 200`` prints ``port N``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import struct
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import cast

from rocketq.bench._echo_server import canned_frame, split_frames
from rocketq.bench.stats import LatencyRecorder, LatencySummary

__all__ = ["EchoResult", "EchoServerProcess", "canned_frame", "cpu_seconds", "measure_echo", "split_frames"]

_LEN = struct.Struct(">I")


_SERVER_MAIN = "from rocketq.bench._echo_server import main; main()"


class EchoServerProcess:
    """``async with EchoServerProcess(reply_size) as port:`` — the bare server as a child process."""

    def __init__(self, reply_size: int) -> None:
        self.reply_size = reply_size
        self._proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> int:
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _SERVER_MAIN, "--reply-size", str(self.reply_size),
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert self._proc.stdout is not None
        async with asyncio.timeout(30):
            line = (await self._proc.stdout.readline()).decode()
        if not line.startswith("port "):
            raise RuntimeError(f"echo server did not start: {line!r}")
        return int(line.split()[1])

    async def __aexit__(self, *exc: object) -> None:
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(5):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None


@dataclass(frozen=True, slots=True)
class EchoResult:
    requests: int
    seconds: float
    requests_per_s: float
    latency: LatencySummary | None
    server_cpu_us_per_request: float | None


class _EchoClientProtocol(asyncio.Protocol):
    """Keeps ``inflight`` requests outstanding; one write per request, like the server's one write per reply."""

    def __init__(self, request: bytes, inflight: int, deadline: float, recorder: LatencyRecorder) -> None:
        self._request = request
        self._inflight = inflight
        self._deadline = deadline
        self._recorder = recorder
        self._buf = bytearray()
        self._sent: deque[float] = deque()
        self._transport: asyncio.Transport | None = None
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.answered = 0
        self._stopping = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        for _ in range(self._inflight):
            self._send()

    def _send(self) -> None:
        assert self._transport is not None
        self._sent.append(time.perf_counter())
        self._transport.write(self._request)

    def data_received(self, data: bytes) -> None:
        self._buf += data
        n = split_frames(self._buf)
        now = time.perf_counter()
        record = self._recorder.record
        sent = self._sent
        for _ in range(n):
            record(now - sent.popleft())
        self.answered += n
        if now >= self._deadline:
            self._stopping = True
        if not self._stopping:
            for _ in range(n):
                self._send()
        elif not sent and not self.done.done():
            self.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(exc or ConnectionError("echo server closed the connection"))

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of a process (Linux ``/proc``); None elsewhere."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


async def measure_echo(request_size: int, reply_size: int, inflight: int, duration: float) -> EchoResult:
    """Start the bare server, keep ``inflight`` requests of ``request_size`` bytes going for ``duration`` s."""
    loop = asyncio.get_running_loop()
    request = canned_frame(request_size)
    server = EchoServerProcess(reply_size)
    async with server as port:
        # Warm up (connect, fill buffers), then measure on a fresh connection.
        result: EchoResult | None = None
        for span in (min(0.3, duration), duration):
            recorder = LatencyRecorder()
            cpu0 = cpu_seconds(server.pid)
            t0 = time.perf_counter()
            _, proto = await loop.create_connection(
                lambda: _EchoClientProtocol(request, inflight, time.perf_counter() + span, recorder),  # noqa: B023
                "127.0.0.1", port,
            )  # fmt: skip
            try:
                await proto.done
            finally:
                proto.close()
            elapsed = time.perf_counter() - t0
            cpu1 = cpu_seconds(server.pid)
            n = proto.answered
            cpu = (cpu1 - cpu0) / n * 1e6 if cpu0 is not None and cpu1 is not None and n else None
            result = EchoResult(n, elapsed, n / elapsed, recorder.summary(), cpu)
        assert result is not None
        return result
