"""``rocketq standalone`` says where it listens: the address each server is bound to, then the address the
broker registers (where clients dial it), and warns when it is open on every interface without ACL."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path

from rocketq.testing.process import StandaloneProcess

WAIT = 30.0  # process start-up includes interpreter and import time



async def _start(data: Path, *settings: str) -> tuple[asyncio.subprocess.Process, list[str]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "--log-level", "WARNING", "standalone", "--dir", str(data),
        "--namesrv-port", "0", "listenPort=0", "grpcServerEnable=false", *settings,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    lines: list[str] = []
    async with asyncio.timeout(WAIT):
        while len(lines) < 2:
            line = (await proc.stdout.readline()).decode()
            assert line, "standalone exited before listening"
            lines.append(line.strip())
    return proc, lines


async def _stop(proc: asyncio.subprocess.Process) -> str:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    async with asyncio.timeout(WAIT):
        await proc.wait()
    assert proc.stderr is not None
    return (await proc.stderr.read()).decode()


async def test_every_interface_is_printed_as_such_and_warned_about(tmp_path: Path) -> None:
    # listenHost defaults to 0.0.0.0, as Java binds every interface; without ACL only --insecure allows it
    proc, lines = await _start(tmp_path, "--insecure")
    try:
        assert re.fullmatch(r"name server listening on 0\.0\.0\.0:\d+", lines[0]), lines[0]
        m = re.fullmatch(r"broker broker-a listening on 0\.0\.0\.0:(\d+)( \(VIP 0\.0\.0\.0:\d+\))?, "
                         r"advertised as 127\.0\.0\.1:(\d+) \(store .*\)", lines[1])  # fmt: skip
        assert m and m.group(1) == m.group(3), lines[1]
    finally:
        stderr = await _stop(proc)
    assert proc.returncode == 0, stderr
    assert "broker.insecure_bind" in stderr and "aclEnable=false" in stderr
    assert "namesrv.insecure_bind" in stderr


async def test_one_interface_is_printed_and_not_warned_about(tmp_path: Path) -> None:
    proc, lines = await _start(tmp_path, "listenHost=127.0.0.1")
    try:
        assert re.fullmatch(r"name server listening on 127\.0\.0\.1:\d+", lines[0]), lines[0]
        assert re.fullmatch(r"broker broker-a listening on 127\.0\.0\.1:\d+( \(VIP 127\.0\.0\.1:\d+\))?, "
                            r"advertised as 127\.0\.0\.1:\d+ .*", lines[1]), lines[1]  # fmt: skip
    finally:
        stderr = await _stop(proc)
    assert "insecure_bind" not in stderr


async def test_standalone_process_reads_the_advertised_address(tmp_path: Path) -> None:
    proc = await StandaloneProcess.start(tmp_path, "brokerIP1=127.0.0.2")
    try:
        assert proc.broker_addr.startswith("127.0.0.2:")  # where clients dial, not where it is bound
        assert proc.namesrv_addr.startswith("127.0.0.1:")
    finally:
        assert await proc.stop() == 0
