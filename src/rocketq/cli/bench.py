"""``rocketq bench``: RocketMQ's benchmark tools for rocketq (and any RocketMQ 4.x cluster reachable with ``-n``).

    rocketq bench produce --mode {sync,async,oneway,batch} [--inflight N] [--batch B] [--body BYTES]
                          [--topics T] [--queues Q] [--count N | --duration S] [--flush MODE] [--client sdk|raw]
    rocketq bench consume --mode {lite-pull,push} [--backlog N | --live --count N] [--pull-batch N]
    rocketq bench e2e     [--rate R] [--duration S] [--mode push|lite-pull]
    rocketq bench memory  [--rate R] [--duration S] [--batch B]
    rocketq bench baseline                       # only the same-run baselines
    rocketq bench standard [--quick] [--skip NAME ...] [--soak S]

Every command takes ``--embedded`` (the default: start a standalone name server + broker as a child process
in a temporary directory) or ``-n HOST:PORT`` (a running cluster; add ``--broker-pid PID`` when that broker runs
on this machine, any implementation, to get its CPU per message as ``--embedded`` does), ``--json PATH`` (write
the report), ``--no-progress`` and ``--no-baselines``. Results print as text on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import logging
import sys
from typing import Any

from rocketq.bench.consume import ConsumeSpec, run_consume
from rocketq.bench.e2e import E2ESpec, run_e2e
from rocketq.bench.echo import cpu_seconds
from rocketq.bench.memory import MemorySpec, run_memory
from rocketq.bench.produce import ProduceSpec, run_produce
from rocketq.bench.report import Report, ScenarioResult
from rocketq.bench.scenarios import StandardSpec, run_standard
from rocketq.bench.session import ASYNC_FLUSH, SYNC_FLUSH, CommonOptions, Session
from rocketq.cli.command import credential_args
from rocketq.client import SessionCredentials

__all__ = ["broker_pid_problem", "build_common", "register", "spec_from_args"]

STANDARD_NAMES = ("produce-sync", "produce-async", "produce-batch", "drain", "produce-sync-flush", "e2e", "memory")


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, not {text!r}")
    return key, value


def _common_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    where = common.add_mutually_exclusive_group()
    where.add_argument("--embedded", action="store_true", help="start a standalone broker in a temp dir (default)")
    where.add_argument("-n", "--namesrv", metavar="HOST:PORT", help="benchmark a running cluster instead")
    common.add_argument("--broker-pid", type=_positive_int, metavar="PID",
                        help="with -n: the broker's process on this machine, read from /proc for broker CPU "
                             "per message (and RSS in the memory scenario)")  # fmt: skip
    common.add_argument("--broker-opt", type=_key_value, action="append", default=[], metavar="KEY=VALUE",
                        help="broker.conf property for the embedded broker (repeatable)")  # fmt: skip
    common.add_argument("--json", metavar="PATH", help="write the report as JSON")
    common.add_argument("--no-progress", action="store_true", help="no live progress on stderr")
    common.add_argument("--no-baselines", action="store_true", help="skip the same-run baselines")
    common.add_argument("--no-gc-freeze", action="store_true",
                        help="do not gc.freeze() the load generator's heap before measuring")  # fmt: skip
    common.add_argument("--baseline-duration", type=_positive_float, default=2.0, metavar="S",
                        help="seconds per request/response baseline (default 2)")  # fmt: skip
    credential_args(common)
    return common


def register(subparsers: Any) -> None:
    common = _common_parser()
    bench = subparsers.add_parser(
        "bench", help="benchmark a broker (produce, consume, e2e, memory, standard)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    sub = bench.add_subparsers(dest="bench_command", metavar="SCENARIO", required=True)

    p = sub.add_parser("produce", parents=[common], help="send messages as fast as the mode allows")
    p.add_argument("--mode", choices=["sync", "async", "oneway", "batch"], default="async")
    p.add_argument("--inflight", type=_positive_int,
                   help="operations in flight (default: sync 1, async 1000, batch 32)")  # fmt: skip
    p.add_argument("--batch", type=_positive_int, default=32, help="messages per batch request (--mode batch)")
    _body_topics(p, topics=True)
    amount = p.add_mutually_exclusive_group()
    amount.add_argument("--count", type=_positive_int, help="messages to send")
    amount.add_argument("--duration", type=_positive_float, help="seconds to send for (default 10)")
    p.add_argument("--warmup", type=float, default=1.0, metavar="S", help="unmeasured warm-up seconds (default 1)")
    _flush(p)
    p.add_argument("--client", choices=["sdk", "raw"], default="sdk",
                   help="sdk: rocketq.client.Producer (default); raw: requests over the remoting layer")  # fmt: skip
    p.add_argument("--acl", choices=["off", "on", "both"], default="off",
                   help="on: the broker checks ACL (embedded: aclEnable=true and one account; -n: the broker's own, "
                        "signing with --access-key/--secret-key) and every request is signed; both: the same "
                        "scenario without, then with ACL, in one run (default off)")  # fmt: skip
    p.add_argument("--trace", action="store_true",
                   help="the producer records message trace (enable_msg_trace; Pub records to RMQ_SYS_TRACE_TOPIC)")
    p.add_argument("--client-metrics", action="store_true",
                   help="the producer records client metrics (ClientConfig.metrics, rocketq.client.metrics)")
    p.add_argument("--auto-batch", action="store_true",
                   help="the producer gathers sends into batch requests (auto_batch, RocketMQ 5.1's autoBatch; "
                        "sync and async modes)")  # fmt: skip
    p.set_defaults(bench_func=_produce)

    c = sub.add_parser("consume", parents=[common], help="drain a stored backlog, or consume while producing")
    c.add_argument("--mode", choices=["lite-pull", "push"], default="lite-pull")
    c.add_argument("--backlog", type=_positive_int, default=1_000_000, help="messages stored first (default 1e6)")
    c.add_argument("--live", action="store_true", help="consume while a producer sends --count messages")
    c.add_argument("--count", type=_positive_int, default=200_000, help="messages sent during --live")
    c.add_argument("--pull-batch", type=_positive_int, default=32, help="messages per pull (default 32)")
    _body_topics(c, topics=False)
    _flush(c)
    c.set_defaults(bench_func=_consume)

    e = sub.add_parser("e2e", parents=[common], help="latency from send to consume at a fixed rate")
    e.add_argument("--rate", type=_positive_float, default=5000.0, help="messages per second (default 5000)")
    e.add_argument("--duration", type=_positive_float, default=30.0, help="measured seconds (default 30)")
    e.add_argument("--warmup", type=float, default=2.0, metavar="S")
    e.add_argument("--mode", choices=["push", "lite-pull"], default="push")
    _body_topics(e, topics=False)
    e.set_defaults(bench_func=_e2e)

    m = sub.add_parser("memory", parents=[common], help="the broker's resident size under a steady batch load")
    m.add_argument("--rate", type=_positive_float, default=50_000.0, help="messages per second (default 50000)")
    m.add_argument("--duration", type=_positive_float, default=600.0, help="seconds (default 600)")
    m.add_argument("--batch", type=_positive_int, default=32)
    m.add_argument("--sample-interval", type=_positive_float, default=1.0, metavar="S")
    _body_topics(m, topics=False)
    m.set_defaults(bench_func=_memory)

    b = sub.add_parser("baseline", parents=[common], help="only the same-run baselines")
    b.add_argument("--body", type=_positive_int, default=1024)
    b.set_defaults(bench_func=_baseline)

    r = sub.add_parser("report", help="print a JSON report (--json) as the markdown table of docs/performance.md")
    r.add_argument("path", help="a report written with --json")
    r.set_defaults(func=_print_report)

    s = sub.add_parser("standard", parents=[common], help="every scenario of the performance issue (make bench)")
    s.add_argument("--quick", action="store_true", help="short durations and a 100k backlog (a smoke run)")
    s.add_argument("--skip", action="append", default=[], choices=STANDARD_NAMES, help="skip a scenario")
    s.add_argument("--soak", type=_positive_float, metavar="S", help="memory scenario duration (default 600)")
    s.set_defaults(bench_func=_standard)
    bench.set_defaults(func=main)


def _body_topics(p: argparse.ArgumentParser, *, topics: bool) -> None:
    p.add_argument("--body", type=_positive_int, default=1024, help="body size in bytes (default 1024)")
    if topics:
        p.add_argument("--topics", type=_positive_int, default=1, help="topics to spread sends over (default 1)")
    p.add_argument("--queues", type=_positive_int, default=8, help="queues per topic (default 8)")


def _flush(p: argparse.ArgumentParser) -> None:
    p.add_argument("--flush", choices=[ASYNC_FLUSH, SYNC_FLUSH], default=ASYNC_FLUSH,
                   help="flushDiskType of the embedded broker (with -n: the broker's own)")  # fmt: skip


def _print_report(args: argparse.Namespace) -> int:
    import json

    from rocketq.bench.report import markdown_from_json

    try:
        with open(args.path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        print(f"rocketq bench report: cannot read {args.path}: {exc}", file=sys.stderr)
        return 2
    print(markdown_from_json(data))
    return 0


def build_common(args: argparse.Namespace) -> CommonOptions:
    return CommonOptions(
        namesrv=args.namesrv,
        broker_pid=args.broker_pid,
        broker_opts=dict(args.broker_opt),
        progress=not args.no_progress,
        baselines=not args.no_baselines,
        baseline_duration=args.baseline_duration,
        gc_freeze=not args.no_gc_freeze,
        credentials=_credentials(args),
    )


def _credentials(args: argparse.Namespace) -> SessionCredentials | None:
    if not args.access_key and not args.secret_key:
        return None
    if not args.access_key or not args.secret_key:
        raise SystemExit("rocketq bench: --access-key and --secret-key go together")
    return SessionCredentials(args.access_key, args.secret_key, args.security_token)


def broker_pid_problem(common: CommonOptions) -> str | None:
    """Why ``--broker-pid`` cannot be used as given (None: fine, or not given)."""
    pid = common.broker_pid
    if pid is None:
        return None
    if common.namesrv is None:
        return "--broker-pid goes with -n (the embedded broker's process is known)"
    if cpu_seconds(pid) is None:
        return f"--broker-pid {pid}: no such process readable in /proc on this machine"
    return None


def spec_from_args(args: argparse.Namespace) -> Any:
    """The scenario spec the parsed arguments describe."""
    cmd = args.bench_command
    if cmd == "produce":
        duration = args.duration if args.duration is not None else (None if args.count else 10.0)
        return ProduceSpec(
            mode=args.mode, inflight=args.inflight, batch=args.batch, body=args.body, topics=args.topics,
            queues=args.queues, count=args.count, duration=duration, warmup=args.warmup, flush=args.flush,
            client=args.client, acl="on" if args.acl == "on" else "off", trace=args.trace,
            client_metrics=args.client_metrics, auto_batch=args.auto_batch,
        )  # fmt: skip
    if cmd == "consume":
        return ConsumeSpec(
            mode=args.mode, backlog=0 if args.live else args.backlog, live=args.live, count=args.count,
            pull_batch=args.pull_batch, body=args.body, queues=args.queues, flush=args.flush,
        )  # fmt: skip
    if cmd == "e2e":
        return E2ESpec(rate=args.rate, duration=args.duration, body=args.body, queues=args.queues,
                       warmup=args.warmup, mode=args.mode)  # fmt: skip
    if cmd == "memory":
        return MemorySpec(rate=args.rate, duration=args.duration, batch=args.batch, body=args.body,
                          queues=args.queues, sample_interval=args.sample_interval)  # fmt: skip
    if cmd == "standard":
        return StandardSpec(quick=args.quick, skip=tuple(args.skip), soak=args.soak)
    return None


def main(args: argparse.Namespace) -> int:
    from rocketq.cli.servers import run_async

    if args.log_level == "INFO":  # the default: keep the clients' chatter (rebalance, start/stop) off the display
        logging.getLogger("rocketq").setLevel(logging.ERROR)
    common = build_common(args)
    if problem := broker_pid_problem(common):
        print(f"rocketq bench: {problem}", file=sys.stderr)
        return 2
    spec = spec_from_args(args)
    if getattr(args, "acl", "off") == "both":
        args.bench_func = _produce_without_and_with_acl
    report = Report(started_at=_now())
    report.target = common.namesrv or "embedded"
    return run_async(lambda: _run(args, common, spec, report))


async def _run(args: argparse.Namespace, common: CommonOptions, spec: Any, report: Report) -> int:
    session = Session(common, report)

    def on_result(result: ScenarioResult) -> None:
        report.scenarios.append(result)
        print(result.format(), flush=True)
        if args.json:  # keep the file current: a long run that dies still leaves what it measured
            report.finished_at = _now()
            report.write_json(args.json)

    try:
        await args.bench_func(session, spec, on_result)
    except KeyboardInterrupt:  # pragma: no cover - interactive
        pass
    finally:
        await session.close()
    report.finished_at = _now()
    if report.baselines:
        print("baselines (same run):")
        for b in report.baselines.values():
            print(f"   {b.format()}")
    if args.json:
        path = report.write_json(args.json)
        print(f"report written to {path}", file=sys.stderr)
    failed = [s for s in report.scenarios if any(n.startswith("failed:") for n in s.notes)]
    return 1 if failed else 0


async def _produce(session: Session, spec: ProduceSpec, on_result: Any) -> None:
    on_result(await run_produce(session, spec, f"produce-{spec.mode}"))


async def _produce_without_and_with_acl(session: Session, spec: ProduceSpec, on_result: Any) -> None:
    """The cost of ACL on the send path: the same scenario on a broker without, then with ACL (same run)."""
    on_result(await run_produce(session, dataclasses.replace(spec, acl="off"), f"produce-{spec.mode}"))
    on_result(await run_produce(session, dataclasses.replace(spec, acl="on"), f"produce-{spec.mode}-acl"))


async def _consume(session: Session, spec: ConsumeSpec, on_result: Any) -> None:
    on_result(await run_consume(session, spec, "consume-live" if spec.live else "drain"))


async def _e2e(session: Session, spec: E2ESpec, on_result: Any) -> None:
    on_result(await run_e2e(session, spec))


async def _memory(session: Session, spec: MemorySpec, on_result: Any) -> None:
    on_result(await run_memory(session, spec))


async def _baseline(session: Session, spec: Any, on_result: Any) -> None:
    from rocketq.bench.session import pull_frame_sizes, send_frame_sizes

    body = 1024
    async with session.cluster(ASYNC_FLUSH):
        pass  # the disk baseline runs against the (embedded) store's directory
    if session.common.namesrv is not None:
        import tempfile

        await session.disk_baseline(tempfile.gettempdir())
    req, rep = send_frame_sizes(body)
    await session.echo_baseline(req, rep, 1)
    await session.echo_baseline(req, rep, 1000)
    req, rep = send_frame_sizes(body, 32)
    await session.echo_baseline(req, rep, 32)
    req, rep = pull_frame_sizes(body, 32)
    await session.echo_baseline(req, rep, 8)


async def _standard(session: Session, spec: StandardSpec, on_result: Any) -> None:
    await run_standard(session, spec, on_result)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
