"""``rocketq bench``'s logic: scenarios, load shapes, same-run baselines, percentile math and the report.

The command line lives in ``rocketq.cli.bench``; everything here can also be driven from Python::

    report = Report(started_at="...")
    session = Session(CommonOptions(), report)
    result = await run_produce(session, ProduceSpec(mode="async", duration=5))
    await session.close()
"""

from rocketq.bench.consume import ConsumeSpec, run_consume
from rocketq.bench.e2e import E2ESpec, run_e2e
from rocketq.bench.memory import MemorySpec, run_memory
from rocketq.bench.produce import ProduceSpec, run_produce
from rocketq.bench.report import Baseline, Report, ScenarioResult, Target
from rocketq.bench.scenarios import StandardSpec, run_standard
from rocketq.bench.session import CommonOptions, Session
from rocketq.bench.stats import LatencyRecorder, LatencySummary, percentile, summarize, throughput

__all__ = [
    "Baseline",
    "CommonOptions",
    "ConsumeSpec",
    "E2ESpec",
    "LatencyRecorder",
    "LatencySummary",
    "MemorySpec",
    "ProduceSpec",
    "Report",
    "ScenarioResult",
    "Session",
    "StandardSpec",
    "Target",
    "percentile",
    "run_consume",
    "run_e2e",
    "run_memory",
    "run_produce",
    "run_standard",
    "summarize",
    "throughput",
]
