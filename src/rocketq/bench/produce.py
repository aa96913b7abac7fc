"""``rocketq bench produce``: sends in one of four modes (sync, async with a window in flight, oneway, batch),
through the SDK's ``Producer`` or, with ``--client raw``, straight over the remoting layer."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from rocketq.bench.load import Counter, run_window
from rocketq.bench.progress import Progress
from rocketq.bench.report import ScenarioResult, Target
from rocketq.bench.session import (
    ASYNC_FLUSH,
    SYNC_FLUSH,
    Cluster,
    CpuMeter,
    Session,
    create_topics,
    finish_result,
    new_result,
    run_id,
    send_frame_sizes,
    uniq_key,
)
from rocketq.client import AdminClient, Message, Producer
from rocketq.client.metrics import ClientMetrics
from rocketq.codes import RequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.message import BatchItem, encode_batch
from rocketq.remoting.client import RemotingClient

__all__ = ["ProduceSpec", "run_produce"]


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
    acl: str = "off"  # on: the broker checks ACL (aclEnable=true) and every request is signed
    trace: bool = False  # the producer records message trace (sdk client only)
    client_metrics: bool = False  # the producer records client metrics (sdk client only)
    auto_batch: bool = False  # the producer gathers sends into batch requests (autoBatch; sdk client only)

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
        if self.acl == "on":
            extras.append("ACL on, requests signed")
        if self.trace:
            extras.append("message trace on")
        if self.client_metrics:
            extras.append("client metrics on")
        if self.auto_batch:
            extras.append("autoBatch on")
        return f"{what} ({', '.join(extras)})"

    def targets(self) -> list[Target]:
        if self.body != 1024 or self.client != "sdk" or self.acl == "on" or self.trace or self.client_metrics \
                or self.auto_batch:
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


class _RawProducer:
    """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE straight over the remoting layer (``--client raw``).

    The V2 fields are written here rather than by the client's request builder on purpose: this load measures
    the broker without the SDK's per-message work, and building through the client (a ``Message``, its properties
    text, a born time per send) costs 1.2–1.5 µs more per request (2.6 → 3.8 µs, 100,000 requests, best of 5).
    """

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
        props = f"UNIQ_KEY\x01{uniq_key(i)}\x02WAIT\x01true"
        cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, self._ext(i, topic, False, props), body)
        resp = await self.remoting.invoke(self.addr, cmd, 10.0)
        if resp.code != 0:
            raise RuntimeError(f"send answered {resp.code}: {resp.remark}")

    async def send_batch(self, body: bytes, n: int) -> None:
        i = next(self._seq)
        topic = self.topics[i % len(self.topics)]
        items = [BatchItem(0, body, {"UNIQ_KEY": uniq_key(i * n + k), "WAIT": "true"}) for k in range(n)]
        cmd = RemotingCommand.request(
            RequestCode.SEND_BATCH_MESSAGE, self._ext(i, topic, True, "WAIT\x01true"), encode_batch(items)
        )
        resp = await self.remoting.invoke(self.addr, cmd, 10.0)
        if resp.code != 0:
            raise RuntimeError(f"batch send answered {resp.code}: {resp.remark}")


async def run_produce(session: Session, spec: ProduceSpec, name: str = "produce") -> ScenarioResult:
    if spec.mode not in ("sync", "async", "oneway", "batch"):
        raise ValueError(f"unknown produce mode {spec.mode!r}")
    if spec.client == "raw" and (spec.trace or spec.client_metrics or spec.auto_batch):
        raise ValueError("--trace, --client-metrics and --auto-batch need the sdk client (--client sdk)")
    common = session.common
    async with session.cluster(spec.flush, acl=spec.acl == "on") as cluster:
        result = new_result(name, spec, "produce", common, cluster)
        if cluster.broker is None and spec.flush != ASYNC_FLUSH:
            result.notes.append(f"--flush {spec.flush} ignored: the broker's own flushDiskType applies")
        run = run_id()
        topics = [f"BenchTopic-{run}-{i}" for i in range(spec.topics)]
        await create_topics(cluster.namesrv_addr, topics, spec.queues, cluster.credentials)
        await _produce_baselines(session, spec, result)
        body = os.urandom(spec.body)
        topic_cycle = itertools.cycle(topics)
        if spec.client == "raw":
            producer_cm: Any = _raw_producer(cluster, topics, spec.queues)
        else:
            config = cluster.client_config()
            if spec.client_metrics:
                config.metrics = ClientMetrics(CollectorRegistry())
            producer_cm = Producer(f"bench-producer-{run}", config=config, send_msg_timeout=30.0,
                                   enable_msg_trace=spec.trace, auto_batch=spec.auto_batch)  # fmt: skip
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
            cpu = CpuMeter(cluster, common)
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
        finish_result(result, counter, elapsed, spec.body)
        if spec.mode == "oneway":
            result.latency = None  # nothing is acknowledged
        _apply_ratio(result, session, spec)
        return result


@contextlib.asynccontextmanager
async def _raw_producer(cluster: Cluster, topics: list[str], queues: int) -> AsyncIterator[_RawProducer]:
    async with AdminClient(config=cluster.client_config()) as admin:
        route = await admin.topic_route(topics[0])
    addr = next(iter(route.broker_datas[0].broker_addrs.values()))
    creds = cluster.credentials
    remoting = RemotingClient(before_request=creds.sign if creds else None)
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
    base = await _stored_count(cluster, topics)
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
            while sent - (await _stored_count(cluster, topics) - base) > 100_000:
                await asyncio.sleep(0.01)
    stored = 0
    settle = perf() + 30
    while perf() < settle:
        stored = await _stored_count(cluster, topics) - base
        counter.done = stored
        if stored >= sent:
            break
        await asyncio.sleep(0.005)
    if stored < sent:
        counter.errors += sent - stored
    return perf() - t0


async def _stored_count(cluster: Cluster, topics: list[str]) -> int:
    async with AdminClient(config=cluster.client_config()) as admin:
        total = 0
        for t in topics:
            total += sum(q.max_offset - q.min_offset for q in await admin.topic_status(t))
        return total


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
