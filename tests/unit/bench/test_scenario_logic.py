"""Pure pieces of the scenarios: reproducible command lines, targets, frame sizes, RSS drift, start-up parsing."""

from __future__ import annotations

import pytest

from rocketq.bench._echo_server import canned_frame, split_frames
from rocketq.bench.broker import BrokerProcess, parse_listen_lines
from rocketq.bench.scenarios import (
    CommonOptions,
    ConsumeSpec,
    E2ESpec,
    MemorySpec,
    ProduceSpec,
    StandardSpec,
    _command,
    pull_frame_sizes,
    rss_drift,
    send_frame_sizes,
)
from rocketq.cli.bench import spec_from_args
from rocketq.cli.main import build_parser


def test_command_lists_only_non_default_options() -> None:
    common = CommonOptions()
    assert _command("produce", ProduceSpec(mode="sync"), common) == "rocketq bench produce --mode sync --embedded"
    cmd = _command("produce", ProduceSpec(mode="batch", batch=16, flush="SYNC_FLUSH"), CommonOptions(namesrv="h:1"))
    assert cmd == "rocketq bench produce --mode batch --batch 16 --flush SYNC_FLUSH -n h:1"
    cmd = _command("consume", ConsumeSpec(live=True, backlog=0), CommonOptions(broker_opts={"a": "1"}))
    assert cmd == "rocketq bench consume --mode lite-pull --backlog 0 --live --embedded --broker-opt a=1"


@pytest.mark.parametrize(
    "spec",
    [
        ProduceSpec(mode="sync", duration=3.0, warmup=0.5),
        ProduceSpec(mode="batch", batch=8, count=1000, duration=None),
        ProduceSpec(mode="async", inflight=64, body=100, client="raw", flush="SYNC_FLUSH"),
    ],
)
def test_printed_produce_command_parses_back_to_the_same_spec(spec: ProduceSpec) -> None:
    argv = _command("produce", spec, CommonOptions()).split()[1:]
    assert spec_from_args(build_parser().parse_args(argv)) == spec


def test_targets_follow_the_issue() -> None:
    assert [t.value for t in ProduceSpec(mode="sync").targets()] == [6000, 1.0]
    assert [t.value for t in ProduceSpec(mode="async").targets()] == [60_000]
    assert ProduceSpec(mode="async", inflight=10).targets() == []
    assert [t.value for t in ProduceSpec(mode="batch").targets()] == [150_000]
    assert [t.value for t in ProduceSpec(mode="async", flush="SYNC_FLUSH").targets()] == [20_000]
    assert ProduceSpec(mode="async", body=100).targets() == []
    assert ProduceSpec(mode="async", client="raw").targets() == []
    assert [t.value for t in ConsumeSpec().targets()] == [150_000]
    assert ConsumeSpec(backlog=1000).targets() == []
    assert [t.metric for t in E2ESpec().targets()] == ["latency_p99_ms"]
    assert [t.metric for t in MemorySpec().targets()] == ["rss_drift_pct"]
    assert MemorySpec(duration=60).targets() == []


def test_standard_set_and_quick() -> None:
    names = [n for n, _ in StandardSpec().scenarios()]
    assert names == ["produce-sync", "produce-async", "produce-batch", "drain", "produce-sync-flush", "e2e", "memory"]
    full = dict(StandardSpec().scenarios())
    assert full["drain"].backlog == 1_000_000 and full["memory"].duration == 600
    quick = dict(StandardSpec(quick=True, skip=("e2e",), soak=5).scenarios())
    assert "e2e" not in quick and quick["memory"].duration == 5 and quick["drain"].backlog == 100_000


def test_frame_sizes_grow_with_body_and_batch() -> None:
    req1, rep1 = send_frame_sizes(1024)
    assert 1024 < req1 < 1024 + 600 and 100 < rep1 < 400
    req32, rep32 = send_frame_sizes(1024, 32)
    assert req32 > 32 * 1024 and rep32 > rep1
    preq, prep = pull_frame_sizes(1024, 32)
    assert preq < 600 and prep > 32 * (1024 + 91)


def test_rss_drift() -> None:
    ref, drift = rss_drift([500] + [100] * 9 + [110], window=1)  # the first sample is warm-up
    assert ref == 100 and drift == pytest.approx(10.0)
    assert rss_drift([100])[1] == 0.0
    with pytest.raises(ValueError):
        rss_drift([])


def test_rss_drift_follows_the_trend_not_the_sawtooth() -> None:
    sawtooth = [100, 125] * 50  # pages appended between flushes, released at each flush
    ref, drift = rss_drift(sawtooth, window=10)
    assert ref == pytest.approx(112.5) and drift == 0.0
    growing = [100 + i for i in range(100)]  # grows with the backlog
    ref, drift = rss_drift(growing, window=10)
    assert drift > 20  # window medians 104.5 … 194.5 around 144.5


def test_parse_standalone_listen_lines() -> None:
    lines = [
        "name server listening on 0.0.0.0:40001",
        "broker broker-a listening on 0.0.0.0:40002 (VIP 0.0.0.0:40000), advertised as 10.0.0.5:40002 (store /x)",
    ]
    assert parse_listen_lines(lines) == ("127.0.0.1:40001", "10.0.0.5:40002")  # the broker's dial address
    assert parse_listen_lines(lines[:1]) == ("127.0.0.1:40001", None)
    assert parse_listen_lines(["name server listening on 10.1.2.3:9876"])[0] == "10.1.2.3:9876"
    assert parse_listen_lines(["name server listening on 127.0.0.1:9876, [::1]:9876"])[0] == "127.0.0.1:9876"


def test_broker_command_line() -> None:
    b = BrokerProcess(flush="SYNC_FLUSH", options={"flushDiskType": "ASYNC_FLUSH", "x": "1"}, base_dir="/tmp/q")
    cmd = b.command()
    assert cmd[1:4] == ["-m", "rocketq", "--log-level"]
    assert "standalone" in cmd and "--namesrv-port" in cmd and "listenPort=0" in cmd
    assert "flushDiskType=ASYNC_FLUSH" in cmd and "x=1" in cmd  # --broker-opt wins over --flush


def test_echo_framing() -> None:
    frame = canned_frame(100)
    assert len(frame) == 100
    buf = bytearray(frame * 3 + frame[:50])
    assert split_frames(buf) == 3
    assert bytes(buf) == frame[:50]
    buf += frame[50:]
    assert split_frames(buf) == 1 and not buf
    with pytest.raises(ValueError):
        canned_frame(4)
