"""What broker metrics, client metrics and message trace cost on the send path, alternated in one run.

Two embedded clusters in this process — one with the broker's Prometheus endpoint off (the default), one with it
on and scraped every ``SCRAPE_EVERY`` s — and five configurations run round-robin, ``ROUNDS`` times, the order
rotated every round so none always runs first: each round sends ``N`` async messages (128-byte bodies, one key)
from a fresh producer and reports the throughput and the process CPU per message (client and broker share this
process, so the CPU covers both sides). Results: docs/performance.md ("Metrics and trace (issue 23, part 2)").

    PYTHONPATH=src python benchmarks/ops_cost_bench.py [rounds] [messages]
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator

from prometheus_client import CollectorRegistry

from rocketq.client import ClientConfig, Message, Producer
from rocketq.client.metrics import ClientMetrics
from rocketq.testing import EmbeddedCluster

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
N = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
SCRAPE_EVERY = 2.0
#: name → (broker endpoint on, client metrics on, trace on)
CONFIGS = {
    "plain": (False, False, False),
    "broker metrics": (True, False, False),
    "client metrics": (False, True, False),
    "trace": (False, False, True),
    "all three": (True, True, True),
}


async def scraper(port: int) -> None:
    """GET /metrics every SCRAPE_EVERY s, as a Prometheus would (more often than its usual 15 s)."""
    while True:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        await reader.read()
        writer.close()
        await asyncio.sleep(SCRAPE_EVERY)


@contextlib.asynccontextmanager
async def clusters() -> AsyncIterator[tuple[EmbeddedCluster, EmbeddedCluster]]:
    patient = {"waitTimeMillsInSendQueue": "10000"}  # a shared, loaded machine: no flow-control refusals
    async with (
        EmbeddedCluster(tempfile.mkdtemp(), **patient) as off,
        EmbeddedCluster(tempfile.mkdtemp(), metricsExporterType="PROM", metricsPromExporterPort="0", **patient) as on,
    ):
        yield off, on


async def round_(
    cluster: EmbeddedCluster, name: str, metrics: ClientMetrics | None, trace: bool
) -> tuple[float, float]:
    cfg = ClientConfig(namesrv_addr=cluster.namesrv_addr, metrics=metrics)
    async with Producer("bench-" + name.replace(" ", "-"), config=cfg, enable_msg_trace=trace) as p:
        await p.send(Message("BenchOps", b"w"))  # route and connection made before the clock starts
        cpu, t = time.process_time(), time.perf_counter()
        await asyncio.gather(*[p.send_async(Message("BenchOps", b"x" * 128, keys="k")) for _ in range(N)])
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    return N / wall, cpu / N * 1e6


async def main() -> None:
    metrics = ClientMetrics(CollectorRegistry())
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in CONFIGS}
    async with clusters() as (off, on):
        endpoint = on.brokers[0].metrics_endpoint
        assert endpoint is not None
        scrape = asyncio.get_running_loop().create_task(scraper(endpoint.port))
        try:
            names = list(CONFIGS)
            for r in range(ROUNDS):
                for name in names[r % len(names):] + names[: r % len(names)]:
                    broker_on, client_on, trace = CONFIGS[name]
                    got = await round_(on if broker_on else off, name, metrics if client_on else None, trace)
                    results[name].append(got)
        finally:
            scrape.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await scrape
    base = statistics.median(c for _, c in results["plain"])
    print(f"{N} async sends per round, {ROUNDS} rounds, order rotated every round")
    print(f"{'configuration':16} {'msg/s per round':44} {'median':>8} {'CPU µs/msg per round':36} {'median':>7}",
          "vs plain")  # fmt: skip
    for name, runs in results.items():
        tps = [round(t) for t, _ in runs]
        cpus = [round(c, 1) for _, c in runs]
        med = statistics.median(c for _, c in runs)
        print(f"{name:16} {tps!s:44} {statistics.median(tps):>8.0f} {cpus!s:36} {med:>7.1f} "
              f"{(med - base) / base * 100:+.1f} %")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
