"""Results, targets and the report: what a run produced, printed for people and written as JSON for scripts.

A ``Report`` holds the run's baselines (measured in the same run, on the same machine) and one
``ScenarioResult`` per scenario. Every result carries the command line that reproduces it, its ratios to the
baselines and, when the issue sets one, its targets with met/missed.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketq.bench.stats import LatencySummary, Throughput

__all__ = ["Baseline", "Report", "ScenarioResult", "Target", "machine_info", "markdown_from_json"]

REPORT_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Target:
    """One bar from the performance issue, e.g. ``Target("msgs_per_s", ">=", 60_000)``.

    ``metric`` names a key of ``ScenarioResult.metrics()``.
    """

    metric: str
    op: str
    value: float

    def __post_init__(self) -> None:
        if self.op not in (">=", "<="):
            raise ValueError(f"unknown comparison {self.op!r}")

    def check(self, metrics: dict[str, float]) -> bool | None:
        """True/False, or None when the scenario did not produce the metric."""
        got = metrics.get(self.metric)
        if got is None:
            return None
        return got >= self.value if self.op == ">=" else got <= self.value

    def describe(self) -> str:
        sym = "≥" if self.op == ">=" else "≤"
        unit = _UNITS.get(self.metric, "")
        value = f"{self.value:,.0f}" if self.value >= 100 else f"{self.value:g}"
        return f"{_LABELS.get(self.metric, self.metric)} {sym} {value}{unit}".strip()

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "op": self.op, "value": self.value, "text": self.describe()}


_LABELS = {
    "msgs_per_s": "",
    "latency_p99_ms": "p99",
    "rss_drift_pct": "RSS drift",
}
_UNITS = {"msgs_per_s": " msg/s", "latency_p99_ms": " ms", "rss_drift_pct": " %"}


@dataclass(slots=True)
class Baseline:
    """A same-run reference figure: the bare request/response ceiling, or the disk's write bandwidth."""

    name: str
    title: str
    value: float  # the figure ratios are taken against
    unit: str  # "req/s", "MB/s", "fsync/s"
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "value": self.value, "unit": self.unit, **self.details}

    def format(self) -> str:
        return f"{self.title}: {self.value:,.0f} {self.unit}"


@dataclass(slots=True)
class ScenarioResult:
    name: str
    title: str
    command: str
    params: dict[str, Any]
    throughput: Throughput | None = None
    latency: LatencySummary | None = None
    errors: int = 0
    # baseline name → (this result's rate) / (baseline's rate in the same unit), e.g. msg/s over echo req/s × batch
    ratios: dict[str, float] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def metrics(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.throughput is not None:
            out["msgs_per_s"] = self.throughput.msgs_per_s
            out["mb_per_s"] = self.throughput.mb_per_s
        if self.latency is not None:
            out["latency_p50_ms"] = self.latency.p50
            out["latency_p99_ms"] = self.latency.p99
            out["latency_p999_ms"] = self.latency.p999
            out["latency_max_ms"] = self.latency.max
        for key, value in self.extra.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                out[key] = float(value)
        return out

    def target_results(self) -> list[tuple[Target, bool | None]]:
        metrics = self.metrics()
        return [(t, t.check(metrics)) for t in self.targets]

    @property
    def met(self) -> bool | None:
        """All targets met (True), one missed (False), or no targets / not measured (None)."""
        results = [ok for _, ok in self.target_results()]
        if not results or any(ok is None for ok in results):
            return None if not results or all(ok is None for ok in results) else False
        return all(results)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "command": self.command,
            "params": self.params,
            "throughput": self.throughput.to_dict() if self.throughput else None,
            "latency_ms": self.latency.to_dict() if self.latency else None,
            "errors": self.errors,
            "ratios": self.ratios,
            "targets": [{**t.to_dict(), "met": ok} for t, ok in self.target_results()],
            "met": self.met,
            "extra": self.extra,
            "notes": self.notes,
        }

    def format(self) -> str:
        lines = [f"== {self.title}", f"   $ {self.command}"]
        if self.throughput is not None:
            tp = self.throughput
            lines.append(
                f"   {tp.msgs_per_s:12,.0f} msg/s  {tp.mb_per_s:8.1f} MB/s"
                f"   ({tp.messages:,} messages in {tp.seconds:.2f} s)"
            )
        if self.latency is not None:
            lines.append(f"   latency  {self.latency.format()}")
        for key, value in self.extra.items():
            lines.append(f"   {key}: {_fmt(value)}")
        for name, ratio in self.ratios.items():
            lines.append(f"   {ratio:.2f} × baseline {name}")
        if self.errors:
            lines.append(f"   errors: {self.errors:,}")
        for t, ok in self.target_results():
            verdict = "not measured" if ok is None else ("met" if ok else "MISSED")
            lines.append(f"   target {t.describe()}: {verdict}")
        lines.extend(f"   note: {n}" for n in self.notes)
        return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def machine_info() -> dict[str, Any]:
    try:
        from importlib.metadata import version

        loop = f"uvloop {version('uvloop')}"
    except Exception:  # pragma: no cover - not installed
        loop = "asyncio"
    import rocketq

    return {
        "rocketq": rocketq.__version__,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loop": loop,
        "argv": sys.argv[1:],
    }


@dataclass(slots=True)
class Report:
    started_at: str
    machine: dict[str, Any] = field(default_factory=machine_info)
    baselines: dict[str, Baseline] = field(default_factory=dict)
    scenarios: list[ScenarioResult] = field(default_factory=list)
    finished_at: str | None = None
    target: str = ""  # "embedded" or the name server address

    def add_baseline(self, baseline: Baseline) -> Baseline:
        self.baselines[baseline.name] = baseline
        return baseline

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": REPORT_FORMAT,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "target": self.target,
            "machine": self.machine,
            "baselines": {k: b.to_dict() for k, b in self.baselines.items()},
            "scenarios": [s.to_dict() for s in self.scenarios],
            "summary": {
                "scenarios": len(self.scenarios),
                "targets_met": sum(1 for s in self.scenarios if s.met is True),
                "targets_missed": sum(1 for s in self.scenarios if s.met is False),
            },
        }

    def write_json(self, path: str | Path) -> Path:
        """Write atomically (temp file + rename) so a reader never sees half a report."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".bench-", suffix=".json", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.to_dict(), f, indent=2, sort_keys=False)
                f.write("\n")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    def format_text(self) -> str:
        lines = [f"rocketq bench — {self.started_at} — {self.machine.get('platform')} — {self.machine.get('loop')}"]
        if self.baselines:
            lines.append("baselines (same run):")
            lines.extend(f"   {b.format()}" for b in self.baselines.values())
        lines.extend(s.format() for s in self.scenarios)
        return "\n".join(lines)

    def format_markdown(self) -> str:
        """The summary table used in docs/performance.md and the README."""
        rows = ["| scenario | result | same-run baseline | target | |", "|---|---|---|---|---|"]
        for s in self.scenarios:
            rows.append(
                f"| {s.title} | {result_cell(s)} | {_ratios_cell(s.ratios.items())} | "
                f"{'; '.join(t.describe() for t in s.targets) or '—'} | {_verdict(s.met)} |"
            )
        return "\n".join(rows)


def result_cell(s: ScenarioResult) -> str:
    parts = []
    if s.throughput is not None:
        parts.append(f"{s.throughput.msgs_per_s:,.0f} msg/s")
    if s.latency is not None:
        parts.append(f"p50 {s.latency.p50:.2f} / p99 {s.latency.p99:.2f} / p99.9 {s.latency.p999:.2f} ms")
    if "rss_drift_pct" in s.extra:
        parts.append(f"RSS drift {s.extra['rss_drift_pct']:.1f} %")
    return ", ".join(parts) or "—"


def _ratios_cell(items: Iterable[tuple[str, float]]) -> str:
    return ", ".join(f"{ratio:.2f} × {name}" for name, ratio in items) or "—"


def _verdict(met: bool | None) -> str:
    return {True: "met", False: "**missed**", None: "—"}[met]


def markdown_from_json(data: dict[str, Any]) -> str:
    """The markdown summary of a JSON report (``rocketq bench report PATH``): one row per scenario with its
    result, its same-run baseline ratios, its targets and the command that reproduces it, then the baselines."""
    rows = [
        "| scenario | result | same-run baseline | target | | command |",
        "|---|---|---|---|---|---|",
    ]
    for s in data.get("scenarios", []):
        parts = []
        tp = s.get("throughput")
        if tp:
            parts.append(f"{tp['msgs_per_s']:,.0f} msg/s")
        lat = s.get("latency_ms")
        if lat:
            parts.append(
                f"p50 {lat['p50']:.2f} / p99 {lat['p99']:.2f} / p99.9 {lat['p999']:.2f} / max {lat['max']:.2f} ms"
            )
        extra = s.get("extra") or {}
        if "rss_drift_pct" in extra:
            parts.append(
                f"RSS {extra.get('rss_min_mb', 0):.0f}–{extra.get('rss_max_mb', 0):.0f} MB, "
                f"drift {extra['rss_drift_pct']:.1f} %"
            )
        for key in ("broker_cpu_us_per_msg", "client_cpu_us_per_msg"):
            if key in extra:
                parts.append(f"{key.split('_')[0]} {extra[key]:.1f} µs/msg")
        ratios = ", ".join(f"{v:.2f} × {k}" for k, v in (s.get("ratios") or {}).items()) or "—"
        targets = "; ".join(t["text"] for t in s.get("targets", [])) or "—"
        verdict = {True: "met", False: "**missed**", None: "—"}[s.get("met")]
        failed = [n for n in s.get("notes", []) if n.startswith("failed:")]
        result = "<br>".join(parts) or (failed[0] if failed else "—")
        rows.append(f"| {s['title']} | {result} | {ratios} | {targets} | {verdict} | `{s.get('command', '')}` |")
    lines = ["\n".join(rows), "", "Baselines (same run):", ""]
    for b in (data.get("baselines") or {}).values():
        lines.append(f"* {b['title']}: {b['value']:,.0f} {b['unit']}")
    machine = data.get("machine") or {}
    lines += ["", f"Run {data.get('started_at')} → {data.get('finished_at')}, {machine.get('platform')}, "
              f"Python {machine.get('python')}, {machine.get('loop')}, {machine.get('cpus')} CPUs."]  # fmt: skip
    return "\n".join(lines)
