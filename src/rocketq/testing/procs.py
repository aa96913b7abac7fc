"""A name server and brokers as separate ``rocketq`` processes: for kill -9 cycles and replication benchmarks.

Each server is started by its own command line, on an ephemeral 127.0.0.1 port that is kept across restarts
(so a broker restarted after ``kill -9`` comes back at the address its peers and the name server know).
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

# "rocketq namesrv listening on 127.0.0.1:PORT" / "broker NAME listening on HOST:PORT ..., advertised as IP:PORT"
#: the brokers' log level (their log files): INFO shows role changes and the in-sync set when a run is examined
_BROKER_LOG_LEVEL = os.environ.get("ROCKETQ_PROCS_LOG_LEVEL", "WARNING")
_NAMESRV = re.compile(rb"namesrv listening on \S*:(\d+)")
_BROKER = re.compile(rb"broker \S+ listening on .*, advertised as ([\d.]+:\d+)")


class ServerProcess:
    """One ``python -m rocketq <command>`` child; ``addr`` is read from the line it prints once listening."""

    def __init__(self, argv: Sequence[str], pattern: re.Pattern[bytes], log_path: Path | None) -> None:
        self.argv = list(argv)
        self.pattern = pattern
        self.log_path = log_path
        self.proc: asyncio.subprocess.Process | None = None
        self.addr = ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def start(self, timeout: float = 30.0) -> str:
        """Start (or start again) and wait for the listening line; the address it printed."""
        assert not self.running
        log = self.log_path.open("ab") if self.log_path is not None else None
        try:
            err = log if log is not None else asyncio.subprocess.DEVNULL
            self.proc = await asyncio.create_subprocess_exec(*self.argv, stdout=asyncio.subprocess.PIPE, stderr=err)
        finally:
            if log is not None:
                log.close()  # the child holds its own copy
        proc = self.proc
        assert proc.stdout is not None
        try:
            async with asyncio.timeout(timeout):
                while True:
                    line = await proc.stdout.readline()
                    if not line:
                        raise RuntimeError(f"{self.argv[3:5]} exited with {await proc.wait()} before listening")
                    if m := self.pattern.search(line):
                        self.addr = self._addr(m)
                        return self.addr
        except BaseException:
            await self.kill9()
            raise

    def _addr(self, m: re.Match[bytes]) -> str:
        return f"127.0.0.1:{m.group(1).decode()}"

    async def kill9(self) -> None:
        """SIGKILL and reap (no-op when not running)."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()

    async def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM and wait (SIGKILL after ``timeout``); the exit code, None when it never ran."""
        if self.proc is None:
            return None
        if self.proc.returncode is None:
            self.proc.terminate()
            try:
                async with asyncio.timeout(timeout):
                    await self.proc.wait()
            except TimeoutError:
                await self.kill9()
        return self.proc.returncode


class NamesrvProcess(ServerProcess):
    def __init__(self, home: Path, *settings: str, log_path: Path | None = None, port: int = 0) -> None:
        argv = [sys.executable, "-m", "rocketq", "--log-level", "WARNING", "namesrv", "--host", "127.0.0.1",
                "--port", str(port), "--home", str(home), *settings]  # fmt: skip
        super().__init__(argv, _NAMESRV, log_path)

    async def start(self, timeout: float = 30.0) -> str:
        addr = await super().start(timeout)
        port = addr.rsplit(":", 1)[1]
        self.argv[self.argv.index("--port") + 1] = port  # a restart keeps the address
        return addr


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free on 127.0.0.1 right now (held together while chosen, so no two are equal)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class BrokerProcess(ServerProcess):
    """A broker with its store under ``store``; extra ``key=value`` settings as on ``rocketq broker``. Its
    main and HA ports are chosen once, so a restart comes back at the same addresses."""

    def __init__(self, store: Path, namesrv: str, *settings: str, log_path: Path | None = None) -> None:
        self.port, self.ha_port = free_ports(2)
        self.store = store
        argv = [sys.executable, "-m", "rocketq", "--log-level", _BROKER_LOG_LEVEL, "broker", "-n", namesrv,
                "listenHost=127.0.0.1", f"listenPort={self.port}", f"haListenPort={self.ha_port}",
                "fastListenPortEnable=false", f"storePathRootDir={store}", *settings]  # fmt: skip
        super().__init__(argv, _BROKER, log_path)

    def _addr(self, m: re.Match[bytes]) -> str:
        return m.group(1).decode()

    async def start(self, timeout: float = 30.0) -> str:
        """As ``ServerProcess.start``; a first start that fails (a chosen port taken meanwhile by someone else)
        is tried again on two other ports, twice at most. A restart keeps its ports."""
        for attempt in range(3):
            try:
                return await super().start(timeout)
            except RuntimeError:
                if self.addr or attempt == 2:
                    raise
                old = (f"listenPort={self.port}", f"haListenPort={self.ha_port}")
                self.port, self.ha_port = free_ports(2)
                for i, a in enumerate(self.argv):
                    if a in old:
                        self.argv[i] = a.split("=")[0] + f"={self.port if a == old[0] else self.ha_port}"
        raise AssertionError("unreachable")


#: a controller-mode broker's intervals, shrunk for tests and benchmarks (Java: 1 s heartbeats, 5 s polls, 10 s
#: controller timeout); the HA keep-alives and the slave's reconnect pause too
FAST_CONTROLLER_MODE = ("brokerHeartbeatInterval=200", "syncBrokerMetadataPeriod=300", "checkSyncStateSetPeriod=200",
                        "controllerHeartBeatTimeoutMills=1000", "haSendHeartbeatInterval=200",
                        "haReconnectInterval=100", "registerNameServerPeriod=1000", "slaveTimeout=2000",
                        "mappedFileSizeCommitLog=1048576", "mappedFileSizeConsumeQueue=6000",
                        "autoCreateTopicEnable=true")  # fmt: skip


class ControllerGroup:
    """A name server with the embedded controller and ``replicas`` brokers of one group in controller mode, each
    a separate process (so a kill is a real ``kill -9``). ``master()`` asks the controller who leads."""

    def __init__(self, base: Path, *settings: str, replicas: int = 2, broker_name: str = "fo-a") -> None:
        self.base = base
        self.broker_name = broker_name
        self.settings = settings
        self.replicas = replicas
        self.namesrv = NamesrvProcess(base / "namesrv", "enableControllerInNamesrv=true",
                                      "scanNotActiveBrokerInterval=1000", log_path=base / "namesrv.log")  # fmt: skip
        self.brokers: list[BrokerProcess] = []

    async def start(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)  # the log files live there
        ns = await self.namesrv.start()
        for i in range(self.replicas):
            b = BrokerProcess(self.base / f"broker{i}", ns, f"brokerName={self.broker_name}",
                              "enableControllerMode=true", f"controllerAddr={ns}", "brokerRole=SYNC_MASTER",
                              *FAST_CONTROLLER_MODE, *self.settings, log_path=self.base / f"broker{i}.log")  # fmt: skip
            self.brokers.append(b)
            await b.start()  # one after the other: the first asks for the election and wins it

    async def stop(self) -> None:
        for p in (*self.brokers, self.namesrv):
            await p.stop()

    def by_addr(self, addr: str | None) -> BrokerProcess | None:
        return next((b for b in self.brokers if b.addr == addr), None)
