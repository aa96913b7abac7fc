"""How throughput grows with broker processes: one broker against two (one cluster, one name server), the same
load from two producer processes, alternated in one run.

Not a test. Each round starts a name server and B brokers (``broker-0`` … as separate ``rocketq broker``
processes on 127.0.0.1, fresh stores, ASYNC_FLUSH) and runs two ``rocketq bench produce -n NS --mode async
--inflight 1000`` processes at the same time; each bench creates its topic on the cluster, so its queues sit on
every broker and the producer spreads its sends over them. B = 1 and B = 2 alternate, the order flipped every
round. Reported: the two producers' summed msg/s, and the brokers' summed CPU seconds per message
(``/proc/PID/stat`` around the run), from which the capacity of one broker core follows (1 / CPU per message).

    PYTHONPATH=src .venv/bin/python benchmarks/scale_bench.py --rounds 2 --duration 8
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rocketq.bench.echo import cpu_seconds
from rocketq.testing.process import run_process
from rocketq.testing.procs import BrokerProcess, NamesrvProcess

PRODUCERS = 2


async def one_run(brokers: int, duration: float, work: Path) -> dict[str, float]:
    namesrv = NamesrvProcess(work / "ns", log_path=work / "ns.log")
    ns = await namesrv.start()
    procs = [
        BrokerProcess(work / f"b{i}", ns, f"brokerName=broker-{i}", "registerNameServerPeriod=2000",
                      "maxTransferCountOnMessageInMemory=1024", log_path=work / f"b{i}.log")
        for i in range(brokers)
    ]  # fmt: skip
    try:
        for p in procs:
            await p.start()
        await asyncio.sleep(2.5)  # every broker registered before the benches create their topics
        outs = [work / f"p{i}.json" for i in range(PRODUCERS)]
        pids = [p.pid for p in procs]
        cpu0 = [cpu_seconds(pid) for pid in pids]
        t0 = time.perf_counter()
        results = await asyncio.gather(*(
            run_process([sys.executable, "-m", "rocketq", "--log-level", "WARNING", "bench", "produce", "-n", ns,
                         "--mode", "async", "--inflight", "1000", "--duration", str(duration), "--no-baselines",
                         "--no-progress", "--json", str(out)], timeout=duration + 120)
            for out in outs
        ))  # fmt: skip
        wall = time.perf_counter() - t0
        cpu1 = [cpu_seconds(pid) for pid in pids]
        for code, _, stderr in results:
            if code != 0:
                raise RuntimeError(f"bench produce exited {code}: {stderr[-2000:]}")
        rates, messages = 0.0, 0
        for out in outs:
            scenario = json.loads(out.read_text())["scenarios"][0]
            rates += float(scenario["throughput"]["msgs_per_s"])
            messages += int(scenario["throughput"]["messages"])
        # the brokers' CPU over the whole run (warm-up included) per message carried in the measured windows;
        # the warm-up's messages are not counted, so this slightly overstates the cost (the same for both B)
        cpu = sum((b or 0) - (a or 0) for a, b in zip(cpu0, cpu1, strict=True))
        return {"msgs_per_s": rates, "messages": float(messages), "broker_cpu_us_per_msg": cpu / messages * 1e6,
                "wall_s": wall}  # fmt: skip
    finally:
        for b in reversed(procs):
            await b.stop()
        await namesrv.stop()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--duration", type=float, default=8.0)
    args = ap.parse_args()
    results: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    for rnd in range(args.rounds):
        for brokers in (1, 2) if rnd % 2 == 0 else (2, 1):
            with tempfile.TemporaryDirectory(prefix="scale-bench-") as tmp:
                fig = await one_run(brokers, args.duration, Path(tmp))
            results[brokers].append(fig)
            print(f"round {rnd + 1}, {brokers} broker(s): {fig['msgs_per_s']:,.0f} msg/s, "
                  f"brokers {fig['broker_cpu_us_per_msg']:.1f} µs/msg", flush=True)  # fmt: skip
    med: dict[int, dict[str, Any]] = {
        b: {k: statistics.median(f[k] for f in results[b]) for k in ("msgs_per_s", "broker_cpu_us_per_msg")}
        for b in results
    }
    for b, m in med.items():
        per_core = 1e6 / m["broker_cpu_us_per_msg"]
        print(f"median, {b} broker(s): {m['msgs_per_s']:,.0f} msg/s, {m['broker_cpu_us_per_msg']:.1f} µs of broker "
              f"CPU per message → one broker core carries ~{per_core:,.0f} msg/s")  # fmt: skip
    print(f"2 brokers / 1 broker: {med[2]['msgs_per_s'] / med[1]['msgs_per_s']:.2f}×")


if __name__ == "__main__":
    asyncio.run(main())
