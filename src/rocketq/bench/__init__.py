"""``rocketq bench``'s logic: scenarios, load shapes, same-run baselines, percentile math and the report.

The command line lives in ``rocketq.cli.bench``; everything here can also be driven from Python::

    report = Report(started_at="...")
    session = Session(CommonOptions(), report)
    result = await run_produce(session, ProduceSpec(mode="async", duration=5))
    await session.close()
"""

from rocketq.bench.report import Baseline, Report, ScenarioResult, Target
from rocketq.bench.scenarios import (
    CommonOptions,
    ConsumeSpec,
    E2ESpec,
    MemorySpec,
    ProduceSpec,
    Session,
    StandardSpec,
    run_consume,
    run_e2e,
    run_memory,
    run_produce,
    run_standard,
)
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
