"""``rocketq standalone`` as a real child process (for kill -9 tests and for the Spark executors)."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

# "name server listening on 127.0.0.1:PORT" / "broker NAME listening on HOST:PORT ..., advertised as IP:PORT ..."
_NAMESRV = re.compile(rb"name server listening on \S*:(\d+)")
_BROKER = re.compile(rb"broker \S+ listening on .*, advertised as ([\d.]+:\d+)")


class StandaloneProcess:
    """A running ``python -m rocketq standalone`` on ephemeral 127.0.0.1 ports."""

    def __init__(self, proc: asyncio.subprocess.Process, namesrv_addr: str, broker_addr: str) -> None:
        self.proc = proc
        self.namesrv_addr = namesrv_addr
        self.broker_addr = broker_addr

    @classmethod
    async def start(
        cls, data_dir: Path, *settings: str, timeout: float = 30.0, log_path: Path | None = None
    ) -> StandaloneProcess:
        """``log_path``: append the process's log (stderr) to this file instead of inheriting stderr."""
        log_file = log_path.open("ab") if log_path is not None else None
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "rocketq", "--log-level", "WARNING", "standalone", "--dir", str(data_dir),
                "--namesrv-port", "0", "listenPort=0", "listenHost=127.0.0.1", *settings,
                stdout=asyncio.subprocess.PIPE, stderr=log_file,
            )  # fmt: skip
        finally:
            if log_file is not None:
                log_file.close()  # the child holds its own copy
        assert proc.stdout is not None
        namesrv = broker = ""
        try:
            async with asyncio.timeout(timeout):
                while not (namesrv and broker):
                    line = await proc.stdout.readline()
                    if not line:
                        raise RuntimeError(f"rocketq standalone exited with {await proc.wait()} before listening")
                    if m := _NAMESRV.search(line):
                        namesrv = f"127.0.0.1:{m.group(1).decode()}"
                    if m := _BROKER.search(line):
                        broker = m.group(1).decode()
        except BaseException:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise
        return cls(proc, namesrv, broker)

    def kill9(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()

    async def stop(self) -> int:
        if self.proc.returncode is None:
            self.proc.terminate()
        return await self.proc.wait()
