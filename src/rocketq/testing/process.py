"""``rocketq standalone`` as a real child process (for kill -9 tests and for the Spark executors)."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

# "name server listening on 127.0.0.1:PORT" / "broker NAME listening on HOST:PORT ..., advertised as IP:PORT ..."
_NAMESRV = re.compile(rb"name server listening on \S*:(\d+)")
_BROKER = re.compile(rb"broker \S+ listening on .*, advertised as ([\d.]+:\d+)")
_CONSOLE = re.compile(rb"console listening on (http://\S+)")
_GRPC = re.compile(rb"gRPC \(RocketMQ 5.x clients\) listening on (\S+)")


async def run_process(
    argv: list[str], *, timeout: float, env: dict[str, str] | None = None, cwd: Path | str | None = None
) -> tuple[int, str, str]:
    """Run ``argv`` to its end: ``(exit code, stdout, stderr)``; killed (and reaped) when ``timeout`` passes."""
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    return await finish_process(proc, timeout=timeout)


async def finish_process(proc: asyncio.subprocess.Process, *, timeout: float) -> tuple[int, str, str]:
    """Wait for a child started with piped stdout and stderr to end: ``(exit code, stdout, stderr)``; killed (and
    reaped) when ``timeout`` passes."""
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


class StandaloneProcess:
    """A running ``python -m rocketq standalone`` on ephemeral 127.0.0.1 ports."""

    def __init__(self, proc: asyncio.subprocess.Process, namesrv_addr: str, broker_addr: str,
                 console_url: str = "") -> None:  # fmt: skip
        self.proc = proc
        self.namesrv_addr = namesrv_addr
        self.broker_addr = broker_addr
        #: the web console's base URL (``console=True``), e.g. ``http://127.0.0.1:41234``
        self.console_url = console_url
        #: the gRPC endpoint's address (``grpc=True``), e.g. ``127.0.0.1:41235``
        self.grpc_addr = ""

    @classmethod
    async def start(
        cls, data_dir: Path, *settings: str, timeout: float = 30.0, log_path: Path | None = None,
        console: bool = False, grpc: bool = False,
    ) -> StandaloneProcess:
        """``log_path``: append the process's log (stderr) to this file instead of inheriting stderr;
        ``console``: serve the web console too, on an ephemeral 127.0.0.1 port (``console_url``); ``grpc``: the
        broker's gRPC endpoint too, on an ephemeral port (``grpc_addr``)."""
        log_file = log_path.open("ab") if log_path is not None else None
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "rocketq", "--log-level", "WARNING", "standalone", "--dir", str(data_dir),
                "--namesrv-port", "0", *(["--console-port", "0"] if console else []),
                "listenPort=0", "listenHost=127.0.0.1",
                # gRPC off unless asked: its default port is fixed (8081), and tests run standalones side by side
                *(["grpcServerEnable=true", "grpcServerPort=0"] if grpc else ["grpcServerEnable=false"]), *settings,
                stdout=asyncio.subprocess.PIPE, stderr=log_file,
            )  # fmt: skip
        finally:
            if log_file is not None:
                log_file.close()  # the child holds its own copy
        assert proc.stdout is not None
        namesrv = broker = url = grpc_addr = ""
        try:
            async with asyncio.timeout(timeout):
                while not (namesrv and broker and (url or not console) and (grpc_addr or not grpc)):
                    line = await proc.stdout.readline()
                    if not line:
                        raise RuntimeError(f"rocketq standalone exited with {await proc.wait()} before listening")
                    if m := _NAMESRV.search(line):
                        namesrv = f"127.0.0.1:{m.group(1).decode()}"
                    if m := _BROKER.search(line):
                        broker = m.group(1).decode()
                    if m := _CONSOLE.search(line):
                        url = m.group(1).decode()
                    if m := _GRPC.search(line):
                        grpc_addr = m.group(1).decode()
        except BaseException:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise
        server = cls(proc, namesrv, broker, url)
        server.grpc_addr = grpc_addr
        return server

    def kill9(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()

    async def stop(self) -> int:
        if self.proc.returncode is None:
            self.proc.terminate()
        return await self.proc.wait()


async def start_broker_process(
    namesrv: str, *settings: str, timeout: float = 30.0
) -> tuple[asyncio.subprocess.Process, str]:
    """``python -m rocketq broker`` on an ephemeral 127.0.0.1 port (``settings``: ``key=value``); returns the
    process and the address it advertises, once it listens. The caller kills or stops it."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "--log-level", "WARNING", "broker", "-n", namesrv, "listenPort=0",
        "listenHost=127.0.0.1", "brokerIP1=127.0.0.1", *settings, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(timeout):
            line = await proc.stdout.readline()
        m = _BROKER.search(line)
        if m is None:
            raise RuntimeError(f"rocketq broker did not report its address: {line!r} (exit {proc.returncode})")
    except BaseException:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        raise
    return proc, m.group(1).decode()
