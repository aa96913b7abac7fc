"""Targets, results and the JSON/text/markdown report of ``rocketq bench``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketq.bench.report import Baseline, Report, ScenarioResult, Target
from rocketq.bench.stats import summarize, throughput


def _result(rate: float = 7000.0, p99: float = 0.8) -> ScenarioResult:
    lat = summarize([0.2] * 98 + [p99, p99])
    return ScenarioResult(
        name="produce-sync",
        title="produce, wait for each ack (1024 B)",
        command="rocketq bench produce --mode sync --embedded",
        params={"mode": "sync"},
        throughput=throughput(int(rate * 10), 10.0, 1024),
        latency=lat,
        ratios={"echo": 0.5},
        targets=[Target("msgs_per_s", ">=", 6000), Target("latency_p99_ms", "<=", 1.0)],
        extra={"broker_cpu_us_per_msg": 50.0, "label": "x"},
    )


def test_target_checks_and_describes() -> None:
    t = Target("msgs_per_s", ">=", 60_000)
    assert t.check({"msgs_per_s": 60_000}) is True
    assert t.check({"msgs_per_s": 59_999}) is False
    assert t.check({}) is None
    assert t.describe() == "≥ 60,000 msg/s"
    assert Target("latency_p99_ms", "<=", 5.0).describe() == "p99 ≤ 5 ms"
    with pytest.raises(ValueError):
        Target("msgs_per_s", ">", 1)


def test_result_metrics_and_verdict() -> None:
    ok = _result()
    m = ok.metrics()
    assert m["msgs_per_s"] == pytest.approx(7000)
    assert m["latency_p99_ms"] == pytest.approx(0.8)
    assert m["broker_cpu_us_per_msg"] == 50.0
    assert "label" not in m  # only numbers are metrics
    assert ok.met is True
    assert _result(rate=5000).met is False
    assert _result(p99=1.5).met is False
    no_targets = _result()
    no_targets.targets = []
    assert no_targets.met is None
    unmeasured = _result()
    unmeasured.throughput = None
    assert unmeasured.met is False  # one target measured and met, the other not measured at all


def test_result_text_names_command_ratios_and_verdicts() -> None:
    text = _result(rate=5000).format()
    assert "$ rocketq bench produce --mode sync --embedded" in text
    assert "0.50 × baseline echo" in text
    assert "MISSED" in text and ": met" in text


def test_report_json_round_trip(tmp_path: Path) -> None:
    report = Report(started_at="2026-01-01T00:00:00+00:00", target="embedded")
    report.add_baseline(Baseline("echo", "bare asyncio request/response", 100_000.0, "req/s", {"inflight": 64}))
    report.scenarios.append(_result())
    report.scenarios.append(_result(rate=1000))
    path = report.write_json(tmp_path / "out" / "report.json")
    data = json.loads(path.read_text())
    assert data["format"] == 1
    assert data["baselines"]["echo"]["value"] == 100_000.0
    assert data["baselines"]["echo"]["inflight"] == 64
    first = data["scenarios"][0]
    assert first["command"].startswith("rocketq bench produce")
    assert first["throughput"]["msgs_per_s"] == pytest.approx(7000)
    assert first["latency_ms"]["p99"] == pytest.approx(0.8)
    assert [t["met"] for t in first["targets"]] == [True, True]
    assert data["summary"] == {"scenarios": 2, "targets_met": 1, "targets_missed": 1}
    assert data["machine"]["cpus"] >= 1
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["report.json"]  # no temp file left behind


def test_report_overwrites_atomically(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("old")
    Report(started_at="t").write_json(path)
    assert json.loads(path.read_text())["scenarios"] == []


def test_markdown_table() -> None:
    report = Report(started_at="t")
    report.scenarios.append(_result(rate=5000))
    table = report.format_markdown().splitlines()
    assert table[0].startswith("| scenario |")
    assert "5,000 msg/s" in table[2] and "**missed**" in table[2] and "0.50 × echo" in table[2]


def test_markdown_from_a_json_report(tmp_path: Path) -> None:
    from rocketq.bench.report import markdown_from_json

    report = Report(started_at="t0", finished_at="t1")
    report.add_baseline(Baseline("echo", "bare asyncio request/response", 100_000.0, "req/s"))
    report.scenarios.append(_result())
    failed = ScenarioResult(name="memory", title="broker RSS", command="", params={}, notes=["failed: OSError: x"])
    report.scenarios.append(failed)
    text = markdown_from_json(json.loads(report.write_json(tmp_path / "r.json").read_text()))
    lines = text.splitlines()
    assert lines[0].startswith("| scenario | result |")
    assert "7,000 msg/s" in lines[2] and "broker 50.0 µs/msg" in lines[2] and "| met |" in lines[2]
    assert "`rocketq bench produce --mode sync --embedded`" in lines[2]
    assert "failed: OSError: x" in lines[3]
    assert "* bare asyncio request/response: 100,000 req/s" in text


def test_report_command_prints_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rocketq.cli.main import main

    path = Report(started_at="t").write_json(tmp_path / "r.json")
    assert main(["bench", "report", str(path)]) == 0
    assert capsys.readouterr().out.startswith("| scenario |")
    assert main(["bench", "report", str(tmp_path / "missing.json")]) == 2
