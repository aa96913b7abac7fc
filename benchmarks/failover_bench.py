"""The failover timeline in 5.x controller mode: master killed (SIGKILL) → new master elected → first successful
send by the rocketq producer. Not a test.

A name server with the embedded controller and a SYNC_MASTER + slave in controller mode, each a ``rocketq``
process (``rocketq.testing.procs.ControllerGroup``, intervals shrunk: broker heartbeat 200 ms, controller
heartbeat timeout 1 s); the rocketq producer sends with ``senders`` tasks and the client's defaults (the 30 s
route poll, a refresh as soon as a connection to a broker fails).
Each run kills the master once the in-sync set holds both replicas. "elected" is when the controller's
GET_REPLICA_INFO first names the other broker; "first send" is the answer to the first send *started* after
the kill that came back SEND_OK.

    PYTHONPATH=src .venv/bin/python benchmarks/failover_bench.py --runs 10
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from pathlib import Path

from rocketq.testing.failover import Cycle, run_cycles
from rocketq.testing.procs import ControllerGroup


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="kills (one group, the old master rejoining each time)")
    ap.add_argument("--senders", type=int, default=4)
    ap.add_argument("--pause", type=float, default=0.01, help="seconds each sender pauses between sends")
    args = ap.parse_args()

    def show(i: int, c: Cycle) -> None:
        print(f"run {i + 1}: elected {c.elected_s * 1000:.0f} ms, first SEND_OK {c.first_send_s * 1000:.0f} ms "
              f"(master epoch {c.master_epoch})", flush=True)  # fmt: skip

    with tempfile.TemporaryDirectory(prefix="failover-bench-") as tmp:
        group = ControllerGroup(Path(tmp))
        try:
            await group.start()
            report = await run_cycles(group, args.runs, senders=args.senders, pause=args.pause, on_cycle=show)
        finally:
            await group.stop()
    el = [c.elected_s * 1000 for c in report.cycles]
    fs = [c.first_send_s * 1000 for c in report.cycles]
    print(f"elected: median {statistics.median(el):.0f} ms, max {max(el):.0f} ms; first SEND_OK: median "
          f"{statistics.median(fs):.0f} ms, max {max(fs):.0f} ms; {len(report.acked)} acknowledged, "
          f"{len(report.lost)} lost")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
