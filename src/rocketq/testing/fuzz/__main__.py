"""``python -m rocketq.testing.fuzz --frames 1000000``: a fuzz campaign against a fresh ``rocketq standalone``.

Prints the figures and every traceback site (with the frame that caused it when known); exits 1 when the
server crashed, hung, logged a traceback or lost kept state.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from rocketq.testing.fuzz.campaign import Campaign
from rocketq.testing.fuzz.runner import FuzzConfig


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m rocketq.testing.fuzz", description=__doc__)
    p.add_argument("--frames", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--max-seconds", type=float, default=None, help="stop sending after this long")
    p.add_argument("--workers", type=int, default=8, help="connections at once")
    p.add_argument("--probe-every", type=int, default=5_000, help="frames between crash/hang/log checks")
    p.add_argument("--exclude", action="append", default=[], metavar="CODE_NAME:field",
                   help="a family of hostile frames not to make (CODE_NAME:* for a whole code)")  # fmt: skip
    p.add_argument("--max-rss-mib", type=int, default=2048, help="kill the server above this memory")
    p.add_argument("--dir", type=Path, help="store and log directory (default: a temporary one)")
    args = p.parse_args(argv)
    config = FuzzConfig(frames=args.frames, seed=args.seed, max_seconds=args.max_seconds, workers=args.workers,
                        probe_every=args.probe_every, excluded=args.exclude,
                        max_rss=args.max_rss_mib * 1024 * 1024)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="rocketq-fuzz-") as tmp:
        root = args.dir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        log_path = root / "server.log"
        print(f"fuzzing {config.frames} frames (seed {config.seed}); server log {log_path}", flush=True)
        result = asyncio.run(Campaign(root / "store", log_path, config).run())
    report = result.report
    print(report.summary())
    print(f"afterwards    tracebacks {result.later_tracebacks}; graceful stop exit {result.stop_exit_code}")
    for problem in result.problems:
        print(f"PROBLEM: {problem}")
    bad = report.crashed or report.hangs or report.tracebacks or report.probe_failures or result.problems
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
