"""``rocketq bench`` argument parsing: options → scenario specs, and the commands printed in reports."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from rocketq.bench.report import ScenarioResult
from rocketq.bench.scenarios import (
    ConsumeSpec,
    E2ESpec,
    MemorySpec,
    ProduceSpec,
    StandardSpec,
)
from rocketq.bench.session import Cluster, CommonOptions, CpuMeter
from rocketq.cli.bench import broker_pid_problem, build_common, spec_from_args
from rocketq.cli.main import build_parser


def parse(*argv: str):  # type: ignore[no-untyped-def]
    return build_parser().parse_args(["bench", *argv])


def test_produce_defaults() -> None:
    args = parse("produce")
    spec = spec_from_args(args)
    assert spec == ProduceSpec()
    got = (spec.mode, spec.effective_inflight, spec.duration, spec.body, spec.client)
    assert got == ("async", 1000, 10.0, 1024, "sdk")
    common = build_common(args)
    assert common.embedded and common.progress and common.baselines


def test_produce_all_options() -> None:
    args = parse(
        "produce", "--mode", "batch", "--batch", "16", "--inflight", "8", "--body", "4096", "--topics", "3",
        "--queues", "4", "--count", "10000", "--flush", "SYNC_FLUSH", "--client", "raw", "--warmup", "0",
        "-n", "10.0.0.1:9876", "--json", "out.json", "--no-progress", "--no-baselines",
    )  # fmt: skip
    spec = spec_from_args(args)
    assert spec == ProduceSpec(mode="batch", batch=16, inflight=8, body=4096, topics=3, queues=4, count=10000,
                               duration=None, warmup=0.0, flush="SYNC_FLUSH", client="raw")  # fmt: skip
    assert spec.per_op == 16
    common = build_common(args)
    assert common.namesrv == "10.0.0.1:9876" and not common.embedded
    assert not common.progress and not common.baselines
    assert args.json == "out.json"


@pytest.mark.parametrize("mode,inflight", [("sync", 1), ("async", 1000), ("batch", 32), ("oneway", 1)])
def test_default_inflight_per_mode(mode: str, inflight: int) -> None:
    assert spec_from_args(parse("produce", "--mode", mode)).effective_inflight == inflight


@pytest.mark.parametrize(
    "argv",
    [
        ("produce", "--embedded", "-n", "h:1"),  # one target only
        ("produce", "--count", "5", "--duration", "1"),  # count or duration
        ("produce", "--mode", "fast"),
        ("produce", "--inflight", "0"),
        ("produce", "--body", "-1"),
        ("produce", "--broker-opt", "novalue"),
        ("consume", "--mode", "pop"),
        ("standard", "--skip", "nonsense"),
        (),  # a scenario is required
    ],
)
def test_bad_arguments_exit(argv: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit):
        parse(*argv)


def test_broker_opts_repeat() -> None:
    args = parse("produce", "--broker-opt", "flushIntervalCommitLog=200", "--broker-opt", "a=b=c")
    assert build_common(args).broker_opts == {"flushIntervalCommitLog": "200", "a": "b=c"}


def test_consume_backlog_and_live() -> None:
    assert spec_from_args(parse("consume")) == ConsumeSpec()
    live = spec_from_args(parse("consume", "--live", "--count", "5000", "--mode", "push"))
    assert live.live and live.backlog == 0 and live.count == 5000 and live.mode == "push"
    assert spec_from_args(parse("consume", "--backlog", "10", "--pull-batch", "64")).pull_batch == 64


def test_e2e_memory_standard() -> None:
    assert spec_from_args(parse("e2e", "--rate", "100", "--duration", "2")) == E2ESpec(rate=100, duration=2)
    assert spec_from_args(parse("memory", "--duration", "60")) == MemorySpec(duration=60)
    std = spec_from_args(parse("standard", "--quick", "--skip", "memory", "--skip", "e2e", "--soak", "30"))
    assert std == StandardSpec(quick=True, skip=("memory", "e2e"), soak=30)
    assert spec_from_args(parse("baseline")) is None


def test_make_bench_command_line_parses() -> None:
    # The Makefile's `bench` target.
    args = parse("standard", "--embedded", "--json", "benchmarks/last-run.json")
    assert args.json == "benchmarks/last-run.json"
    assert spec_from_args(args) == StandardSpec()


def test_broker_pid_goes_with_namesrv() -> None:
    args = parse("produce", "-n", "127.0.0.1:9876", "--broker-pid", str(os.getpid()))
    common = build_common(args)
    assert common.broker_pid == os.getpid()
    assert broker_pid_problem(common) is None
    # The reproducing command line keeps it.
    assert ["--broker-pid", str(os.getpid())] == common.target_args()[2:4]
    embedded = build_common(parse("produce", "--broker-pid", str(os.getpid())))
    assert "goes with -n" in (broker_pid_problem(embedded) or "")


def test_broker_pid_of_no_process_is_refused() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: its pid names no process now
    common = build_common(parse("produce", "-n", "127.0.0.1:9876", "--broker-pid", str(proc.pid)))
    assert "no such process" in (broker_pid_problem(common) or "")


def test_broker_pid_is_measured_like_the_embedded_broker() -> None:
    # A Cluster from -n with --broker-pid reads that process's CPU and RSS, and CpuMeter reports per message.
    common = CommonOptions(namesrv="127.0.0.1:9876", broker_pid=os.getpid(), gc_freeze=False)
    cluster = Cluster(common.namesrv or "", None, "as configured on the broker", common.broker_pid)
    assert cluster.pid == os.getpid() and cluster.cpu() is not None
    rss = cluster.rss()
    assert rss is not None and rss.rss_kb > 0
    meter = CpuMeter(cluster, common)
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:  # burn some CPU in "the broker" (this process)
        pass
    result = ScenarioResult("x", "x", "", {})
    meter.fill(result, 1000)
    assert result.extra["broker_cpu_us_per_msg"] > 0
    without = Cluster("127.0.0.1:9876", None, "as configured on the broker")
    assert without.pid is None and without.cpu() is None and without.rss() is None


def test_produce_acl_option_and_credentials() -> None:
    assert spec_from_args(parse("produce")).acl == "off"
    args = parse("produce", "--acl", "on", "-n", "10.0.0.1:9876", "--access-key", "bench-user", "--secret-key",
                 "bench-secret")  # fmt: skip
    spec = spec_from_args(args)
    assert spec.acl == "on" and "ACL on" in spec.title() and spec.targets() == []
    common = build_common(args)
    assert common.credentials is not None and common.credentials.access_key == "bench-user"
    assert "bench-secret" not in " ".join(common.target_args())  # a report's command line holds no secret
    from rocketq.bench.session import command_line

    assert "--acl on" in command_line("produce", spec, common)
    # 'both': the spec of each half is 'off' then 'on'; the parsed spec itself is the unsigned one
    assert spec_from_args(parse("produce", "--acl", "both")).acl == "off"


def test_produce_trace_and_client_metrics_options() -> None:
    from rocketq.bench.session import command_line

    plain = spec_from_args(parse("produce"))
    assert (plain.trace, plain.client_metrics) == (False, False)
    args = parse("produce", "--trace", "--client-metrics")
    spec = spec_from_args(args)
    assert (spec.trace, spec.client_metrics) == (True, True)
    assert "message trace on" in spec.title() and "client metrics on" in spec.title()
    assert spec.targets() == []  # not the standard scenario: no targets to meet
    line = command_line("produce", spec, build_common(args))
    assert "--trace" in line and "--client-metrics" in line
