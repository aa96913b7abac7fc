"""``rocketq bench`` argument parsing: options → scenario specs, and the commands printed in reports."""

from __future__ import annotations

import pytest

from rocketq.bench.scenarios import (
    ConsumeSpec,
    E2ESpec,
    MemorySpec,
    ProduceSpec,
    StandardSpec,
)
from rocketq.cli.bench import build_common, spec_from_args
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
