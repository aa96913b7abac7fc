"""rocketq's broker against Apache RocketMQ's Java brokers (4.9.7 and 5.3.3), each driven by the same two clients.

Not a test. Run from the repository root (the Java jars and JavaBench come from ``scripts/java-interop.sh``)::

    PYTHONPATH=src .venv/bin/python benchmarks/java_peer.py [--quick] [--json F] [--rounds N]
    PYTHONPATH=src .venv/bin/python benchmarks/java_peer.py --report F     # the markdown table of a saved run

One broker runs at a time, on this machine, as a child process: rocketq's (``rocketq standalone``, exactly as
``rocketq bench --embedded`` starts it) or Apache RocketMQ's (``rocketq.testing.java.JavaCluster``: its name
server and broker from the Maven jars). Every broker gets the same durability and limits: ASYNC_FLUSH, 1 GiB
commit-log files, ``maxTransferCountOnMessageInMemory=1024`` (so a 128-message pull is not cut at RocketMQ's
default 32), and everything else at its own defaults. Each broker is warmed up first: every scenario through
every client, shortened and unmeasured (the JVMs' JIT compilers need it; rocketq's broker does not mind), then
its idle CPU is read, then every scenario runs with both clients, one after the other:

* rocketq's client: ``rocketq bench``'s own scenarios (``run_produce``/``run_consume``, as ``rocketq bench
  produce --mode sync|async|batch`` and ``rocketq bench consume --backlog N --pull-batch 128`` with
  ``-n NAMESRV --broker-pid PID``) in this process;
* Apache RocketMQ's 4.9.7 Java client: ``tests/interop/java/src/JavaBench.java`` in its own JVM, the same
  shapes (1 send at a time; 1,000 async sends in flight; batches of 32, 32 in flight; a 128-per-pull lite-pull
  drain of a stored backlog), printing ``MEASURE start``/``MEASURE end`` around its measured window.

Scenarios, all 1 KiB bodies on 8-queue topics: sync (wait for each ack), async (1,000 in flight), batch (32 per
request, 32 requests in flight), drain (a stored backlog pulled 128 at a time). Broker CPU per message is the
broker process's user+system time (``/proc/PID/stat``) over the measured window divided by the messages it
carried; the load generator's is the same for its process (this one for rocketq's client, the JVM for Java's).
rocketq's number includes its name server (``rocketq standalone`` is one process); the Java name server is a
separate process and is not counted. The client order flips every scenario and every round, and the broker
order every round, so that a noisy moment lands on both sides.

Two cores: the load generator and the broker share them, so throughput says what the pair does on this
machine; CPU per message is the fairer comparison of the brokers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rocketq.bench.broker import BrokerProcess
from rocketq.bench.consume import ConsumeSpec, run_consume
from rocketq.bench.echo import cpu_seconds
from rocketq.bench.produce import ProduceSpec, run_produce
from rocketq.bench.report import Report, ScenarioResult, machine_info
from rocketq.bench.session import ASYNC_FLUSH, CommonOptions, Session, create_topics
from rocketq.cli.servers import run_async
from rocketq.testing.java import ROCKETMQ_HOME, JavaCluster, driver_classpath, java_env

BROKERS = ("rocketq", "java-4.9.7", "java-5.3.3")
CLIENTS = ("rocketq", "java")
SCENARIOS = ("sync", "async", "batch", "drain")

BROKER_TITLES = {"rocketq": "rocketq broker", "java-4.9.7": "Java 4.9.7 broker", "java-5.3.3": "Java 5.3.3 broker"}
CLIENT_TITLES = {"rocketq": "rocketq client (Python)", "java": "Java 4.9.7 client"}
SCENARIO_TITLES = {
    "sync": "sync: wait for each ack",
    "async": "async, 1,000 in flight",
    "batch": "batch of 32, 32 in flight",
    "drain": "drain a backlog, 128/pull",
}

# The same on every broker: rocketq bench's embedded broker already runs with these (bench/broker.py).
JAVA_BROKER_SETTINGS = {
    "flushDiskType": ASYNC_FLUSH,
    "mappedFileSizeCommitLog": str(1024 * 1024 * 1024),
    "maxTransferCountOnMessageInMemory": "1024",
}
# JavaBench's JVM: the default (G1) collector and C2, a heap well under 1 GB, the client's chatter off.
JAVABENCH_JVM = (
    "-Xms256m", "-Xmx512m",
    f"-Dlogback.configurationFile={ROCKETMQ_HOME / 'conf' / 'logback_tools.xml'}",
    "-Drocketmq.client.logLevel=WARN",
)  # fmt: skip


@dataclass(frozen=True)
class Plan:
    rounds: int
    duration: float  # measured seconds of each send scenario
    warmup: float  # unmeasured seconds before each send scenario (same client, same topic)
    backlog: int  # messages stored before a drain
    broker_warmup: float  # seconds of each scenario, each client, run unmeasured on a fresh broker
    idle: float  # seconds over which the idle broker's CPU is read
    body: int = 1024
    queues: int = 8
    batch: int = 32
    pull_batch: int = 128


QUICK = Plan(rounds=1, duration=2.0, warmup=1.0, backlog=100_000, broker_warmup=1.5, idle=2.0)
FULL = Plan(rounds=2, duration=10.0, warmup=2.0, backlog=500_000, broker_warmup=5.0, idle=5.0)


@dataclass
class Sample:
    """One measurement: a client driving a broker through one scenario."""

    round: int
    broker: str
    client: str
    scenario: str
    msgs_per_s: float | None = None
    messages: int = 0
    seconds: float = 0.0
    errors: int = 0
    broker_cpu_us_per_msg: float | None = None
    client_cpu_us_per_msg: float | None = None
    latency_ms: dict[str, Any] | None = None
    loadavg_1m: float | None = None
    broker_jit_cpu_s: float | None = None  # the broker's JIT compiler threads, over the whole client run
    notes: list[str] = field(default_factory=list)


@dataclass
class Idle:
    round: int
    broker: str
    cpu_ms_per_s: float | None


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


# ------------------------------------------------------------------------------------------------ brokers


@contextlib.asynccontextmanager
async def running_broker(name: str, base: Path) -> AsyncIterator[tuple[str, int]]:
    """Start ``name`` in ``base/name``; yields (name server address, broker pid); stops it and removes its files."""
    directory = base / name
    try:
        if name == "rocketq":
            broker = await BrokerProcess(flush=ASYNC_FLUSH, base_dir=str(directory)).start()
            try:
                assert broker.pid is not None
                yield broker.namesrv_addr, broker.pid
            finally:
                await broker.stop()
        else:
            version = "4.9" if name == "java-4.9.7" else "5"
            cluster = JavaCluster(directory, version=version, broker_settings=dict(JAVA_BROKER_SETTINGS))
            await asyncio.to_thread(cluster.start, 180.0)
            try:
                yield cluster.namesrv_addr, cluster.broker_pid
            finally:
                await asyncio.to_thread(cluster.stop)
    finally:
        await asyncio.to_thread(shutil.rmtree, directory, True)


def rocketq_session(namesrv: str, pid: int) -> Session:
    common = CommonOptions(namesrv=namesrv, broker_pid=pid, progress=False, baselines=False)
    return Session(common, Report(started_at=now()))


async def idle_cpu(pid: int, seconds: float) -> float | None:
    await asyncio.sleep(1.0)  # let the warm-up's flushes settle
    c0, t0 = cpu_seconds(pid), time.perf_counter()
    await asyncio.sleep(seconds)
    c1, t1 = cpu_seconds(pid), time.perf_counter()
    return None if c0 is None or c1 is None else round((c1 - c0) / (t1 - t0) * 1000, 1)


# ------------------------------------------------------------------------------------------------ clients


def from_scenario(sample: Sample, r: ScenarioResult) -> Sample:
    if r.throughput is not None:
        sample.msgs_per_s = r.throughput.msgs_per_s
        sample.messages = r.throughput.messages
        sample.seconds = r.throughput.seconds
    sample.errors = r.errors
    sample.broker_cpu_us_per_msg = r.extra.get("broker_cpu_us_per_msg")
    sample.client_cpu_us_per_msg = r.extra.get("client_cpu_us_per_msg")
    sample.latency_ms = r.latency.to_dict() if r.latency is not None else None
    sample.notes += r.notes
    return sample


async def run_rocketq_client(sample: Sample, namesrv: str, pid: int, plan: Plan) -> Sample:
    session = rocketq_session(namesrv, pid)
    try:
        if sample.scenario == "drain":
            spec = ConsumeSpec(backlog=plan.backlog, pull_batch=plan.pull_batch, body=plan.body, queues=plan.queues)
            result = await run_consume(session, spec, "drain")
        else:
            produce = ProduceSpec(mode=sample.scenario, duration=plan.duration, warmup=plan.warmup, body=plan.body,
                                  queues=plan.queues, batch=plan.batch)  # fmt: skip
            result = await run_produce(session, produce, sample.scenario)
    finally:
        await session.close()
    return from_scenario(sample, result)


def javabench_args(scenario: str, namesrv: str, topic: str, plan: Plan) -> list[str]:
    args = ["-n", namesrv, "--mode", scenario, "--topic", topic, "--body", str(plan.body)]
    if scenario == "drain":
        warm = min(20_000, plan.backlog // 5)
        return [*args, "--backlog", str(plan.backlog), "--pull-batch", str(plan.pull_batch), "--warmup-msgs", str(warm)]
    args += ["--duration", str(plan.duration), "--warmup", str(plan.warmup)]
    if scenario == "sync":
        return [*args, "--threads", "1"]
    if scenario == "async":
        return [*args, "--inflight", "1000"]
    return [*args, "--batch", str(plan.batch), "--inflight", "32"]


class JavaBenchJVM:
    """One ``JavaBench --serve`` JVM per broker: every Java-client run against that broker goes through it, so its
    JIT stays warm from one scenario to the next, as in a long-running Java application."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> asyncio.subprocess.Process:
        if self.proc is not None and self.proc.returncode is None:
            return self.proc
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.home / "javabench.err", "ab") as err:
            self.proc = await asyncio.create_subprocess_exec(
                "java", *JAVABENCH_JVM, f"-Duser.home={self.home}", f"-Drocketmq.client.logRoot={self.home / 'logs'}",
                "-cp", driver_classpath(), "JavaBench", "--serve",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=err, env=java_env(),
                start_new_session=True,
            )  # fmt: skip
        return self.proc

    async def run(self, args: list[str], broker_pid: int, limit: float) -> tuple[dict[str, Any], dict[str, Any]]:
        """One run: (its JSON line, the broker's and the JVM's CPU seconds at "MEASURE start"/"MEASURE end")."""
        proc = await self.start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((" ".join(args) + "\n").encode())
        await proc.stdin.drain()
        marks: dict[str, Any] = {}
        try:
            async with asyncio.timeout(limit):
                while True:
                    raw = await proc.stdout.readline()
                    if not raw:
                        raise RuntimeError(f"JavaBench exited (see {self.home / 'javabench.err'})")
                    line = raw.decode(errors="replace").strip()
                    if line.startswith("MEASURE "):  # read both processes' CPU as the window opens and closes
                        marks[line.split()[1]] = (cpu_seconds(broker_pid), cpu_seconds(proc.pid))
                    elif line.startswith("{"):
                        return json.loads(line), marks
        except TimeoutError:
            await self.stop()  # the next run gets a fresh JVM
            raise RuntimeError(f"JavaBench did not answer within {limit:.0f} s") from None

    async def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.returncode is not None:
            return
        assert proc.stdin is not None
        with contextlib.suppress(OSError):
            proc.stdin.write(b"quit\n")
            await proc.stdin.drain()
        try:
            async with asyncio.timeout(30):
                await proc.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()


async def run_java_client(sample: Sample, namesrv: str, pid: int, plan: Plan, jvm: JavaBenchJVM) -> Sample:
    topic = f"JavaBench-{sample.scenario}-{uuid.uuid4().hex[:8]}"
    await create_topics(namesrv, [topic], plan.queues)  # the same queue count rocketq bench creates its topics with
    limit = plan.warmup + plan.duration + 180 if sample.scenario != "drain" else 120 + plan.backlog / 2_000
    result, marks = await jvm.run(javabench_args(sample.scenario, namesrv, topic, plan), pid, limit)
    if "error" in result:
        sample.notes.append(f"JavaBench: {result['error']}")
        return sample
    sample.messages = int(result["count"])
    sample.seconds = float(result["seconds"])
    sample.msgs_per_s = float(result["msgs_per_s"]) if sample.messages else None
    sample.errors = int(result["errors"])
    sample.latency_ms = result.get("latency_ms")
    if result.get("first_error"):
        sample.notes.append(f"first error: {result['first_error']}")
    (b0, c0), (b1, c1) = marks.get("start", (None, None)), marks.get("end", (None, None))
    if sample.messages and b0 is not None and b1 is not None:
        sample.broker_cpu_us_per_msg = round((b1 - b0) / sample.messages * 1e6, 2)
    if sample.messages and c0 is not None and c1 is not None:
        sample.client_cpu_us_per_msg = round((c1 - c0) / sample.messages * 1e6, 2)
    return sample


# ------------------------------------------------------------------------------------------------ the run


def alternate(items: tuple[str, ...], flip: bool) -> tuple[str, ...]:
    return tuple(reversed(items)) if flip else items


def describe(s: Sample) -> str:
    if s.msgs_per_s is None:
        return f"failed: {'; '.join(s.notes) or 'no result'}"
    cpu = f"broker {s.broker_cpu_us_per_msg} µs/msg, client {s.client_cpu_us_per_msg} µs/msg"
    lat = f", p50 {s.latency_ms['p50']:.2f} ms p99 {s.latency_ms['p99']:.2f} ms" if s.latency_ms else ""
    errors = f", {s.errors} errors" if s.errors else ""
    return f"{s.msgs_per_s:,.0f} msg/s ({s.messages:,} in {s.seconds:.2f} s), {cpu}{lat}{errors}, load {s.loadavg_1m}"


async def warm_up(namesrv: str, pid: int, plan: Plan, clients: tuple[str, ...], scenarios: tuple[str, ...],
                  jvm: JavaBenchJVM) -> None:  # fmt: skip
    """Unmeasured: every scenario through every client, shortened, so the JITs (a Java broker's, JavaBench's) have
    compiled each path before it is measured. (A fresh Java broker's C2 compiler threads took 2.5 of 4 CPU seconds
    of a sync run after a 5 s warm-up, and about nothing once each shape had run for a while.)"""
    warm = replace(plan, duration=plan.broker_warmup, warmup=0, backlog=min(plan.backlog, 20_000))
    for scenario in scenarios:
        for client in clients:
            sample = Sample(0, "", client, scenario)
            if client == "rocketq":
                await run_rocketq_client(sample, namesrv, pid, warm)
            else:
                await run_java_client(sample, namesrv, pid, warm, jvm)
            if sample.msgs_per_s is None:
                raise RuntimeError(f"{client} {scenario} warm-up failed: {'; '.join(sample.notes)}")


def jit_cpu_seconds(pid: int) -> float:
    """CPU seconds the JVM's JIT compiler threads have used so far (0 for a process without them)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm", encoding="ascii", errors="replace") as f:
                if "CompilerThre" not in f.read():
                    continue
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


async def measure_broker(rnd: int, broker: str, base: Path, plan: Plan, clients: tuple[str, ...],
                         scenarios: tuple[str, ...], out: dict[str, Any], save: Any) -> None:  # fmt: skip
    """One broker in one round: start, warm up, idle CPU, then every scenario with both clients (order alternated)."""
    jvm = JavaBenchJVM(base / "javabench")
    try:
        async with running_broker(broker, base) as (namesrv, pid):
            await warm_up(namesrv, pid, plan, clients, scenarios, jvm)
            out["idle"].append(asdict(Idle(rnd, broker, await idle_cpu(pid, plan.idle))))
            for i, scenario in enumerate(scenarios):
                for client in alternate(clients, (rnd + i) % 2 == 0):
                    sample = Sample(rnd, broker, client, scenario)
                    jit0 = jit_cpu_seconds(pid)
                    try:
                        if client == "rocketq":
                            await run_rocketq_client(sample, namesrv, pid, plan)
                        else:
                            await run_java_client(sample, namesrv, pid, plan, jvm)
                    except Exception as exc:  # one failed measurement does not end the run
                        sample.notes.append(f"failed: {type(exc).__name__}: {exc}")
                    sample.loadavg_1m = loadavg()
                    sample.broker_jit_cpu_s = round(jit_cpu_seconds(pid) - jit0, 3)
                    out["samples"].append(asdict(sample))
                    save()
                    print(f"  {broker:<11} {client:<8} {scenario:<6} {describe(sample)}", flush=True)
    finally:
        await jvm.stop()


async def run(plan: Plan, brokers: tuple[str, ...], clients: tuple[str, ...], scenarios: tuple[str, ...],
              out: dict[str, Any], save: Any) -> None:  # fmt: skip
    base = Path(tempfile.mkdtemp(prefix="rocketq-java-peer-"))
    try:
        for rnd in range(1, plan.rounds + 1):
            for broker in alternate(brokers, rnd % 2 == 0):
                print(f"round {rnd}: the {BROKER_TITLES[broker]}", file=sys.stderr, flush=True)
                try:
                    await measure_broker(rnd, broker, base, plan, clients, scenarios, out, save)
                except Exception as exc:
                    print(f"  {broker}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                    out["failures"].append(f"round {rnd} {broker}: {type(exc).__name__}: {exc}")
                    save()
    finally:
        await asyncio.to_thread(shutil.rmtree, base, True)


# ------------------------------------------------------------------------------------------------ the table


def _median(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def _rate(v: float) -> str:
    return f"{v / 1000:,.1f}k" if v >= 10_000 else f"{v:,.0f}"


def _us(v: float | None) -> str:
    return "–" if v is None else (f"{v:,.0f} µs" if v >= 10 else f"{v:.1f} µs")


def markdown(data: dict[str, Any]) -> str:
    """Medians over the rounds: msg/s · broker CPU per message · load generator CPU per message."""
    samples = [Sample(**s) for s in data["samples"]]
    brokers = [b for b in BROKERS if any(s.broker == b for s in samples)]
    rounds = max((s.round for s in samples), default=0)
    head = "| scenario | client | " + " | ".join(BROKER_TITLES[b] for b in brokers) + " |"
    lines = [head, "|" + "---|" * (2 + len(brokers))]
    for scenario in SCENARIOS:
        for client in CLIENTS:
            cells = []
            for b in brokers:
                mine = [s for s in samples if (s.broker, s.client, s.scenario) == (b, client, scenario)]
                rates = [s.msgs_per_s for s in mine]
                rate = _median(rates)
                if not mine:
                    cells.append("")
                elif rate is None:
                    cells.append("failed")
                else:
                    broker_cpu = _median([s.broker_cpu_us_per_msg for s in mine if s.msgs_per_s is not None])
                    client_cpu = _median([s.client_cpu_us_per_msg for s in mine if s.msgs_per_s is not None])
                    failed = sum(r is None for r in rates)
                    cells.append(f"{_rate(rate)}/s · {_us(broker_cpu)} · {_us(client_cpu)}"
                                 + (f" ({failed} failed)" if failed else ""))  # fmt: skip
            if any(cells):
                lines.append(f"| {SCENARIO_TITLES[scenario]} | {CLIENT_TITLES[client]} | " + " | ".join(cells) + " |")
    idle = [Idle(**i) for i in data["idle"]]
    idle_ms = [_median([i.cpu_ms_per_s for i in idle if i.broker == b]) for b in brokers]
    lines.append("| idle broker (no client) | CPU per second | "
                 + " | ".join("–" if c is None else f"{c:.1f} ms/s" for c in idle_ms) + " |")  # fmt: skip
    jit = [sum(s.broker_jit_cpu_s or 0 for s in samples if s.broker == b) for b in brokers]
    lines.append("| broker JIT compiling during the runs | CPU, all rounds | "
                 + " | ".join(f"{j:.1f} s" for j in jit) + " |")  # fmt: skip
    loads = [s.loadavg_1m for s in samples if s.loadavg_1m is not None]
    legend = (
        f"Each cell: messages per second · broker CPU per message · load generator CPU per message"
        f" ({'median of ' + str(rounds) + ' rounds' if rounds > 1 else 'one round'}; 1 KiB bodies, 8 queues,"
        f" ASYNC_FLUSH). Load average during the run: "
        + (f"{min(loads):.1f}–{max(loads):.1f}" if loads else "?")
        + f" on {data.get('machine', {}).get('cpus', '?')} CPUs."
    )
    return "\n".join([*lines, "", legend])


# ------------------------------------------------------------------------------------------------ main


def java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out.splitlines()[0] if out else "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one round, 2 s scenarios, 100k backlog (~3 min)")
    parser.add_argument("--rounds", type=int, help="rounds (default: 2, --quick 1)")
    parser.add_argument("--duration", type=float, help="measured seconds per send scenario (default 10, --quick 2)")
    parser.add_argument("--backlog", type=int, help="messages drained (default 500000, --quick 100000)")
    parser.add_argument("--brokers", default=",".join(BROKERS), help=f"comma-separated, of {', '.join(BROKERS)}")
    parser.add_argument("--clients", default=",".join(CLIENTS), help=f"comma-separated, of {', '.join(CLIENTS)}")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated, of {', '.join(SCENARIOS)}")
    parser.add_argument("--json", metavar="F", help="write every sample as JSON (kept current during the run)")
    parser.add_argument("--report", metavar="F", help="print the markdown table of a saved --json run and exit")
    args = parser.parse_args()
    if args.report:
        with open(args.report, encoding="utf-8") as f:
            print(markdown(json.load(f)))
        return 0
    picked = {}
    for what, allowed in (("brokers", BROKERS), ("clients", CLIENTS), ("scenarios", SCENARIOS)):
        names = tuple(n for n in getattr(args, what).split(",") if n)
        if not names or set(names) - set(allowed):
            parser.error(f"--{what}: choose from {', '.join(allowed)}")
        picked[what] = names
    plan = QUICK if args.quick else FULL
    overrides = {k: v for k, v in (("rounds", args.rounds), ("duration", args.duration), ("backlog", args.backlog))
                 if v is not None}  # fmt: skip
    plan = replace(plan, **overrides)
    driver_classpath()  # fail now, not after the first broker, when the jars or JavaBench are missing
    import logging

    logging.getLogger("rocketq").setLevel(logging.ERROR)  # the clients' start/stop chatter
    out: dict[str, Any] = {
        "started_at": now(), "command": " ".join(["benchmarks/java_peer.py", *sys.argv[1:]]),
        "plan": asdict(plan), "machine": {**machine_info(), "java": java_version(), "loadavg_start": loadavg()},
        "samples": [], "idle": [], "failures": [],
    }  # fmt: skip

    def save() -> None:
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")

    async def measure() -> int:
        await run(plan, picked["brokers"], picked["clients"], picked["scenarios"], out, save)
        return 0

    try:
        run_async(measure)  # on uvloop, as `rocketq bench` runs its load
    finally:
        out["finished_at"] = now()
        save()
    print()
    print(markdown(out))
    for failure in out["failures"]:
        print(f"failed: {failure}")
    return 1 if out["failures"] or any(s["msgs_per_s"] is None for s in out["samples"]) else 0


if __name__ == "__main__":
    sys.exit(main())
