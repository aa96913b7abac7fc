"""``rocketq bench consume``: drain a stored backlog, or consume while a producer sends (``--live``), with the
lite pull or the push consumer; ``CountingConsumer`` also serves the e2e scenario."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from dataclasses import dataclass
from typing import Any

from rocketq.bench.load import Counter, run_window
from rocketq.bench.progress import Progress
from rocketq.bench.report import ScenarioResult, Target
from rocketq.bench.session import (
    ASYNC_FLUSH,
    STAMP,
    CpuMeter,
    Session,
    create_topics,
    finish_result,
    new_result,
    pull_frame_sizes,
    run_id,
    stamp_body,
)
from rocketq.client import ConsumeFromWhere, LitePullConsumer, Message, Producer, PushConsumer

__all__ = ["ConsumeSpec", "CountingConsumer", "run_consume"]


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


async def _preload(namesrv: str, topic: str, total: int, body_size: int, progress: bool) -> tuple[int, float]:
    """Store ``total`` messages with batch sends (128 per request, 16 in flight); returns (stored, seconds)."""
    body = os.urandom(body_size)
    counter = Counter()
    batch = 128
    group = f"bench-preload-{run_id()}"
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
        result = new_result(name, spec, "consume", common, cluster)
        run = run_id()
        topic = f"BenchDrain-{run}"
        await create_topics(cluster.namesrv_addr, [topic], spec.queues)
        request, reply = pull_frame_sizes(spec.body, spec.pull_batch)
        echo = await session.echo_baseline(request, reply, spec.queues)
        expected = spec.count if spec.live else spec.backlog
        if not spec.live:
            stored, secs = await _preload(cluster.namesrv_addr, topic, spec.backlog, spec.body, common.progress)
            result.extra["preload_msgs_per_s"] = round(stored / secs)
            expected = stored
        counter = Counter()
        group = f"bench-consumer-{run}"
        consumer = CountingConsumer(spec, cluster.namesrv_addr, group, topic, counter, expected, live=spec.live)
        await consumer.start()
        try:
            producer_task: asyncio.Task[None] | None = None
            if spec.live:
                await consumer.wait_ready()
                producer_task = asyncio.get_running_loop().create_task(
                    _live_producer(cluster.namesrv_addr, topic, spec.count, spec.body)
                )
            cpu = CpuMeter(cluster, common)
            t0 = time.perf_counter()
            async with Progress(name, counter, enabled=common.progress):
                await consumer.wait_done(stall_timeout=30.0)
            elapsed = time.perf_counter() - t0
            cpu.fill(result, counter.done)
            if producer_task is not None:
                await producer_task
        finally:
            await consumer.stop()
        finish_result(result, counter, elapsed, spec.body)
        if counter.done < expected:
            result.notes.append(f"only {counter.done:,} of {expected:,} messages arrived before the consumer stalled")
        if echo is not None and result.throughput is not None:
            result.ratios[f"{echo.name} (×{spec.pull_batch} msg/req)"] = result.throughput.msgs_per_s / (
                echo.value * spec.pull_batch
            )
        return result


async def _live_producer(namesrv: str, topic: str, count: int, body_size: int) -> None:
    counter = Counter()
    async with Producer(f"bench-live-{run_id()}", namesrv_addr=namesrv, send_msg_timeout=30.0) as producer:
        seq = itertools.count()
        await run_window(
            lambda: producer.send_async(Message(topic, stamp_body(next(seq), body_size))),
            inflight=1000, counter=counter, total_ops=count,
        )  # fmt: skip


class CountingConsumer:
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
            unpack = STAMP.unpack_from
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
