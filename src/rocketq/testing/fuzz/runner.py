"""Throw frames at a running name server and broker, and measure what happens.

The run goes in rounds of ``probe_every`` frames. A round's frames are grouped into *sessions* (one fresh
connection each, 1..``session_max`` frames written back to back, ending early at a frame after which the
server must close the connection or is left waiting for the rest of a frame); ``workers`` sessions run at
once. After each round: is the server process still alive (a crash), does a fresh connection still get
answers from both servers within ``probe_timeout`` (a hang), what did the log gain (ERROR lines,
tracebacks), how much memory does the process hold. The run stops after ``frames`` frames, after
``max_seconds``, at a crash or at a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand, decode_frame
from rocketq.protocol.frame import FrameDecoder
from rocketq.remoting.client import RemotingClient, split_addr
from rocketq.testing.fuzz.frames import BROKER, NAMESRV, Frame, FrameFactory
from rocketq.testing.fuzz.logscan import LogScanner, Site
from rocketq.testing.fuzz.pools import build_pools

#: frames kept to name the request behind a logged traceback (by opaque); bigger frames are not kept
_RECENT = 50_000
_RECENT_MAX_BYTES = 16 * 1024


@dataclass(slots=True)
class FuzzConfig:
    frames: int
    seed: int = 19
    max_seconds: float | None = None
    workers: int = 8
    probe_every: int = 2_000
    probe_timeout: float = 60.0
    answer_timeout: float = 10.0
    session_max: int = 32
    #: the share of sessions sent to the name server (the rest go to the broker)
    namesrv_share: float = 0.3
    excluded: Collection[str] = ()
    #: the server is killed when its resident memory passes this (a runaway must not take the machine down)
    max_rss: int = 2 * 1024**3


@dataclass(slots=True)
class Target:
    """The servers under test: their addresses, the process to watch, its log, and a topic that exists."""

    namesrv_addr: str
    broker_addr: str
    pid: int
    log_path: Path
    probe_topic: str
    alive: Callable[[], bool]
    kill: Callable[[], None]


@dataclass(slots=True)
class FuzzReport:
    frames: int = 0
    requests: int = 0
    mutated: int = 0
    garbage: int = 0
    connections: int = 0
    connect_failures: int = 0
    answers: int = 0
    answers_due: int = 0
    #: sessions that ended with a frame the server must refuse by closing the connection …
    closes_due: int = 0
    #: … and of those, the ones it did not close within ``answer_timeout``
    not_closed: int = 0
    #: sessions the server closed although no frame in them was malformed
    unexpected_closes: int = 0
    probes: int = 0
    hangs: int = 0
    probe_failures: list[str] = field(default_factory=list)
    crashed: bool = False
    #: the run killed the server because its memory passed ``max_rss``
    killed_for_memory: bool = False
    tracebacks: int = 0
    error_lines: int = 0
    #: ERROR lines that follow from an admin request the fuzzer may legitimately send (logscan.OPERATIONAL_ERRORS)
    operational_errors: int = 0
    sites: dict[str, Site] = field(default_factory=dict)
    reproducers: dict[str, str] = field(default_factory=dict)
    rss_before: int = 0
    rss_after: int = 0
    rss_max: int = 0
    seconds: float = 0.0

    @property
    def crashes(self) -> int:
        return int(self.crashed)

    def summary(self) -> str:
        mib = 1024 * 1024
        lines = [
            f"frames        {self.frames} ({self.requests} requests, {self.mutated} mutated, {self.garbage} garbage)",
            f"connections   {self.connections} (connect failures {self.connect_failures})",
            f"answers       {self.answers} of {self.answers_due} due; refusing closes "
            f"{self.closes_due - self.not_closed} of {self.closes_due} due; unexpected closes {self.unexpected_closes}",
            f"crashes       {self.crashes}" + (" (killed: memory above the cap)" if self.killed_for_memory else ""),
            f"hangs         {self.hangs} (probes {self.probes}, failed {len(self.probe_failures)})",
            f"tracebacks    {self.tracebacks} ({len(self.sites)} sites); ERROR lines {self.error_lines} "
            f"(and {self.operational_errors} after admin changes)",
            f"RSS           before {self.rss_before / mib:.0f} MiB, after {self.rss_after / mib:.0f} MiB, "
            f"max {self.rss_max / mib:.0f} MiB",
            f"wall time     {self.seconds:.0f} s ({self.frames / max(self.seconds, 1e-9):.0f} frames/s)",
        ]
        for failure in self.probe_failures[:10]:
            lines.append(f"probe failure: {failure}")
        for key, site in sorted(self.sites.items(), key=lambda kv: -kv[1].count):
            lines.append(f"site ×{site.count}: {key}")
            lines.append(f"    {site.exception}")
            lines += [f"    at {f}" for f in site.frames]
            if site.error_line:
                lines.append(f"    log: {site.error_line}")
            if key in self.reproducers:
                lines.append(f"    frame: {self.reproducers[key]}")
        return "\n".join(lines)


def rss_of(pid: int) -> int:
    """Resident memory of ``pid`` in bytes (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def describe(data: bytes) -> str:
    """A reproducer: the frame as a Python bytes literal (cut at 2 KB), and what it decodes to."""
    text = repr(data[:2048]) + (f" … ({len(data)} bytes)" if len(data) > 2048 else "")
    try:
        cmd = decode_frame(data[4:])
    except Exception:  # any frame is described, even one the decoder refuses
        return text
    ext = {k: (v if len(v) <= 80 else f"{v[:40]}…({len(v)})") for k, v in cmd.ext_fields.items()}
    return f"{text}\n      = code {cmd.code} flag {cmd.flag} ext {ext} body {bytes(cmd.body[:80])!r}"


class FuzzRunner:
    def __init__(self, target: Target, config: FuzzConfig) -> None:
        self.target = target
        self.config = config
        self.report = FuzzReport()
        self.rng = random.Random(config.seed)
        self.factory = FrameFactory(self.rng, build_pools(config.seed), config.excluded)
        self.scanner = LogScanner(target.log_path)
        self._recent: OrderedDict[int, bytes] = OrderedDict()
        self._stalled = False

    async def run(self) -> FuzzReport:
        report = self.report
        start = time.monotonic()
        self.scanner.scan()  # start-up lines are not the fuzzer's doing
        self.scanner.error_lines = self.scanner.tracebacks = self.scanner.operational_errors = 0
        self.scanner.sites.clear()
        report.rss_before = report.rss_max = rss_of(self.target.pid)
        watchdog = asyncio.ensure_future(self._watch_memory())
        try:
            await self._rounds(start)
        finally:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog
        await asyncio.sleep(0.5)  # let the last log lines land
        self._scan_log()
        report.rss_after = rss_of(self.target.pid)
        report.rss_max = max(report.rss_max, report.rss_after)
        report.seconds = time.monotonic() - start
        return report

    async def _rounds(self, start: float) -> None:
        cfg, report = self.config, self.report
        while report.frames < cfg.frames:
            if cfg.max_seconds is not None and time.monotonic() - start > cfg.max_seconds:
                break
            await self._round(min(cfg.probe_every, cfg.frames - report.frames))
            report.rss_max = max(report.rss_max, rss_of(self.target.pid))
            if not self.target.alive():
                report.crashed = True
                break
            await self._probe()
            self._scan_log()
            if not self.target.alive():
                report.crashed = True
                break
            if report.hangs:  # every later session would only wait out its timeout
                break

    async def _watch_memory(self) -> None:
        report = self.report
        while self.target.alive():
            rss = rss_of(self.target.pid)
            report.rss_max = max(report.rss_max, rss)
            if rss > self.config.max_rss:
                report.killed_for_memory = True
                self.target.kill()
                return
            await asyncio.sleep(0.25)

    # ------------------------------------------------------------------------------------------ rounds

    def _sessions(self, n: int) -> list[tuple[str, list[Frame]]]:
        rng, cfg = self.rng, self.config
        sessions: list[tuple[str, list[Frame]]] = []
        made = 0
        while made < n:
            target = NAMESRV if rng.random() < cfg.namesrv_share else BROKER
            frames: list[Frame] = []
            for _ in range(min(rng.randint(1, cfg.session_max), n - made)):
                frame = self.factory.frame(target)
                frames.append(frame)
                if frame.opaque is not None and len(frame.data) <= _RECENT_MAX_BYTES:
                    self._recent[frame.opaque] = frame.data
                    self._recent.move_to_end(frame.opaque)
                    if len(self._recent) > _RECENT:
                        self._recent.popitem(last=False)
                if frame.ends_session:
                    break
            made += len(frames)
            sessions.append((target, frames))
        return sessions

    async def _round(self, n: int) -> None:
        queue: asyncio.Queue[tuple[str, list[Frame]]] = asyncio.Queue()
        for session in self._sessions(n):
            queue.put_nowait(session)

        self._stalled = False

        async def worker() -> None:
            # a session that got none of its answers may mean a hung server: the probe decides, without
            # every other session of the round waiting out its timeout first
            while not queue.empty() and not self._stalled:
                await self._session(*queue.get_nowait())

        await asyncio.gather(*(worker() for _ in range(self.config.workers)))

    async def _session(self, target: str, frames: list[Frame]) -> None:
        report = self.report
        for f in frames:
            report.frames += 1
            if f.kind == "request":
                report.requests += 1
            elif f.kind == "mutated":
                report.mutated += 1
            else:
                report.garbage += 1
        host, port = split_addr(self.target.namesrv_addr if target == NAMESRV else self.target.broker_addr)
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            report.connect_failures += 1
            return
        report.connections += 1
        due = sum(f.answers for f in frames)
        must_close = frames[-1].closes
        report.answers_due += due
        report.closes_due += must_close
        decoder = FrameDecoder(max_frame_size=1 << 30)  # answers may be large (every topic, every group)
        got = 0
        closed = False
        try:
            writer.write(b"".join(f.data for f in frames))
            async with asyncio.timeout(self.config.answer_timeout):
                await writer.drain()
                while got < due or must_close:
                    data = await reader.read(1 << 16)
                    if not data:
                        closed = True
                        break
                    got += len(decoder.feed(data))
        except TimeoutError:
            pass
        except OSError:  # reset by the server while we were still writing
            closed = True
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        report.answers += got
        if due and not got and not closed:
            self._stalled = True
        if must_close and not closed:
            report.not_closed += 1
        if closed and not must_close and got < due:
            report.unexpected_closes += 1

    # ------------------------------------------------------------------------------------------ checks

    async def _probe(self) -> None:
        """A request to each server on a fresh connection must be answered: otherwise the server hangs."""
        report, timeout = self.report, self.config.probe_timeout
        report.probes += 1
        topic = self.target.probe_topic
        checks = (
            (self.target.broker_addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET,
                                                              {"topic": topic, "queueId": "0"})),
            (self.target.namesrv_addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})),
        )  # fmt: skip
        client = RemotingClient()
        try:
            for addr, cmd in checks:
                try:
                    resp = await client.invoke(addr, cmd, timeout=timeout)
                except TimeoutError:
                    report.hangs += 1
                    report.probe_failures.append(f"after {report.frames} frames: code {cmd.code} to {addr} "
                                                 f"not answered within {timeout:.0f} s")  # fmt: skip
                    continue
                except OSError as exc:
                    report.probe_failures.append(f"after {report.frames} frames: code {cmd.code}: {exc!r}")
                    continue
                if resp.code != ResponseCode.SUCCESS:
                    report.probe_failures.append(f"after {report.frames} frames: code {cmd.code} answered "
                                                 f"{resp.code} {resp.remark}")  # fmt: skip
        finally:
            await client.close()

    def _scan_log(self) -> None:
        for site in self.scanner.scan():
            data = self._recent.get(site.opaque) if site.opaque is not None else None
            if data is not None:
                self.report.reproducers[site.key] = describe(data)
        self.report.tracebacks = self.scanner.tracebacks
        self.report.error_lines = self.scanner.error_lines
        self.report.operational_errors = self.scanner.operational_errors
        self.report.sites = self.scanner.sites
