"""The example pipelines under examples/ run as written (on the shared session and servers)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"rocketq_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_order_pipeline_is_exactly_once_across_a_crash_and_restarts(spark: Any, rq: Any, tmp_path: Path) -> None:
    demo = _load("spark_order_pipeline")
    results = demo.run_demo(spark, rq.namesrv_addr, tmp_path)  # asserts one message per minute, right totals
    assert [r["minute"] for r in results] == list(range(10))
    assert all(r["orders"] == 80 for r in results)


def test_store_analytics_reports(spark: Any, tmp_path: Path) -> None:
    demo = _load("spark_store_analytics")
    store = demo.write_demo_store(tmp_path / "cluster")
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    report = demo.analyze(spark, copy, top=3)
    per_topic = {r["topic"]: r["messages"] for r in report["traffic_per_topic_per_hour"]}
    assert per_topic == {"Orders": 600, "Payments": 300, "Audit": 100}
    assert sum(r["messages"] for r in report["size_distribution"]) == 1000
    assert len(report["top_keys"]) == 3
    assert all(r["key"].startswith("customer-") for r in report["top_keys"])
