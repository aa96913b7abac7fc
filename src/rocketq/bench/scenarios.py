"""The scenarios of ``rocketq bench``: produce, consume, e2e, memory, and the standard set of the performance issue.

Each scenario is a spec (a frozen dataclass whose fields are the command-line options) plus an ``async run_*``
that measures it against a ``Session``'s cluster and returns a ``ScenarioResult``. The load runs in this process
through the public client SDK (``rocketq.client``) — the client's per-message cost is part of every figure, as it
is for anyone using rocketq. ``--client raw`` on ``produce`` drives the remoting layer directly instead, to
separate the broker's cost from the SDK's.

With ``--embedded`` the broker is a child process (see ``rocketq.bench.broker``), so broker and load generator
each get a core of a 2-core machine; its CPU time is read around every measurement and reported per message.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import logging
import os
import statistics
import struct
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, fields
from typing import Any

from rocketq.bench.broker import BrokerProcess, RssSample, self_cpu_seconds
from rocketq.bench.disk import measure_disk
from rocketq.bench.echo import measure_echo
from rocketq.bench.load import Counter, run_rate, run_window
from rocketq.bench.progress import Progress
from rocketq.bench.report import Baseline, Report, ScenarioResult, Target
from rocketq.bench.stats import throughput
from rocketq.client import (
    AdminClient,
    ConsumeFromWhere,
    LitePullConsumer,
    Message,
    Producer,
    PushConsumer,
)
from rocketq.codes import RequestCode
from rocketq.protocol.command import RemotingCommand, encode
from rocketq.protocol.message import BatchItem, encode_batch, encode_properties, record_size
from rocketq.remoting.client import RemotingClient

__all__ = [
    "CommonOptions",
    "ConsumeSpec",
    "E2ESpec",
    "MemorySpec",
    "ProduceSpec",
    "Session",
    "StandardSpec",
    "run_consume",
    "run_e2e",
    "run_memory",
    "run_produce",
    "run_standard",
]

log = logging.getLogger("rocketq.bench")

ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"
_STAMP = struct.Struct(">qq")  # sequence number (-1: warm-up), perf_counter_ns at send


# ------------------------------------------------------------------------------------------------ options


@dataclass(slots=True)
class CommonOptions:
    """Options every bench command takes: where the broker is, what to print."""

    namesrv: str | None = None  # -n; None = --embedded
    broker_opts: dict[str, str] = field(default_factory=dict)
    progress: bool = True
    baselines: bool = True
    baseline_duration: float = 2.0
    gc_freeze: bool = True  # gc.freeze() the load generator's heap before each measurement

    @property
    def embedded(self) -> bool:
        return self.namesrv is None

    def target_args(self) -> list[str]:
        freeze = [] if self.gc_freeze else ["--no-gc-freeze"]
        if self.namesrv is not None:
            return ["-n", self.namesrv, *freeze]
        return ["--embedded", *(f"--broker-opt {k}={v}" for k, v in self.broker_opts.items()), *freeze]


def _command(sub: str, spec: Any, common: CommonOptions, defaults: Any = None) -> str:
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


@dataclass(frozen=True, slots=True)
class ProduceSpec:
    mode: str = "async"  # sync | async | oneway | batch
    inflight: int | None = None  # default: 1 (sync), 1000 (async), 32 (batch)
    batch: int = 32
    body: int = 1024
    topics: int = 1
    queues: int = 8
    count: int | None = None
    duration: float | None = 10.0
    warmup: float = 1.0
    flush: str = ASYNC_FLUSH
    client: str = "sdk"  # sdk | raw

    @property
    def effective_inflight(self) -> int:
        if self.inflight is not None:
            return self.inflight
        return {"sync": 1, "async": 1000, "batch": 32, "oneway": 1}[self.mode]

    @property
    def per_op(self) -> int:
        return self.batch if self.mode == "batch" else 1

    def title(self) -> str:
        what = {
            "sync": "produce, wait for each ack",
            "async": f"produce async, {self.effective_inflight:,} in flight, 1 msg/request",
            "batch": f"produce batch of {self.batch}, {self.effective_inflight} batches in flight",
            "oneway": "produce oneway",
        }[self.mode]
        extras = [f"{self.body} B"]
        if self.flush != ASYNC_FLUSH:
            extras.append(self.flush)
        if self.client != "sdk":
            extras.append(f"{self.client} client")
        return f"{what} ({', '.join(extras)})"

    def targets(self) -> list[Target]:
        if self.body != 1024 or self.client != "sdk":
            return []
        if self.flush == SYNC_FLUSH:
            wanted = self.mode == "async" and self.effective_inflight >= 1000
            return [Target("msgs_per_s", ">=", 20_000)] if wanted else []
        if self.mode == "sync":
            return [Target("msgs_per_s", ">=", 6_000), Target("latency_p99_ms", "<=", 1.0)]
        if self.mode == "async" and self.effective_inflight >= 1000:
            return [Target("msgs_per_s", ">=", 60_000)]
        if self.mode == "batch" and self.batch == 32:
            return [Target("msgs_per_s", ">=", 150_000)]
        return []


@dataclass(frozen=True, slots=True)
class ConsumeSpec:
    mode: str = "lite-pull"  # lite-pull | push
    backlog: int = 1_000_000  # messages stored before the consumer starts; 0 with --live
    live: bool = False  # consume while a producer sends (``count`` messages, async, 1000 in flight)
    count: int = 200_000  # messages produced during a --live run
    pull_batch: int = 32
    body: int = 1024
    queues: int = 8
    flush: str = ASYNC_FLUSH

    def title(self) -> str:
        if self.live:
            return f"consume live ({self.mode}, {self.count:,} messages while producing, {self.body} B)"
        return f"drain {self.backlog:,} stored messages ({self.mode}, {self.pull_batch}/pull, {self.body} B)"

    def targets(self) -> list[Target]:
        if not self.live and self.backlog >= 1_000_000 and self.body == 1024:
            return [Target("msgs_per_s", ">=", 150_000)]
        return []


@dataclass(frozen=True, slots=True)
class E2ESpec:
    rate: float = 5000.0
    duration: float = 30.0
    body: int = 1024
    queues: int = 8
    warmup: float = 2.0
    mode: str = "push"  # push | lite-pull

    def title(self) -> str:
        return f"end-to-end latency at {self.rate:,.0f} msg/s ({self.mode}, {self.body} B)"

    def targets(self) -> list[Target]:
        return [Target("latency_p99_ms", "<=", 5.0)] if self.rate == 5000 else []


@dataclass(frozen=True, slots=True)
class MemorySpec:
    rate: float = 50_000.0
    duration: float = 600.0
    batch: int = 32
    body: int = 1024
    queues: int = 8
    sample_interval: float = 1.0
    mode: str = "batch"

    def title(self) -> str:
        return f"broker RSS over {self.duration:,.0f} s at {self.rate:,.0f} msg/s (batches of {self.batch})"

    def targets(self) -> list[Target]:
        return [Target("rss_drift_pct", "<=", 10.0)] if self.duration >= 600 and self.rate >= 50_000 else []


@dataclass(frozen=True, slots=True)
class StandardSpec:
    """The performance issue's scenario list. ``quick`` shrinks durations and sizes (a smoke run)."""

    quick: bool = False
    skip: tuple[str, ...] = ()
    soak: float | None = None  # memory scenario duration override

    def scenarios(self) -> list[tuple[str, Any]]:
        q = self.quick
        d = 3.0 if q else 10.0
        items: list[tuple[str, Any]] = [
            ("produce-sync", ProduceSpec(mode="sync", duration=d)),
            ("produce-async", ProduceSpec(mode="async", duration=d)),
            ("produce-batch", ProduceSpec(mode="batch", duration=d)),
            ("drain", ConsumeSpec(backlog=100_000 if q else 1_000_000, pull_batch=128)),
            ("produce-sync-flush", ProduceSpec(mode="async", duration=d, flush=SYNC_FLUSH)),
            ("e2e", E2ESpec(duration=5.0 if q else 30.0)),
            ("memory", MemorySpec(duration=self.soak or (20.0 if q else 600.0))),
        ]
        return [(name, spec) for name, spec in items if name not in self.skip]


# ------------------------------------------------------------------------------------------------ session


@dataclass(slots=True)
class Cluster:
    namesrv_addr: str
    broker: BrokerProcess | None  # None: a running cluster given with -n
    flush: str  # what the broker was started with, or "as configured"

    def cpu(self) -> float | None:
        return self.broker.cpu_seconds() if self.broker is not None else None


class Session:
    """One ``rocketq bench`` run: its report, the brokers it started, the baselines it measured."""

    def __init__(self, common: CommonOptions, report: Report) -> None:
        self.common = common
        self.report = report
        self._brokers: dict[str, BrokerProcess] = {}
        self._echo: dict[tuple[int, int, int], Baseline] = {}
        self._disk_done = False

    @contextlib.asynccontextmanager
    async def cluster(self, flush: str, *, fresh: bool = False) -> AsyncIterator[Cluster]:
        """The cluster a scenario runs against. Embedded brokers are shared per flush mode unless ``fresh``."""
        if self.common.namesrv is not None:
            yield Cluster(self.common.namesrv, None, "as configured on the broker")
            return
        if fresh:
            broker = await BrokerProcess(flush=flush, options=self.common.broker_opts).start()
            try:
                await self._measure_disk(broker)
                yield Cluster(broker.namesrv_addr, broker, flush)
            finally:
                await broker.stop()
            return
        broker_or_none = self._brokers.get(flush)
        if broker_or_none is None:
            broker_or_none = await BrokerProcess(flush=flush, options=self.common.broker_opts).start()
            self._brokers[flush] = broker_or_none
            await self._measure_disk(broker_or_none)
        yield Cluster(broker_or_none.namesrv_addr, broker_or_none, flush)

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


def _uniq(i: int) -> str:
    return f"7F0000010000{i:020X}"


def send_frame_sizes(body: int, batch: int = 1, topic: str = "BenchTopic-0000") -> tuple[int, int]:
    """(request, response) frame sizes of a SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE as the SDK sends them."""
    props = encode_properties({"UNIQ_KEY": _uniq(0), "WAIT": "true"})
    if batch > 1:
        items = [BatchItem(0, bytes(body), {"UNIQ_KEY": _uniq(i), "WAIT": "true"}) for i in range(batch)]
        payload = encode_batch(items)
    else:
        payload = bytes(body)
    ext = {
        "a": "bench-producer", "b": topic, "c": "TBW102", "d": "4", "e": "3", "f": "0",
        "g": str(int(time.time() * 1000)), "h": "0", "i": "WAIT\x01true" if batch > 1 else props, "j": "0",
        "k": "false", "m": str(batch > 1).lower(), "n": "broker-a",
    }  # fmt: skip
    request = len(encode(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, payload)))
    reply_ext = {"msgId": ",".join([_uniq(0)] * batch), "queueId": "3", "queueOffset": "1234567",
                 "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}  # fmt: skip
    reply = len(encode(RemotingCommand(code=0, flag=1, ext_fields=reply_ext)))
    return request, reply


def pull_frame_sizes(body: int, batch: int, topic: str = "BenchDrain-0000") -> tuple[int, int]:
    props = len(encode_properties({"UNIQ_KEY": _uniq(0), "WAIT": "true", "CLUSTER": "DefaultCluster"}).encode())
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


def _run_id() -> str:
    return uuid.uuid4().hex[:8]


async def _create_topics(namesrv: str, names: list[str], queues: int) -> None:
    """Create the topics on every cluster's masters, once the name server knows a broker (a broker that has
    just printed its address may not have registered yet)."""
    async with AdminClient(namesrv_addr=namesrv) as admin:
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


async def _stored_count(namesrv: str, topics: list[str]) -> int:
    async with AdminClient(namesrv_addr=namesrv) as admin:
        total = 0
        for t in topics:
            total += sum(q.max_offset - q.min_offset for q in await admin.topic_status(t))
        return total


def _stamp_body(seq: int, size: int) -> bytes:
    head = _STAMP.pack(seq, time.perf_counter_ns())
    return head + bytes(max(0, size - len(head)))


class _CpuMeter:
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


def _new_result(name: str, spec: Any, sub: str, common: CommonOptions, cluster: Cluster) -> ScenarioResult:
    params = {f.name: getattr(spec, f.name) for f in fields(spec)}
    params["flush"] = cluster.flush
    return ScenarioResult(name=name, title=spec.title(), command=_command(sub, spec, common), params=params,
                          targets=spec.targets())  # fmt: skip


def _finish(result: ScenarioResult, counter: Counter, seconds: float, body: int) -> None:
    if counter.done and seconds > 0:
        result.throughput = throughput(counter.done, seconds, body)
    result.latency = counter.latencies.summary()
    result.errors = counter.errors
    if counter.skipped:
        result.extra["skipped_ops"] = counter.skipped
        result.notes.append(f"{counter.skipped:,} operations skipped: the broker fell behind the requested rate")
    if counter.first_error is not None:
        result.notes.append(f"first error: {type(counter.first_error).__name__}: {counter.first_error}")


# ------------------------------------------------------------------------------------------------ produce


class _RawProducer:
    """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE straight over the remoting layer (``--client raw``)."""

    def __init__(self, remoting: RemotingClient, addr: str, topics: list[str], queues: int) -> None:
        self.remoting = remoting
        self.addr = addr
        self.topics = topics
        self.queues = queues
        self._seq = itertools.count()
        self._born = int(time.time() * 1000)

    def _ext(self, i: int, topic: str, batch: bool, props: str) -> dict[str, str]:
        return {
            "a": "bench-raw", "b": topic, "c": "TBW102", "d": "4", "e": str(i % self.queues), "f": "0",
            "g": str(self._born), "h": "0", "i": props, "j": "0", "k": "false", "m": "true" if batch else "false",
        }  # fmt: skip

    async def send(self, body: bytes) -> None:
        i = next(self._seq)
        topic = self.topics[i % len(self.topics)]
        props = f"UNIQ_KEY\x01{_uniq(i)}\x02WAIT\x01true"
        cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, self._ext(i, topic, False, props), body)
        resp = await self.remoting.invoke(self.addr, cmd, 10.0)
        if resp.code != 0:
            raise RuntimeError(f"send answered {resp.code}: {resp.remark}")

    async def send_batch(self, body: bytes, n: int) -> None:
        i = next(self._seq)
        topic = self.topics[i % len(self.topics)]
        items = [BatchItem(0, body, {"UNIQ_KEY": _uniq(i * n + k), "WAIT": "true"}) for k in range(n)]
        cmd = RemotingCommand.request(
            RequestCode.SEND_BATCH_MESSAGE, self._ext(i, topic, True, "WAIT\x01true"), encode_batch(items)
        )
        resp = await self.remoting.invoke(self.addr, cmd, 10.0)
        if resp.code != 0:
            raise RuntimeError(f"batch send answered {resp.code}: {resp.remark}")


async def run_produce(session: Session, spec: ProduceSpec, name: str = "produce") -> ScenarioResult:
    if spec.mode not in ("sync", "async", "oneway", "batch"):
        raise ValueError(f"unknown produce mode {spec.mode!r}")
    common = session.common
    async with session.cluster(spec.flush) as cluster:
        result = _new_result(name, spec, "produce", common, cluster)
        if cluster.broker is None and spec.flush != ASYNC_FLUSH:
            result.notes.append(f"--flush {spec.flush} ignored: the broker's own flushDiskType applies")
        run = _run_id()
        topics = [f"BenchTopic-{run}-{i}" for i in range(spec.topics)]
        await _create_topics(cluster.namesrv_addr, topics, spec.queues)
        await _produce_baselines(session, spec, result)
        body = os.urandom(spec.body)
        topic_cycle = itertools.cycle(topics)
        if spec.client == "raw":
            producer_cm: Any = _raw_producer(cluster.namesrv_addr, topics, spec.queues)
        else:
            producer_cm = Producer(f"bench-producer-{run}", namesrv_addr=cluster.namesrv_addr, send_msg_timeout=30.0)
        async with producer_cm as producer:
            op = _produce_op(spec, producer, body, topic_cycle)
            # Warm-up: routes, connections, the broker's first mapped file; not measured.
            warm = Counter()
            if spec.warmup > 0:
                if spec.mode in ("sync", "oneway"):
                    await _sequential(op, warm, duration=spec.warmup, total_ops=None)
                else:
                    await run_window(op, inflight=spec.effective_inflight, counter=warm, duration=spec.warmup)
            counter = Counter()
            total_ops = -(-spec.count // spec.per_op) if spec.count else None
            cpu = _CpuMeter(cluster, common)
            async with Progress(name, counter, enabled=common.progress):
                if spec.mode == "sync":
                    elapsed = await _sequential(op, counter, duration=spec.duration, total_ops=total_ops)
                elif spec.mode == "oneway":
                    elapsed = await _oneway(op, counter, cluster, topics, spec)
                else:
                    elapsed = await run_window(
                        op, inflight=spec.effective_inflight, counter=counter, per_op=spec.per_op,
                        total_ops=total_ops, duration=None if total_ops else spec.duration,
                    )  # fmt: skip
            cpu.fill(result, counter.done)
        _finish(result, counter, elapsed, spec.body)
        if spec.mode == "oneway":
            result.latency = None  # nothing is acknowledged
        _apply_ratio(result, session, spec)
        return result


@contextlib.asynccontextmanager
async def _raw_producer(namesrv: str, topics: list[str], queues: int) -> AsyncIterator[_RawProducer]:
    async with AdminClient(namesrv_addr=namesrv) as admin:
        route = await admin.topic_route(topics[0])
    addr = next(iter(route.broker_datas[0].broker_addrs.values()))
    remoting = RemotingClient()
    try:
        yield _RawProducer(remoting, addr, topics, queues)
    finally:
        await remoting.close()


def _produce_op(spec: ProduceSpec, producer: Any, body: bytes, topics: Any) -> Callable[[], Any]:
    if isinstance(producer, _RawProducer):
        if spec.mode == "batch":
            return lambda: producer.send_batch(body, spec.batch)
        return lambda: producer.send(body)
    if spec.mode == "async":
        return lambda: producer.send_async(Message(next(topics), body))
    if spec.mode == "sync":
        return lambda: producer.send(Message(next(topics), body))
    if spec.mode == "oneway":
        return lambda: producer.send_oneway(Message(next(topics), body))

    def batch() -> Any:
        topic = next(topics)  # one topic per batch request
        return producer.send_batch([Message(topic, body) for _ in range(spec.batch)])

    return batch


async def _sequential(
    op: Callable[[], Any], counter: Counter, *, duration: float | None, total_ops: int | None
) -> float:
    """One operation at a time (``sync``): the latency of each is the round trip a caller waits for."""
    perf = time.perf_counter
    t0 = perf()
    deadline = t0 + duration if duration is not None and total_ops is None else float("inf")
    record = counter.latencies.record
    n = 0
    while (total_ops is None or n < total_ops) and perf() < deadline:
        n += 1
        t = perf()
        try:
            await op()
        except Exception as exc:
            counter.fail(exc)
            if counter.errors > 1000 and counter.done == 0:
                break
            continue
        record(perf() - t)
        counter.done += 1
    return perf() - t0


async def _oneway(
    op: Callable[[], Any], counter: Counter, cluster: Cluster, topics: list[str], spec: ProduceSpec
) -> float:
    """Oneway sends, then wait until the broker has stored them all; the rate is stored messages / time.

    Every 20,000 sends the generator checks the stored count and waits while more than 100,000 are unanswered by
    storage (oneway has no acks, so this is its only flow control).
    """
    perf = time.perf_counter
    base = await _stored_count(cluster.namesrv_addr, topics)
    t0 = perf()
    deadline = t0 + spec.duration if spec.duration is not None and not spec.count else float("inf")
    sent = 0
    while (not spec.count or sent < spec.count) and perf() < deadline:
        try:
            await op()
        except Exception as exc:
            counter.fail(exc)
            continue
        sent += 1
        if sent % 20_000 == 0:
            while sent - (await _stored_count(cluster.namesrv_addr, topics) - base) > 100_000:
                await asyncio.sleep(0.01)
    stored = 0
    settle = perf() + 30
    while perf() < settle:
        stored = await _stored_count(cluster.namesrv_addr, topics) - base
        counter.done = stored
        if stored >= sent:
            break
        await asyncio.sleep(0.005)
    if stored < sent:
        counter.errors += sent - stored
    return perf() - t0


async def _produce_baselines(session: Session, spec: ProduceSpec, result: ScenarioResult) -> None:
    request, reply = send_frame_sizes(spec.body, spec.per_op)
    inflight = spec.effective_inflight
    b = await session.echo_baseline(request, reply, inflight)
    if b is not None:
        result.extra["baseline"] = b.name


def _apply_ratio(result: ScenarioResult, session: Session, spec: ProduceSpec) -> None:
    if result.throughput is None:
        return
    name = result.extra.get("baseline")
    b = session.report.baselines.get(name) if isinstance(name, str) else None
    if b is not None:
        result.ratios[f"{b.name} (×{spec.per_op} msg/req)" if spec.per_op > 1 else b.name] = (
            result.throughput.msgs_per_s / (b.value * spec.per_op)
        )
    fs = session.report.baselines.get("disk-fdatasync-4k")
    if spec.flush == SYNC_FLUSH and fs is not None:
        result.ratios["disk-fdatasync-4k (msg per fsync)"] = result.throughput.msgs_per_s / fs.value


# ------------------------------------------------------------------------------------------------ consume


async def _preload(namesrv: str, topic: str, total: int, body_size: int, progress: bool) -> tuple[int, float]:
    """Store ``total`` messages with batch sends (128 per request, 16 in flight); returns (stored, seconds)."""
    body = os.urandom(body_size)
    counter = Counter()
    batch = 128
    group = f"bench-preload-{_run_id()}"
    async with (
        Producer(group, namesrv_addr=namesrv, send_msg_timeout=30.0) as producer,
        Progress("preload", counter, enabled=progress),
    ):
        elapsed = await run_window(
            lambda: producer.send_batch([Message(topic, body) for _ in range(batch)]),
            inflight=16, counter=counter, per_op=batch, total_ops=-(-total // batch),
        )  # fmt: skip
    if counter.errors:
        raise RuntimeError(f"preload failed: {counter.first_error!r}")
    return counter.done, elapsed


async def run_consume(session: Session, spec: ConsumeSpec, name: str = "consume") -> ScenarioResult:
    if spec.mode not in ("lite-pull", "push"):
        raise ValueError(f"unknown consume mode {spec.mode!r}")
    common = session.common
    async with session.cluster(spec.flush) as cluster:
        result = _new_result(name, spec, "consume", common, cluster)
        run = _run_id()
        topic = f"BenchDrain-{run}"
        await _create_topics(cluster.namesrv_addr, [topic], spec.queues)
        request, reply = pull_frame_sizes(spec.body, spec.pull_batch)
        echo = await session.echo_baseline(request, reply, spec.queues)
        expected = spec.count if spec.live else spec.backlog
        if not spec.live:
            stored, secs = await _preload(cluster.namesrv_addr, topic, spec.backlog, spec.body, common.progress)
            result.extra["preload_msgs_per_s"] = round(stored / secs)
            expected = stored
        counter = Counter()
        group = f"bench-consumer-{run}"
        consumer = _Consumer(spec, cluster.namesrv_addr, group, topic, counter, expected, live=spec.live)
        await consumer.start()
        try:
            producer_task: asyncio.Task[None] | None = None
            if spec.live:
                await consumer.wait_ready()
                producer_task = asyncio.get_running_loop().create_task(
                    _live_producer(cluster.namesrv_addr, topic, spec.count, spec.body)
                )
            cpu = _CpuMeter(cluster, common)
            t0 = time.perf_counter()
            async with Progress(name, counter, enabled=common.progress):
                await consumer.wait_done(stall_timeout=30.0)
            elapsed = time.perf_counter() - t0
            cpu.fill(result, counter.done)
            if producer_task is not None:
                await producer_task
        finally:
            await consumer.stop()
        _finish(result, counter, elapsed, spec.body)
        if counter.done < expected:
            result.notes.append(f"only {counter.done:,} of {expected:,} messages arrived before the consumer stalled")
        if echo is not None and result.throughput is not None:
            result.ratios[f"{echo.name} (×{spec.pull_batch} msg/req)"] = result.throughput.msgs_per_s / (
                echo.value * spec.pull_batch
            )
        return result


async def _live_producer(namesrv: str, topic: str, count: int, body_size: int) -> None:
    counter = Counter()
    async with Producer(f"bench-live-{_run_id()}", namesrv_addr=namesrv, send_msg_timeout=30.0) as producer:
        seq = itertools.count()
        await run_window(
            lambda: producer.send_async(Message(topic, _stamp_body(next(seq), body_size))),
            inflight=1000, counter=counter, total_ops=count,
        )  # fmt: skip


class _Consumer:
    """A lite-pull or push consumer counting what it receives (and, for stamped bodies, the e2e latency)."""

    def __init__(
        self, spec: Any, namesrv: str, group: str, topic: str, counter: Counter, expected: int, *, live: bool
    ) -> None:
        self.spec = spec
        self.counter = counter
        self.expected = expected
        self.live = live  # bodies carry a (seq, send time) stamp
        self.warm = 0  # stamped warm-up messages seen
        self._done = asyncio.Event()
        self._last_progress = time.perf_counter()
        self._task: asyncio.Task[None] | None = None
        self._lite: LitePullConsumer | None = None
        self._push: PushConsumer | None = None
        pull_batch = getattr(spec, "pull_batch", 32)
        if spec.mode == "lite-pull":
            self._lite = LitePullConsumer(
                group, namesrv_addr=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                pull_batch_size=pull_batch, pull_threshold_for_all=max(10_000, pull_batch * 64),
                pull_threshold_for_queue=max(1000, pull_batch * 32), poll_timeout=1.0,
            )  # fmt: skip
            self._lite.subscribe(topic, "*")
        else:
            self._push = PushConsumer(
                group, namesrv_addr=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                pull_batch_size=pull_batch, consume_message_batch_max_size=pull_batch,
            )  # fmt: skip
            self._push.subscribe(topic, "*")
            self._push.register_message_listener(self._on_push)

    def _seen(self, msgs: list[Any]) -> None:
        if self.live:
            now = time.perf_counter_ns()
            record = self.counter.latencies.record
            unpack = _STAMP.unpack_from
            n = 0
            for m in msgs:
                seq, sent = unpack(m.body)
                if seq < 0:
                    self.warm += 1
                    continue
                record((now - sent) / 1e9)
                n += 1
            self.counter.done += n
        else:
            self.counter.done += len(msgs)
        self._last_progress = time.perf_counter()
        if self.counter.done >= self.expected:
            self._done.set()

    async def _on_push(self, msgs: list[Any], context: Any) -> None:
        self._seen(msgs)

    async def _poll_loop(self) -> None:
        assert self._lite is not None
        while True:
            msgs = await self._lite.poll(timeout=1.0)
            if msgs:
                self._seen(msgs)

    async def start(self) -> None:
        if self._lite is not None:
            await self._lite.start()
            self._task = asyncio.get_running_loop().create_task(self._poll_loop())
        else:
            assert self._push is not None
            await self._push.start()

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Until the consumer owns queues (a rebalance ran) — best effort, then a short pause for pulls to park."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            owner = self._lite or self._push
            rebalance = getattr(owner, "_rebalance", None)
            if rebalance is not None and getattr(rebalance, "process_queue_table", None):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)

    async def wait_done(self, stall_timeout: float) -> None:
        while not self._done.is_set():
            try:
                async with asyncio.timeout(1.0):
                    await self._done.wait()
            except TimeoutError:
                if time.perf_counter() - self._last_progress > stall_timeout:
                    return

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._lite is not None:
            await self._lite.shutdown()
        if self._push is not None:
            await self._push.shutdown()


# ------------------------------------------------------------------------------------------------ e2e


async def run_e2e(session: Session, spec: E2ESpec, name: str = "e2e") -> ScenarioResult:
    common = session.common
    async with session.cluster(ASYNC_FLUSH) as cluster:
        result = _new_result(name, spec, "e2e", common, cluster)
        run = _run_id()
        topic = f"BenchE2E-{run}"
        await _create_topics(cluster.namesrv_addr, [topic], spec.queues)
        request, reply = send_frame_sizes(spec.body)
        echo = await session.echo_baseline(request, reply, 1)
        if echo is not None:
            result.extra["baseline"] = echo.name
            lat = echo.details.get("latency_ms") or {}
            if lat:
                result.extra["baseline_round_trip_p99_ms"] = round(lat["p99"], 3)
        counter = Counter()
        expected_box = [1 << 62]
        consumer = _Consumer(spec, cluster.namesrv_addr, f"bench-e2e-{run}", topic, counter, 1 << 62, live=True)
        await consumer.start()
        try:
            async with Producer(f"bench-e2e-{run}", namesrv_addr=cluster.namesrv_addr, send_msg_timeout=30.0) as p:
                await consumer.wait_ready()
                # Warm-up at the target rate until the consumer sees messages (routes, parked pulls).
                warm_counter = Counter()
                deadline = time.perf_counter() + 30
                while consumer.warm == 0 and time.perf_counter() < deadline:
                    await run_rate(lambda: p.send_async(Message(topic, _stamp_body(-1, spec.body))),
                                   rate=spec.rate, duration=spec.warmup, counter=warm_counter)  # fmt: skip
                seq = itertools.count()
                sent_counter = Counter()
                cpu = _CpuMeter(cluster, common)
                async with Progress(name, counter, enabled=common.progress):
                    elapsed, started = await run_rate(
                        lambda: p.send_async(Message(topic, _stamp_body(next(seq), spec.body))),
                        rate=spec.rate, duration=spec.duration, counter=sent_counter,
                    )  # fmt: skip
                    expected_box[0] = started
                    consumer.expected = started
                    if counter.done >= started:
                        consumer._done.set()
                    await consumer.wait_done(stall_timeout=10.0)
                cpu.fill(result, counter.done)
        finally:
            await consumer.stop()
        _finish(result, counter, elapsed, spec.body)
        result.extra["sent"] = expected_box[0]
        result.extra["lost"] = max(0, expected_box[0] - counter.done)
        send_lat = sent_counter.latencies.summary()
        if send_lat is not None:
            result.extra["send_ack_p99_ms"] = round(send_lat.p99, 3)
        result.errors += sent_counter.errors
        return result


# ------------------------------------------------------------------------------------------------ memory


def rss_drift(samples_kb: list[int], window: int = 10, warmup_fraction: float = 0.1) -> tuple[float, float]:
    """(reference KiB, drift %) of a resident-size series sampled at a steady interval.

    The first ``warmup_fraction`` of the samples is warm-up (the first mapped files, caches filling). The rest
    is cut into windows of ``window`` samples; the drift is the largest deviation of a window's median from the
    median of all steady samples, in percent. Window medians measure the trend — growth with the backlog — and
    not the sawtooth of pages appended between two flushes (reported separately as the peak-to-peak range).
    """
    if not samples_kb:
        raise ValueError("no samples")
    skip = min(len(samples_kb) - 1, int(len(samples_kb) * warmup_fraction))
    steady = samples_kb[skip:]
    ref = statistics.median(steady)
    if ref <= 0:
        return ref, 0.0
    medians = [statistics.median(steady[i : i + window]) for i in range(0, len(steady), window)]
    return ref, max(abs(m - ref) for m in medians) / ref * 100


async def run_memory(session: Session, spec: MemorySpec, name: str = "memory") -> ScenarioResult:
    common = session.common
    async with session.cluster(ASYNC_FLUSH, fresh=True) as cluster:
        result = _new_result(name, spec, "memory", common, cluster)
        if cluster.broker is None:
            result.notes.append("the broker's memory is only visible with --embedded; ran the load only")
        run = _run_id()
        topic = f"BenchSoak-{run}"
        await _create_topics(cluster.namesrv_addr, [topic], spec.queues)
        body = os.urandom(spec.body)
        samples: list[tuple[float, RssSample]] = []
        counter = Counter()

        async def sample() -> None:
            t0 = time.perf_counter()
            while cluster.broker is not None:
                s = cluster.broker.rss()
                if s is not None:
                    samples.append((time.perf_counter() - t0, s))
                await asyncio.sleep(spec.sample_interval)

        async with Producer(f"bench-soak-{run}", namesrv_addr=cluster.namesrv_addr, send_msg_timeout=30.0) as p:
            sampler = asyncio.get_running_loop().create_task(sample())
            cpu = _CpuMeter(cluster, common)
            try:
                async with Progress(name, counter, enabled=common.progress):
                    elapsed, _ = await run_rate(
                        lambda: p.send_batch([Message(topic, body) for _ in range(spec.batch)]),
                        rate=spec.rate / spec.batch, duration=spec.duration, counter=counter, per_op=spec.batch,
                        max_outstanding=256,
                    )  # fmt: skip
            finally:
                sampler.cancel()
                await asyncio.gather(sampler, return_exceptions=True)
            cpu.fill(result, counter.done)
        _finish(result, counter, elapsed, spec.body)
        result.latency = None
        if samples:
            rss = [s.rss_kb for _, s in samples]
            # Windows of 10 s, or a twentieth of a long run (30 s of a 10-minute soak).
            window = max(1, round(max(10.0, spec.duration / 20) / spec.sample_interval))
            ref, drift = rss_drift(rss, window)
            steady = rss[int(len(rss) * 0.1) :] or rss
            result.extra.update(
                rss_reference_mb=round(ref / 1024, 1),
                rss_min_mb=round(min(steady) / 1024, 1),
                rss_max_mb=round(max(steady) / 1024, 1),
                rss_peak_to_peak_pct=round((max(steady) - min(steady)) / ref * 100, 1),
                rss_end_mb=round(rss[-1] / 1024, 1),
                rss_anon_end_mb=round(samples[-1][1].anon_kb / 1024, 1),
                rss_file_end_mb=round(samples[-1][1].file_kb / 1024, 1),
                rss_drift_pct=round(drift, 2),
            )
            step = max(1, len(samples) // 120)
            result.extra["rss_samples"] = [[round(t, 1), s.rss_kb, s.anon_kb, s.file_kb] for t, s in samples[::step]]
        seq = session.report.baselines.get("disk-seq-write")
        if seq is not None and result.throughput is not None:
            result.ratios[seq.name] = result.throughput.mb_per_s / seq.value
        return result


# ------------------------------------------------------------------------------------------------ standard


async def run_standard(session: Session, spec: StandardSpec, on_result: Callable[[ScenarioResult], None]) -> None:
    """Every scenario of the performance issue, in order; ``on_result`` sees each result as it lands."""
    for name, scenario in spec.scenarios():
        try:
            if isinstance(scenario, ProduceSpec):
                result = await run_produce(session, scenario, name)
                if scenario.flush == SYNC_FLUSH:
                    await session.release(SYNC_FLUSH)
            elif isinstance(scenario, ConsumeSpec):
                result = await run_consume(session, scenario, name)
            elif isinstance(scenario, E2ESpec):
                result = await run_e2e(session, scenario, name)
            else:
                await session.release(ASYNC_FLUSH)  # the soak gets the machine to itself
                result = await run_memory(session, scenario, name)
        except Exception as exc:
            log.exception("scenario.failed name=%s", name)
            result = ScenarioResult(
                name=name, title=scenario.title(), command="", params={}, targets=scenario.targets(),
                notes=[f"failed: {type(exc).__name__}: {exc}"],
            )  # fmt: skip
        on_result(result)
