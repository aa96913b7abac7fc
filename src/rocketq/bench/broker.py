"""``--embedded``: a standalone name server + broker in a child process, in a temporary directory.

The broker runs in its own process (its own interpreter, its own core), the load generator in this one, as a
deployment would. The child is ``python -m rocketq standalone --dir TMP --namesrv-port 0 listenPort=0 ...``; its
two "listening on" lines give the addresses. Its resident memory and CPU time are read from ``/proc`` so a
scenario can report broker CPU per message and watch RSS.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rocketq.bench.echo import cpu_seconds

__all__ = ["BrokerProcess", "RssSample", "parse_listen_lines", "read_rss"]

# ``rocketq standalone``'s lines: where each server listens as bound; the broker's then says where to dial it
_NAMESRV_LINE = re.compile(r"^name server listening on ([^\s,]+)")
_BROKER_LINE = re.compile(r"^broker \S+ listening on .*, advertised as (\S+)")


def parse_listen_lines(lines: list[str]) -> tuple[str | None, str | None]:
    """(name server address, broker address) from ``rocketq standalone``'s start-up lines."""
    namesrv = broker = None
    for line in lines:
        if m := _NAMESRV_LINE.match(line):
            host, _, port = m.group(1).rpartition(":")
            namesrv = f"{'127.0.0.1' if host in ('0.0.0.0', '', '[::]') else host}:{port}"
        elif m := _BROKER_LINE.match(line):
            broker = m.group(1)
    return namesrv, broker


@dataclass(frozen=True, slots=True)
class RssSample:
    """Resident set in KiB: total, anonymous (heap) and file-backed (mapped store files)."""

    rss_kb: int
    anon_kb: int
    file_kb: int


def read_rss(pid: int) -> RssSample | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    values = {}
    for key in ("VmRSS", "RssAnon", "RssFile"):
        m = re.search(rf"^{key}:\s+(\d+) kB", text, re.MULTILINE)
        values[key] = int(m.group(1)) if m else 0
    return RssSample(values["VmRSS"], values["RssAnon"], values["RssFile"])


class BrokerProcess:
    """``async with BrokerProcess(flush="SYNC_FLUSH") as b: b.namesrv_addr, b.broker_addr``."""

    def __init__(
        self, *, flush: str = "ASYNC_FLUSH", options: dict[str, str] | None = None, base_dir: str | None = None
    ) -> None:
        self.flush = flush
        self.options = dict(options or {})
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="rocketq-bench-"))
        self.namesrv_addr = ""
        self.broker_addr = ""
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr: Path = self.base_dir / "broker.log"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def store_dir(self) -> Path:
        return self.base_dir / "store"

    def command(self) -> list[str]:
        props = {
            "listenPort": "0", "listenHost": "127.0.0.1", "brokerIP1": "127.0.0.1", "flushDiskType": self.flush,
            # Let the consumer's pull batch size decide (RocketMQ caps in-memory pulls at 32 by default; a
            # deployment that pulls in bigger batches raises this, as the comparison brokers' clients do).
            "maxTransferCountOnMessageInMemory": "1024",
            # the bench drives the remoting path; a fixed gRPC port (8081) would clash with a running standalone
            "grpcServerEnable": "false",
        }  # fmt: skip
        props.update(self.options)
        return [
            sys.executable, "-m", "rocketq", "--log-level", "WARNING", "standalone",
            "--dir", str(self.base_dir), "--namesrv-port", "0",
            *(f"{k}={v}" for k, v in props.items()),
        ]  # fmt: skip

    async def start(self) -> BrokerProcess:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        with open(self._stderr, "wb") as err:
            self._proc = await asyncio.create_subprocess_exec(
                *self.command(), stdout=asyncio.subprocess.PIPE, stderr=err, start_new_session=True
            )
        assert self._proc.stdout is not None
        lines: list[str] = []
        try:
            async with asyncio.timeout(60):
                while True:
                    raw = await self._proc.stdout.readline()
                    if not raw:
                        raise RuntimeError(f"the broker exited during start-up:\n{self.log_tail()}")
                    lines.append(raw.decode(errors="replace").strip())
                    namesrv, broker = parse_listen_lines(lines)
                    if namesrv and broker:
                        self.namesrv_addr, self.broker_addr = namesrv, broker
                        return self
        except BaseException:
            await self.stop()
            raise

    def log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self._stderr.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def rss(self) -> RssSample | None:
        return read_rss(self.pid) if self.pid is not None else None

    def cpu_seconds(self) -> float | None:
        return cpu_seconds(self.pid)

    async def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(30):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()
        self._proc = None
        if self._own_dir:
            await asyncio.to_thread(shutil.rmtree, self.base_dir, True)

    async def __aenter__(self) -> BrokerProcess:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def self_cpu_seconds() -> float:
    """This process's CPU time (the load generator's side)."""
    t = os.times()
    return t.user + t.system
