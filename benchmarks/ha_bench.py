"""SYNC_MASTER against ASYNC_MASTER: produce throughput at 1,000 sends in flight, master + slave as processes.

Not a test. Each round starts a name server, a master (brokerRole SYNC_MASTER or ASYNC_MASTER) and a SLAVE as
three ``rocketq`` processes on 127.0.0.1 (fresh stores), runs ``rocketq bench produce -n ... --mode async
--inflight 1000`` as a fourth process, and stops them. The two roles alternate, the order flipped every round.

    PYTHONPATH=src .venv/bin/python benchmarks/ha_bench.py --rounds 3 --duration 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path

from rocketq.testing.process import run_process
from rocketq.testing.procs import BrokerProcess, NamesrvProcess

ROLES = ("SYNC_MASTER", "ASYNC_MASTER")


async def one_run(role: str, duration: float, inflight: int, body: int, work: Path) -> dict[str, float]:
    namesrv = NamesrvProcess(work / "ns", log_path=work / "ns.log")
    ns = await namesrv.start()
    common = ("brokerName=bench-ha", "haSendHeartbeatInterval=1000", "registerNameServerPeriod=2000")
    master = BrokerProcess(work / "m", ns, f"brokerRole={role}", *common, log_path=work / "m.log")
    slave = BrokerProcess(work / "s", ns, "brokerRole=SLAVE", "brokerId=1", *common, log_path=work / "s.log")
    try:
        await master.start()
        await slave.start()
        await asyncio.sleep(1.0)  # the slave learns the master's HA address from its first registration
        out = work / f"{role}.json"
        code, _, stderr = await run_process(
            [sys.executable, "-m", "rocketq", "bench", "produce", "-n", ns, "--broker-pid", str(master.pid),
             "--mode", "async", "--inflight", str(inflight), "--body", str(body), "--duration", str(duration),
             "--no-baselines", "--no-progress", "--json", str(out), "--log-level", "WARNING"],
            timeout=duration + 120,
        )  # fmt: skip
        if code != 0:
            raise RuntimeError(f"bench produce exited {code}: {stderr[-2000:]}")
        report = json.loads(out.read_text())
        return _figures(report)
    finally:
        for p in (slave, master, namesrv):
            await p.stop()


def _figures(report: dict) -> dict[str, float]:  # type: ignore[type-arg]
    """The scenario's throughput, errors and broker CPU per message from ``bench --json``."""
    scenario = report["scenarios"][0]
    fig = {"msgs_per_s": float(scenario["throughput"]["msgs_per_s"]), "errors": float(scenario["errors"])}
    fig.update({k: v for k, v in scenario.get("extra", {}).items() if "cpu" in k})
    return fig


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--inflight", type=int, default=1000)
    ap.add_argument("--body", type=int, default=1024)
    args = ap.parse_args()
    results: dict[str, list[dict[str, float]]] = {r: [] for r in ROLES}
    for rnd in range(args.rounds):
        order = ROLES if rnd % 2 == 0 else ROLES[::-1]
        for role in order:
            with tempfile.TemporaryDirectory(prefix="ha-bench-") as tmp:
                fig = await one_run(role, args.duration, args.inflight, args.body, Path(tmp))
            results[role].append(fig)
            print(f"round {rnd + 1} {role}: {fig}", flush=True)
    med = {r: statistics.median(f["msgs_per_s"] for f in results[r]) for r in ROLES}
    print(f"median msg/s: SYNC_MASTER {med['SYNC_MASTER']:.0f}, ASYNC_MASTER {med['ASYNC_MASTER']:.0f}, "
          f"ratio {med['SYNC_MASTER'] / med['ASYNC_MASTER']:.2f}")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
