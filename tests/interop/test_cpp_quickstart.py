"""`rocketq standalone` started as the README says, then the RocketMQ quick start with the C++ wheel."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from pathlib import Path

from cppharness import INTEROP_PY, REPO  # type: ignore[import-not-found]

_NAMESRV = re.compile(r"name server listening on \S*:(\d+)")


async def test_standalone_with_the_quick_start_example(tmp_path: Path) -> None:
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq", "standalone", "--dir", str(tmp_path / "data"),
        "--namesrv-port", "0", "listenPort=0",  # ephemeral ports: CI may run other things on 9876/10911
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        port = None
        broker_line = False
        async with asyncio.timeout(30):
            while port is None or not broker_line:
                line = (await server.stdout.readline()).decode()
                assert line, "standalone exited early"
                m = _NAMESRV.search(line)
                if m:
                    port = m.group(1)
                broker_line = broker_line or "broker broker-a listening on" in line
        home = tmp_path / "home"
        home.mkdir()
        result = await asyncio.to_thread(
            subprocess.run,
            [str(INTEROP_PY), str(REPO / "examples" / "cpp_quickstart.py"), f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=120, env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        out = result.stdout
        assert result.returncode == 0, out[-2000:] + result.stderr[-2000:]
        assert out.count("SendResult status=OK ") == 100
        assert "received 100 of 100" in out
        assert "body=Hello RocketMQ 99" in out and "tags=TagA" in out
        assert (tmp_path / "data" / "store" / "commitlog").is_dir()
    finally:
        if server.returncode is None:
            server.send_signal(signal.SIGTERM)
            async with asyncio.timeout(20):
                rc = await server.wait()
            assert rc == 0  # a clean shutdown on SIGTERM
