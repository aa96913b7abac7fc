"""``rocketq bench memory``: the broker's resident size under a steady batch load, and its drift."""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from dataclasses import dataclass

from rocketq.bench.broker import RssSample
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
)
from rocketq.client import Message, Producer

__all__ = ["MemorySpec", "rss_drift", "run_memory"]


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
        result = new_result(name, spec, "memory", common, cluster)
        if cluster.pid is None:
            result.notes.append("the broker's memory is visible only with --embedded or --broker-pid: load only")
        run = run_id()
        topic = f"BenchSoak-{run}"
        await create_topics(cluster.namesrv_addr, [topic], spec.queues)
        body = os.urandom(spec.body)
        samples: list[tuple[float, RssSample]] = []
        counter = Counter()

        async def sample() -> None:
            t0 = time.perf_counter()
            while cluster.pid is not None:
                s = cluster.rss()
                if s is not None:
                    samples.append((time.perf_counter() - t0, s))
                await asyncio.sleep(spec.sample_interval)

        async with Producer(f"bench-soak-{run}", namesrv_addr=cluster.namesrv_addr, send_msg_timeout=30.0) as p:
            sampler = asyncio.get_running_loop().create_task(sample())
            cpu = CpuMeter(cluster, common)
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
        finish_result(result, counter, elapsed, spec.body)
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
