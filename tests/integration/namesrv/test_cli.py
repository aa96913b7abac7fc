"""``rocketq namesrv`` as a real process: prints its address, serves, stops cleanly on SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol import RemotingCommand
from rocketq.remoting import RemotingClient

WAIT = 20.0  # process start-up includes interpreter and import time

# The server under test runs in its own process (on uvloop); the test's own loop does not matter.
pytestmark = pytest.mark.asyncio(loop_factories=["asyncio"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_namesrv_cli(tmp_path: Path, sig: signal.Signals) -> None:
    home = tmp_path / "home"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "--log-level", "WARNING",
        "namesrv", "--host", "127.0.0.1", "--port", "0", "--home", str(home),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    client = RemotingClient()
    try:
        async with asyncio.timeout(WAIT):
            line = (await proc.stdout.readline()).decode()  # type: ignore[union-attr]
        assert line.startswith("rocketq namesrv listening on 127.0.0.1:"), line
        addr = line.rsplit(" ", 1)[1].strip()
        put = RemotingCommand.request(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"})
        assert (await client.invoke(addr, put, timeout=WAIT)).code == ResponseCode.SUCCESS
        info = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout=WAIT)
        assert info.code == ResponseCode.SUCCESS
        proc.send_signal(sig)
        async with asyncio.timeout(WAIT):
            rc = await proc.wait()
        stderr = (await proc.stderr.read()).decode()  # type: ignore[union-attr]
        assert rc == 0, stderr
        assert "Traceback" not in stderr
        assert (home / "kvConfig.json").exists()
    finally:
        await client.close()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_namesrv_cli_port_in_use(tmp_path: Path) -> None:
    blocker = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = blocker.sockets[0].getsockname()[1]
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "rocketq", "namesrv", "--host", "127.0.0.1", "--port", str(port),
            "--home", str(tmp_path),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        async with asyncio.timeout(WAIT):
            _, stderr = await proc.communicate()
        assert proc.returncode == 1
        assert b"cannot listen" in stderr
    finally:
        blocker.close()
        await blocker.wait_closed()


async def test_namesrv_cli_settings_by_property_name(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "--log-level", "WARNING", "namesrv", "--host", "127.0.0.1", "--port", "0",
        "--home", str(tmp_path), "serverMaxConnections=123", "serverMaxWriteBufferBytes=99999999",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    client = RemotingClient()
    try:
        async with asyncio.timeout(WAIT):
            line = (await proc.stdout.readline()).decode()  # type: ignore[union-attr]
        addr = line.rsplit(" ", 1)[1].strip()
        conf = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG), timeout=WAIT)
        text = bytes(conf.body).decode()
        assert "serverMaxConnections=123\n" in text and "serverMaxWriteBufferBytes=99999999\n" in text
    finally:
        await client.close()
        if proc.returncode is None:
            proc.terminate()
            await proc.wait()


async def test_namesrv_cli_refuses_an_unknown_setting(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "namesrv", "--port", "0", "--home", str(tmp_path), "serverMaxConection=1",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(WAIT):
        _, stderr = await proc.communicate()
    assert proc.returncode == 2 and b"serverMaxConection" in stderr
