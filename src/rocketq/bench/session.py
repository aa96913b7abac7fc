"""One ``rocketq bench`` run: the options every command takes, the cluster a scenario runs against, the same-run
baselines (disk, bare echo) and the pieces every scenario uses (topics, CPU per message, the result's frame).

``send_frame_sizes``/``pull_frame_sizes`` give the request and answer sizes of a send or a pull, so the echo
baseline exchanges frames of the same sizes as the scenario it is compared with.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import struct
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, fields
from typing import Any

from rocketq.bench.broker import BrokerProcess, RssSample, read_rss, self_cpu_seconds
from rocketq.bench.disk import measure_disk
from rocketq.bench.echo import cpu_seconds, measure_echo
from rocketq.bench.load import Counter
from rocketq.bench.report import Baseline, Report, ScenarioResult
from rocketq.bench.stats import throughput
from rocketq.client import AdminClient, ClientConfig, SessionCredentials
from rocketq.codes import RequestCode
from rocketq.protocol.command import RemotingCommand, encode
from rocketq.protocol.message import BatchItem, encode_batch, encode_properties, record_size

__all__ = [
    "ASYNC_FLUSH",
    "SYNC_FLUSH",
    "Cluster",
    "CommonOptions",
    "CpuMeter",
    "Session",
    "command_line",
    "create_topics",
    "finish_result",
    "new_result",
    "pull_frame_sizes",
    "run_id",
    "send_frame_sizes",
    "stamp_body",
    "uniq_key",
]

log = logging.getLogger("rocketq.bench")

ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"
STAMP = struct.Struct(">qq")  # sequence number (-1: warm-up), perf_counter_ns at send


# ------------------------------------------------------------------------------------------------ options


@dataclass(slots=True)
class CommonOptions:
    """Options every bench command takes: where the broker is, what to print."""

    namesrv: str | None = None  # -n; None = --embedded
    broker_pid: int | None = None  # with -n: the broker's process on this machine (CPU per message, RSS)
    broker_opts: dict[str, str] = field(default_factory=dict)
    progress: bool = True
    baselines: bool = True
    baseline_duration: float = 2.0
    gc_freeze: bool = True  # gc.freeze() the load generator's heap before each measurement
    #: with -n: the ACL account the scenarios sign with when they run with ACL (--access-key/--secret-key)
    credentials: SessionCredentials | None = None

    @property
    def embedded(self) -> bool:
        return self.namesrv is None

    def target_args(self) -> list[str]:
        freeze = [] if self.gc_freeze else ["--no-gc-freeze"]
        if self.namesrv is not None:
            pid = [] if self.broker_pid is None else ["--broker-pid", str(self.broker_pid)]
            return ["-n", self.namesrv, *pid, *freeze]
        return ["--embedded", *(f"--broker-opt {k}={v}" for k, v in self.broker_opts.items()), *freeze]


def command_line(sub: str, spec: Any, common: CommonOptions, defaults: Any = None) -> str:
    """The ``rocketq bench`` command line that reproduces ``spec`` (options left at their defaults are omitted)."""
    defaults = defaults if defaults is not None else type(spec)()
    args = ["rocketq", "bench", sub]
    for f in fields(spec):
        value = getattr(spec, f.name)
        if value == getattr(defaults, f.name) and f.name != "mode":
            continue
        opt = "--" + f.name.replace("_", "-")
        if isinstance(value, bool):
            if value:
                args.append(opt)
        elif value is not None:
            args += [opt, str(value)]
    return " ".join(args + common.target_args())


# ------------------------------------------------------------------------------------------------ session

#: the one account of an embedded broker run with ACL (``--acl``): an admin, so topic creation passes too
BENCH_ACCOUNT = SessionCredentials("rocketq-bench", "rocketq-bench-secret")


def bench_acl_yaml() -> str:
    return ("accounts:\n"
            f"  - accessKey: {BENCH_ACCOUNT.access_key}\n"
            f"    secretKey: {BENCH_ACCOUNT.secret_key}\n"
            "    admin: true\n")  # fmt: skip



@dataclass(slots=True)
class Cluster:
    namesrv_addr: str
    broker: BrokerProcess | None  # None: a running cluster given with -n
    flush: str  # what the broker was started with, or "as configured"
    broker_pid: int | None = None  # -n with --broker-pid: a broker process this machine can read /proc of
    credentials: SessionCredentials | None = None  # ACL: every client of the scenario signs with this account

    def client_config(self) -> ClientConfig:
        c = self.credentials
        return ClientConfig(namesrv_addr=self.namesrv_addr, access_key=c.access_key if c else None,
                            secret_key=c.secret_key if c else None,
                            security_token=c.security_token if c else None)  # fmt: skip

    @property
    def pid(self) -> int | None:
        """The broker process whose CPU and memory the scenarios read (None: not known)."""
        return self.broker.pid if self.broker is not None else self.broker_pid

    def cpu(self) -> float | None:
        return cpu_seconds(self.pid)

    def rss(self) -> RssSample | None:
        pid = self.pid
        return read_rss(pid) if pid is not None else None


class Session:
    """One ``rocketq bench`` run: its report, the brokers it started, the baselines it measured."""

    def __init__(self, common: CommonOptions, report: Report) -> None:
        self.common = common
        self.report = report
        self._brokers: dict[str, BrokerProcess] = {}
        self._echo: dict[tuple[int, int, int], Baseline] = {}
        self._disk_done = False

    @contextlib.asynccontextmanager
    async def cluster(self, flush: str, *, fresh: bool = False, acl: bool = False) -> AsyncIterator[Cluster]:
        """The cluster a scenario runs against. Embedded brokers are shared per flush mode (and ACL) unless
        ``fresh``. ``acl``: the embedded broker runs with aclEnable=true and one admin account, which the
        scenario's clients sign with (with -n: the account of --access-key/--secret-key)."""
        if self.common.namesrv is not None:
            creds = self.common.credentials if acl else None
            if acl and creds is None:
                raise ValueError("--acl with -n needs the account: --access-key/--secret-key (or the environment)")
            yield Cluster(self.common.namesrv, None, "as configured on the broker", self.common.broker_pid, creds)
            return
        creds = BENCH_ACCOUNT if acl else None
        key = f"{flush}+acl" if acl else flush
        if fresh:
            broker = await self._start_broker(flush, acl)
            try:
                await self._measure_disk(broker)
                yield Cluster(broker.namesrv_addr, broker, flush, credentials=creds)
            finally:
                await broker.stop()
            return
        broker_or_none = self._brokers.get(key)
        if broker_or_none is None:
            broker_or_none = await self._start_broker(flush, acl)
            self._brokers[key] = broker_or_none
            await self._measure_disk(broker_or_none)
        yield Cluster(broker_or_none.namesrv_addr, broker_or_none, flush, credentials=creds)

    async def _start_broker(self, flush: str, acl: bool) -> BrokerProcess:
        options = dict(self.common.broker_opts)
        broker = BrokerProcess(flush=flush, options=options)
        if acl:
            acl_file = broker.base_dir / "plain_acl.yml"
            acl_file.parent.mkdir(parents=True, exist_ok=True)
            acl_file.write_text(bench_acl_yaml())
            options.update({"aclEnable": "true", "aclFilePath": str(acl_file)})
            broker.options = options
        return await broker.start()

    async def release(self, flush: str) -> None:
        broker = self._brokers.pop(flush, None)
        if broker is not None:
            await broker.stop()

    async def close(self) -> None:
        for flush in list(self._brokers):
            await self.release(flush)

    async def _measure_disk(self, broker: BrokerProcess | None) -> None:
        if self._disk_done or not self.common.baselines:
            return
        self._disk_done = True
        directory = str(broker.store_dir) if broker is not None else os.environ.get("TMPDIR", "/tmp")
        await self.disk_baseline(directory)

    async def disk_baseline(self, directory: str) -> None:
        r = await asyncio.to_thread(measure_disk, directory)
        self.report.add_baseline(
            Baseline("disk-seq-write", "disk: sequential write, 1 MiB writes, one fdatasync", r.seq_write_mb_per_s,
                     "MB/s", {"directory": r.directory})
        )  # fmt: skip
        self.report.add_baseline(
            Baseline("disk-sync-1m", "disk: write + fdatasync per 1 MiB", r.sync_1m_mb_per_s, "MB/s")
        )
        lat = r.fdatasync_4k_latency
        self.report.add_baseline(
            Baseline("disk-fdatasync-4k", "disk: 4 KiB write + fdatasync", r.fdatasync_4k_per_s, "fsync/s",
                     {"latency_ms": lat.to_dict() if lat else None})
        )  # fmt: skip

    async def echo_baseline(self, request_size: int, reply_size: int, inflight: int) -> Baseline | None:
        if not self.common.baselines:
            return None
        key = (request_size, reply_size, inflight)
        cached = self._echo.get(key)
        if cached is not None:
            return cached
        r = await measure_echo(request_size, reply_size, inflight, self.common.baseline_duration)
        name = f"echo-{inflight}x{request_size}B/{reply_size}B"
        b = Baseline(
            name,
            f"bare asyncio request/response, {inflight} in flight, {request_size} B requests, {reply_size} B replies",
            r.requests_per_s,
            "req/s",
            {
                "inflight": inflight,
                "request_bytes": request_size,
                "reply_bytes": reply_size,
                "latency_ms": r.latency.to_dict() if r.latency else None,
                "server_cpu_us_per_request": r.server_cpu_us_per_request,
            },
        )
        self._echo[key] = self.report.add_baseline(b)
        return b


# --------------------------------------------------------------------------------------------- frame sizes


def uniq_key(i: int) -> str:
    return f"7F0000010000{i:020X}"


def send_frame_sizes(body: int, batch: int = 1, topic: str = "BenchTopic-0000") -> tuple[int, int]:
    """(request, response) frame sizes of a SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE as the SDK sends them.

    An independent copy of the V2 layout: the client's builder is private to ``rocketq.client`` (bench may use
    only its face). It writes each properties text with a trailing 0x02, 1 byte more than the SDK's per message.
    """
    props = encode_properties({"UNIQ_KEY": uniq_key(0), "WAIT": "true"})
    if batch > 1:
        items = [BatchItem(0, bytes(body), {"UNIQ_KEY": uniq_key(i), "WAIT": "true"}) for i in range(batch)]
        payload = encode_batch(items)
    else:
        payload = bytes(body)
    ext = {
        "a": "bench-producer", "b": topic, "c": "TBW102", "d": "4", "e": "3", "f": "0",
        "g": str(int(time.time() * 1000)), "h": "0", "i": "WAIT\x01true" if batch > 1 else props, "j": "0",
        "k": "false", "m": str(batch > 1).lower(), "n": "broker-a",
    }  # fmt: skip
    request = len(encode(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, payload)))
    reply_ext = {"msgId": ",".join([uniq_key(0)] * batch), "queueId": "3", "queueOffset": "1234567",
                 "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}  # fmt: skip
    reply = len(encode(RemotingCommand(code=0, flag=1, ext_fields=reply_ext)))
    return request, reply


def pull_frame_sizes(body: int, batch: int, topic: str = "BenchDrain-0000") -> tuple[int, int]:
    props = len(encode_properties({"UNIQ_KEY": uniq_key(0), "WAIT": "true", "CLUSTER": "DefaultCluster"}).encode())
    records = batch * record_size(body, len(topic), props)
    ext = {
        "consumerGroup": "bench-consumer", "topic": topic, "queueId": "3", "queueOffset": "123456",
        "maxMsgNums": str(batch), "sysFlag": "2", "commitOffset": "123000", "suspendTimeoutMillis": "20000",
        "subscription": "*", "subVersion": "0", "expressionType": "TAG",
    }  # fmt: skip
    request = len(encode(RemotingCommand.request(RequestCode.PULL_MESSAGE, ext)))
    reply_ext = {"suggestWhichBrokerId": "0", "nextBeginOffset": "123488", "minOffset": "0", "maxOffset": "1000000"}
    reply = len(encode(RemotingCommand(code=0, flag=1, ext_fields=reply_ext, remark="FOUND"))) + records
    return request, reply


# ------------------------------------------------------------------------------------------------ helpers


def run_id() -> str:
    return uuid.uuid4().hex[:8]


async def create_topics(
    namesrv: str, names: list[str], queues: int, credentials: SessionCredentials | None = None
) -> None:
    """Create the topics on every cluster's masters, once the name server knows a broker (a broker that has
    just printed its address may not have registered yet)."""
    c = credentials
    config = ClientConfig(namesrv_addr=namesrv, access_key=c.access_key if c else None,
                          secret_key=c.secret_key if c else None)  # fmt: skip
    async with AdminClient(config=config) as admin:
        deadline = time.perf_counter() + 30
        while True:
            clusters = sorted((await admin.cluster_info()).get("clusterAddrTable") or {})
            if clusters or time.perf_counter() > deadline:
                break
            await asyncio.sleep(0.1)
        if not clusters:
            raise RuntimeError(f"no broker registered with the name server {namesrv}")
        for name in names:
            for cluster in clusters:
                await admin.create_topic(name, cluster=cluster, read_queue_nums=queues, write_queue_nums=queues)


def stamp_body(seq: int, size: int) -> bytes:
    head = STAMP.pack(seq, time.perf_counter_ns())
    return head + bytes(max(0, size - len(head)))


class CpuMeter:
    """Broker and load-generator CPU over a measurement, reported as µs per message.

    Created right before a measurement, so it also freezes the load generator's heap (``gc.freeze()``, unless
    ``--no-gc-freeze``): everything allocated so far — modules, clients, routes — leaves the collector's
    generations. Profiling showed full collections walking that heap over and over while 1,000 sends were in
    flight (0.9 s of GC in a 7 s async run, 14 % of the client's CPU); an application would do the same after
    its start-up (docs/performance.md).
    """

    def __init__(self, cluster: Cluster, common: CommonOptions) -> None:
        if common.gc_freeze:
            gc.collect()
            gc.freeze()
        self.cluster = cluster
        self.broker0 = cluster.cpu()
        self.self0 = self_cpu_seconds()

    def fill(self, result: ScenarioResult, messages: int) -> None:
        if messages <= 0:
            return
        b1 = self.cluster.cpu()
        if self.broker0 is not None and b1 is not None:
            result.extra["broker_cpu_us_per_msg"] = round((b1 - self.broker0) / messages * 1e6, 2)
        result.extra["client_cpu_us_per_msg"] = round((self_cpu_seconds() - self.self0) / messages * 1e6, 2)
        with contextlib.suppress(OSError):  # other work on the machine skews every figure: say how much there was
            result.extra["loadavg_1m"] = round(os.getloadavg()[0], 2)


def new_result(name: str, spec: Any, sub: str, common: CommonOptions, cluster: Cluster) -> ScenarioResult:
    params = {f.name: getattr(spec, f.name) for f in fields(spec)}
    params["flush"] = cluster.flush
    return ScenarioResult(name=name, title=spec.title(), command=command_line(sub, spec, common), params=params,
                          targets=spec.targets())  # fmt: skip


def finish_result(result: ScenarioResult, counter: Counter, seconds: float, body: int) -> None:
    if counter.done and seconds > 0:
        result.throughput = throughput(counter.done, seconds, body)
    result.latency = counter.latencies.summary()
    result.errors = counter.errors
    if counter.skipped:
        result.extra["skipped_ops"] = counter.skipped
        result.notes.append(f"{counter.skipped:,} operations skipped: the broker fell behind the requested rate")
    if counter.first_error is not None:
        result.notes.append(f"first error: {type(counter.first_error).__name__}: {counter.first_error}")
