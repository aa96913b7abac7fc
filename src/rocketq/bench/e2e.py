"""``rocketq bench e2e``: the latency from send to listener at a fixed rate, each body stamped with its send
time (``session.stamp_body``)."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

from rocketq.bench.consume import CountingConsumer
from rocketq.bench.load import Counter, run_rate
from rocketq.bench.progress import Progress
from rocketq.bench.report import ScenarioResult, Target
from rocketq.bench.session import (
    ASYNC_FLUSH,
    CpuMeter,
    Session,
    create_topics,
    finish_result,
    new_result,
    run_id,
    send_frame_sizes,
    stamp_body,
)
from rocketq.client import Message, Producer

__all__ = ["E2ESpec", "run_e2e"]


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


async def run_e2e(session: Session, spec: E2ESpec, name: str = "e2e") -> ScenarioResult:
    common = session.common
    async with session.cluster(ASYNC_FLUSH) as cluster:
        result = new_result(name, spec, "e2e", common, cluster)
        run = run_id()
        topic = f"BenchE2E-{run}"
        await create_topics(cluster.namesrv_addr, [topic], spec.queues)
        request, reply = send_frame_sizes(spec.body)
        echo = await session.echo_baseline(request, reply, 1)
        if echo is not None:
            result.extra["baseline"] = echo.name
            lat = echo.details.get("latency_ms") or {}
            if lat:
                result.extra["baseline_round_trip_p99_ms"] = round(lat["p99"], 3)
        counter = Counter()
        expected_box = [1 << 62]
        consumer = CountingConsumer(spec, cluster.namesrv_addr, f"bench-e2e-{run}", topic, counter, 1 << 62, live=True)
        await consumer.start()
        try:
            async with Producer(f"bench-e2e-{run}", namesrv_addr=cluster.namesrv_addr, send_msg_timeout=30.0) as p:
                await consumer.wait_ready()
                # Warm-up at the target rate until the consumer sees messages (routes, parked pulls).
                warm_counter = Counter()
                deadline = time.perf_counter() + 30
                while consumer.warm == 0 and time.perf_counter() < deadline:
                    await run_rate(lambda: p.send_async(Message(topic, stamp_body(-1, spec.body))),
                                   rate=spec.rate, duration=spec.warmup, counter=warm_counter)  # fmt: skip
                seq = itertools.count()
                sent_counter = Counter()
                cpu = CpuMeter(cluster, common)
                async with Progress(name, counter, enabled=common.progress):
                    elapsed, started = await run_rate(
                        lambda: p.send_async(Message(topic, stamp_body(next(seq), spec.body))),
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
        finish_result(result, counter, elapsed, spec.body)
        result.extra["sent"] = expected_box[0]
        result.extra["lost"] = max(0, expected_box[0] - counter.done)
        send_lat = sent_counter.latencies.summary()
        if send_lat is not None:
            result.extra["send_ack_p99_ms"] = round(send_lat.p99, 3)
        result.errors += sent_counter.errors
        return result
