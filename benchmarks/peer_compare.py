"""rocketq beside Redis Streams and Apache RocketMQ's Java 4.9 broker, in one run (issue 25).

Not a test. Run from the repository root (``make bench`` runs it after ``rocketq bench standard``)::

    PYTHONPATH=src .venv/bin/python benchmarks/peer_compare.py [--quick] [--rounds N] [--json F]
    PYTHONPATH=src .venv/bin/python benchmarks/peer_compare.py --report F     # the table of a saved run

Needs Debian's ``redis-server`` (``apt-get install redis-server``) and redis-py + hiredis (the ``bench`` extra,
``make test``'s venv has it); the Java peer needs the jars of ``scripts/java-interop.sh`` (``--peers`` without
``java-4.9.7`` skips it). Nothing is installed by the bench itself.

The peers run at the same time, each a child process on 127.0.0.1, for the whole run:

* ``rocketq``: ``rocketq standalone``, exactly as ``rocketq bench --embedded`` starts it (ASYNC_FLUSH), driven by
  rocketq's asyncio client (``run_produce``/``run_consume``, as ``rocketq bench produce|consume``);
* ``rocketq-nopoll``: the same with ``busyPollMaxMicros=0`` (the sync scenario only: what a sync send gets
  without the broker polling its sockets);
* ``redis``: Redis 7 with AOF everysec, driven by redis-py over hiredis (``rocketq.bench.redis_streams``);
* ``java-4.9.7``: Apache RocketMQ's broker and name server from Maven (ASYNC_FLUSH, the limits
  ``benchmarks/java_peer.py`` gives it), driven by the same rocketq client as rocketq's broker;
* ``nats`` (optional, not in the default set): NATS JetStream, Debian's ``nats-server`` (``apt-get install
  nats-server``) with a file-storage stream, driven by nats-py (``rocketq.bench.nats_jetstream``);
* ``rabbitmq`` (optional, for the optional ``syncflush`` scenario): a RabbitMQ node of its own (``apt-get install
  rabbitmq-server``), persistent publishes to a durable queue with publisher confirms, driven by aio-pika
  (``rocketq.bench.rabbitmq_confirms``); rocketq's side of that row is a second broker with SYNC_FLUSH.

Scenarios, 1 KiB bodies: ``sync`` (each send awaited), ``async`` (1,000 in flight), ``autobatch`` (rocketq's
client with ``auto_batch`` on, 1,000 in flight: compared with the peers' ``async``) and ``drain`` (a stored
backlog read 128 at a time). Each scenario runs every peer in turn, the order rotated every scenario and every
round; figures are medians over the rounds. Server CPU per message is the server process's user + system time
over the measured window; rocketq's includes its name server (one process under standalone).

rocketq's broker (``commitLogCachedBytes``) and Redis's append-only files (``redis_streams.AOF_CACHED_BYTES``, evicted
from this process) both keep 512 MiB of their log in the page cache and recycle the rest, as a long-running server
does once the page cache is full. The Java broker's commit log stays mapped, so it cannot be evicted from outside:
it runs as it would on a machine with free memory.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rocketq.bench.broker import BrokerProcess
from rocketq.bench.compare import Sample, Target, check_targets, markdown_table, medians, rotation, summary_dict
from rocketq.bench.consume import ConsumeSpec, run_consume
from rocketq.bench.nats_jetstream import NatsServer, nats_drain, nats_send, nats_server
from rocketq.bench.produce import ProduceSpec, run_produce
from rocketq.bench.rabbitmq_confirms import RabbitServer, rabbit_confirmed_send, rabbitmq_server
from rocketq.bench.redis_streams import AOF_CACHED_BYTES, PeerRun, RedisServer, redis_drain, redis_send, redis_server
from rocketq.bench.report import Report, ScenarioResult, machine_info
from rocketq.bench.session import ASYNC_FLUSH, SYNC_FLUSH, CommonOptions, Session
from rocketq.cli.servers import run_async

PEERS = ("rocketq", "rocketq-nopoll", "redis", "java-4.9.7")
#: the default peers, and the optional ones (``--peers``): NATS JetStream where Debian's nats-server is installed
KNOWN_PEERS = (*PEERS, "nats", "rabbitmq")
SCENARIOS = ("sync", "async", "autobatch", "drain")
#: the default scenarios, and the optional SYNC_FLUSH row (rocketq's own SYNC_FLUSH broker against RabbitMQ)
KNOWN_SCENARIOS = (*SCENARIOS, "syncflush")
TITLES = {"rocketq": "rocketq", "rocketq-nopoll": "rocketq, busy poll off", "redis": "Redis 7 Streams",
          "java-4.9.7": "Java 4.9.7 broker", "nats": "NATS JetStream 2.9",
          "rabbitmq": "RabbitMQ 3.10, confirms"}  # fmt: skip
SCENARIO_TITLES = {
    "sync": "sync send (each awaited)",
    "async": "1,000 in flight",
    "autobatch": "1,000 in flight, autoBatch on (rocketq client)",
    "drain": "drain a backlog, 128 per read",
    "syncflush": "1,000 in flight, flushed before the answer (SYNC_FLUSH / publisher confirms)",
}
# who runs what: rocketq's client-side batching has no counterpart on the peers; polling off only matters for sync
RUNS = {"sync": (*PEERS, "nats"), "async": ("rocketq", "redis", "java-4.9.7", "nats"), "autobatch": ("rocketq",),
        "drain": ("rocketq", "redis", "java-4.9.7", "nats"), "syncflush": ("rocketq", "rabbitmq")}  # fmt: skip
#: where rocketq's side of a scenario runs when it is not the ``rocketq`` broker itself
ROCKETQ_BROKER_OF = {"syncflush": "rocketq-syncflush"}
AGAINST = {"autobatch": "async"}
TARGETS = [
    Target("sync", "redis", 1.0),
    Target("async", "redis", 1.0, cpu_at_most_peer=True),
    Target("async", "redis", 2.0, rocketq_scenario="autobatch"),
    Target("drain", "redis", 1.0),
]
JAVA_BROKER_SETTINGS = {"flushDiskType": ASYNC_FLUSH, "mappedFileSizeCommitLog": str(1024**3),
                        "maxTransferCountOnMessageInMemory": "1024"}  # fmt: skip


@dataclass(frozen=True)
class Plan:
    rounds: int
    duration: float
    warmup: float
    backlog: int


QUICK = Plan(rounds=1, duration=2.0, warmup=1.0, backlog=50_000)
FULL = Plan(rounds=3, duration=5.0, warmup=1.0, backlog=200_000)


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------------------------ the peers


@dataclass
class Running:
    name: str
    pid: int
    namesrv: str = ""  # the RocketMQ peers
    redis: RedisServer | None = None
    nats: NatsServer | None = None
    rabbit: RabbitServer | None = None


@contextlib.asynccontextmanager
async def running(name: str, base: Path) -> AsyncIterator[Running]:
    if name == "redis":
        async with redis_server(base) as server:
            yield Running(name, server.pid, redis=server)
    elif name == "nats":
        async with nats_server(base) as nats:
            yield Running(name, nats.pid, nats=nats)
    elif name == "rabbitmq":
        async with rabbitmq_server(base) as rabbit:
            yield Running(name, rabbit.pid, rabbit=rabbit)
    elif name.startswith("rocketq"):
        # A short run never reaches a long-running server's steady state, where the page cache is full and its
        # oldest pages are recycled: both rocketq and Redis keep 512 MiB of their log cached (more than the
        # drain's backlog) and recycle the rest from the start (docs/performance.md, "Recycled pages").
        options = {"commitLogCachedBytes": str(AOF_CACHED_BYTES)}
        if name == "rocketq-nopoll":
            options["busyPollMaxMicros"] = "0"
        flush = SYNC_FLUSH if name == "rocketq-syncflush" else ASYNC_FLUSH
        broker = await BrokerProcess(flush=flush, base_dir=str(base / name), options=options).start()
        try:
            assert broker.pid is not None
            yield Running(name, broker.pid, namesrv=broker.namesrv_addr)
        finally:
            await broker.stop()
    else:
        from rocketq.testing.java import JavaCluster  # only when the Java peer is asked for

        cluster = JavaCluster(base / name, version="4.9", broker_settings=dict(JAVA_BROKER_SETTINGS))
        await asyncio.to_thread(cluster.start, 180.0)
        try:
            yield Running(name, cluster.broker_pid, namesrv=cluster.namesrv_addr)
        finally:
            await asyncio.to_thread(cluster.stop)


def from_rocketq(sample: Sample, r: ScenarioResult) -> Sample:
    if r.throughput is not None and r.throughput.messages:
        sample.msgs_per_s = r.throughput.msgs_per_s
        sample.messages = r.throughput.messages
    sample.errors = r.errors
    sample.server_cpu_us_per_msg = r.extra.get("broker_cpu_us_per_msg")
    sample.client_cpu_us_per_msg = r.extra.get("client_cpu_us_per_msg")
    if r.latency is not None:
        sample.latency_p50_ms, sample.latency_p99_ms = r.latency.p50, r.latency.p99
    sample.notes += r.notes
    return sample


def from_peer_run(sample: Sample, r: PeerRun) -> Sample:
    sample.msgs_per_s = r.msgs_per_s
    sample.messages = r.messages
    sample.server_cpu_us_per_msg = r.us_per_msg(r.server_cpu_s)
    sample.client_cpu_us_per_msg = r.us_per_msg(r.client_cpu_s)
    if r.latency_ms:
        sample.latency_p50_ms, sample.latency_p99_ms = r.latency_ms["p50"], r.latency_ms["p99"]
    sample.errors = r.errors
    sample.notes += r.notes
    return sample


async def measure(peer: Running, sample: Sample, plan: Plan) -> Sample:
    if peer.redis is not None:
        if sample.scenario == "drain":
            return from_peer_run(sample, await redis_drain(peer.redis, backlog=plan.backlog))
        return from_peer_run(sample, await redis_send(peer.redis, sample.scenario, duration=plan.duration,
                                                      warmup=plan.warmup))  # fmt: skip
    if peer.rabbit is not None:
        return from_peer_run(sample, await rabbit_confirmed_send(peer.rabbit, duration=plan.duration,
                                                                 warmup=plan.warmup))  # fmt: skip
    if peer.nats is not None:
        if sample.scenario == "drain":
            return from_peer_run(sample, await nats_drain(peer.nats, backlog=plan.backlog))
        return from_peer_run(sample, await nats_send(peer.nats, sample.scenario, duration=plan.duration,
                                                     warmup=plan.warmup))  # fmt: skip
    session = Session(CommonOptions(namesrv=peer.namesrv, broker_pid=peer.pid, progress=False, baselines=False),
                      Report(started_at=now()))  # fmt: skip
    try:
        if sample.scenario == "drain":
            result = await run_consume(session, ConsumeSpec(backlog=plan.backlog, pull_batch=128), "drain")
        else:
            auto = sample.scenario == "autobatch"
            mode = "async" if auto or sample.scenario == "syncflush" else sample.scenario
            spec = ProduceSpec(mode=mode, duration=plan.duration,
                               warmup=plan.warmup, auto_batch=auto)  # fmt: skip
            result = await run_produce(session, spec, sample.scenario)
    finally:
        await session.close()
    return from_rocketq(sample, result)


# ------------------------------------------------------------------------------------------------ the run


def describe(s: Sample) -> str:
    if s.msgs_per_s is None:
        return f"failed: {'; '.join(s.notes) or 'no result'}"
    lat = f", p50 {s.latency_p50_ms:.3f} ms p99 {s.latency_p99_ms:.3f} ms" if s.latency_p99_ms is not None else ""
    errors = f", {s.errors} errors" if s.errors else ""
    return (f"{s.msgs_per_s:>9,.0f} msg/s, server {s.server_cpu_us_per_msg} µs/msg, "
            f"client {s.client_cpu_us_per_msg} µs/msg{lat}{errors}")  # fmt: skip


async def run(plan: Plan, peers: tuple[str, ...], scenarios: tuple[str, ...], save: Callable[[Sample], None]) -> None:
    base = Path(tempfile.mkdtemp(prefix="rocketq-peers-"))
    try:
        async with contextlib.AsyncExitStack() as stack:
            up: dict[str, Running] = {}
            # rocketq's side of the SYNC_FLUSH row is a broker of its own, started beside the others
            own = [ROCKETQ_BROKER_OF[s] for s in scenarios if s in ROCKETQ_BROKER_OF] if "rocketq" in peers else []
            started = (*peers, *own)
            for name in started:
                print(f"starting {name}", flush=True)
                up[name] = await stack.enter_async_context(running(name, base))
            await warm_up(up, plan, scenarios)
            for rnd in range(1, plan.rounds + 1):
                print(f"round {rnd} of {plan.rounds}", flush=True)
                for i, scenario in enumerate(scenarios):
                    for name in rotation([p for p in RUNS[scenario] if p in up], rnd, i):
                        sample = Sample(rnd, name, scenario)
                        try:
                            await measure(up[broker_for(name, scenario)], sample, plan)
                        except Exception as exc:  # one failed measurement does not end the run
                            sample.notes.append(f"failed: {type(exc).__name__}: {exc}")
                        save(sample)
                        print(f"  {scenario:<9} {name:<14} {describe(sample)}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def broker_for(name: str, scenario: str) -> str:
    """The running peer that serves ``name``'s side of ``scenario`` (rocketq's SYNC_FLUSH row has its own)."""
    return ROCKETQ_BROKER_OF.get(scenario, name) if name == "rocketq" else name


async def warm_up(up: dict[str, Running], plan: Plan, scenarios: tuple[str, ...]) -> None:
    """Unmeasured, shortened: every scenario on every peer once (the Java broker's JIT needs it; routes,
    connections and first mapped files for everyone)."""
    warm = Plan(rounds=1, duration=min(2.0, plan.duration), warmup=0.5, backlog=min(20_000, plan.backlog))
    for scenario in scenarios:
        for name in RUNS[scenario]:
            if name in up:
                sample = await measure(up[broker_for(name, scenario)], Sample(0, name, scenario), warm)
                if sample.msgs_per_s is None:
                    raise RuntimeError(f"{name} {scenario} warm-up failed: {'; '.join(sample.notes)}")


def report(samples: list[Sample], peers: tuple[str, ...], scenarios: tuple[str, ...]) -> str:
    table = medians(samples)
    shown = [p for p in KNOWN_PEERS if p in peers and p != "rocketq-nopoll"]
    text = [markdown_table(table, [(s, SCENARIO_TITLES[s]) for s in scenarios], shown, TITLES, AGAINST)]
    nopoll, poll = table.get(("rocketq-nopoll", "sync")), table.get(("rocketq", "sync"))
    if nopoll and poll:
        text.append(f"\nsync send, busy poll on (busyPollMaxMicros=200) / off (0): {poll.msgs_per_s:,.0f} / "
                    f"{nopoll.msgs_per_s:,.0f} msg/s, broker {poll.server_cpu_us_per_msg} / "
                    f"{nopoll.server_cpu_us_per_msg} µs/msg, p99 {poll.latency_p99_ms:.3f} / "
                    f"{nopoll.latency_p99_ms:.3f} ms")  # fmt: skip
    text.append("\ntargets (issue 25):")
    for target, met, why in check_targets(table, [t for t in TARGETS if t.peer in peers]):
        text.append(f"- {'met' if met else 'NOT met'}: {SCENARIO_TITLES[target.ours]} vs {TITLES[target.peer]}: {why}")
    return "\n".join(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one round, 2 s scenarios, 50k backlog")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--duration", type=float, help="measured seconds per send scenario")
    parser.add_argument("--backlog", type=int, help="messages drained")
    parser.add_argument("--peers", default=",".join(PEERS),
                        help=f"comma-separated, of {', '.join(KNOWN_PEERS)} (default: {', '.join(PEERS)})")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated, of {', '.join(KNOWN_SCENARIOS)} (default: {', '.join(SCENARIOS)})")
    parser.add_argument("--json", metavar="F", help="write every sample as JSON (kept current during the run)")
    parser.add_argument("--report", metavar="F", help="print the table of a saved --json run and exit")
    args = parser.parse_args(argv)
    if args.report:
        saved = json.loads(Path(args.report).read_text())
        loaded = [Sample(**s) for s in saved["samples"]]
        print(report(loaded, tuple(saved["peers"]), tuple(saved["scenarios"])))
        return 0
    peers, scenarios = tuple(args.peers.split(",")), tuple(args.scenarios.split(","))
    for what, given, known in (("peer", peers, KNOWN_PEERS), ("scenario", scenarios, KNOWN_SCENARIOS)):
        if unknown := [g for g in given if g not in known]:
            parser.error(f"unknown {what} {', '.join(unknown)} (known: {', '.join(known)})")
    base = QUICK if args.quick else FULL
    plan = Plan(args.rounds or base.rounds, args.duration or base.duration, base.warmup, args.backlog or base.backlog)
    samples: list[Sample] = []
    out: dict[str, Any] = {"started_at": now(), "machine": machine_info(), "plan": asdict(plan), "peers": peers,
                           "scenarios": scenarios, "samples": []}  # fmt: skip

    def save(sample: Sample) -> None:
        samples.append(sample)
        if args.json:
            out["samples"] = [asdict(s) for s in samples]
            out["medians"] = summary_dict(medians(samples))
            Path(args.json).write_text(json.dumps(out, indent=1))

    print(f"peers: {', '.join(peers)}; {plan.rounds} round(s) of {plan.duration:.0f} s scenarios", flush=True)

    async def go() -> int:
        await run(plan, peers, scenarios, save)
        return 0

    run_async(go)
    print()
    print(report(samples, peers, scenarios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
