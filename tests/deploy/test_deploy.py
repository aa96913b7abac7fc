"""deploy/: the compose file is valid Compose (checked offline: no container runtime here), its rocketq services
run from their own command lines and environment as local processes, and the Grafana dashboard names only
metrics — and labels — that those processes' /metrics pages serve after a send/consume load; the Prometheus,
Grafana and systemd files agree with them."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import json
import os
import re
import shlex
import shutil
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from composefile import DEPLOY, LocalService, container_ports, interpolate, load, problems, start_order
from prometheus_client.parser import text_string_to_metric_families

from rocketq.cli.main import build_parser, main
from rocketq.client import (
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    LocalTransactionState,
    Message,
    Producer,
    PushConsumer,
    TransactionProducer,
)
from rocketq.testing.process import run_process

ROOT = DEPLOY.parent
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "rocketq.json"
#: the compose services built from the rocketq image (the others are Prometheus and Grafana)
ROCKETQ_IMAGE = "rocketq:latest"
METRIC = re.compile(r"\b(?:rocketmq|rocketq)_[a-z0-9_]+\b")
TOPIC, GROUP, TX_TOPIC = "TDeploy", "gDeploy", "TDeployTx"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prometheus_targets() -> dict[str, list[tuple[str, int]]]:
    """job → its (service, port) targets, from deploy/prometheus/prometheus.yml."""
    conf = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    out = {}
    for job in conf["scrape_configs"]:
        targets = [t for sc in job["static_configs"] for t in sc["targets"]]
        out[job["job_name"]] = [(t.rpartition(":")[0], int(t.rpartition(":")[2])) for t in targets]
    return out


def dashboard_queries() -> list[str]:
    """Every PromQL expression of the dashboard: panel targets and the variables' label_values queries."""
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in dash["templating"]["list"] if isinstance(v.get("query"), dict)]
    return exprs


# ---------------------------------------------------------------------------------------------- offline


def test_compose_file_is_valid_compose() -> None:
    doc = load()
    assert problems(doc) == []
    services = doc["services"]
    assert set(services) == {"namesrv", "broker", "console", "prometheus", "grafana"}
    assert start_order(services).index("namesrv") < start_order(services).index("broker")
    for name, svc in services.items():
        for port in svc.get("ports", []):  # published on the host's loopback unless the operator says otherwise
            assert port.startswith("127.0.0.1:"), (name, port)
    # a user's variables reach the values that name them
    changed = load(env={"ROCKETQ_BROKER_IP": "10.1.2.3", "ROCKETQ_PUBLISH_HOST": "0.0.0.0"})
    assert "brokerIP1=10.1.2.3" in changed["services"]["broker"]["command"]
    assert changed["services"]["broker"]["ports"] == ["0.0.0.0:10911:10911"]


def test_published_and_checked_ports_are_the_ones_the_commands_listen_on() -> None:
    """A port published or health-checked that the command does not set would be a dead mapping (the test's
    port translation could not see it either)."""
    for name, svc in load()["services"].items():
        if svc.get("image") != ROCKETQ_IMAGE:
            continue
        set_ports = {int(v) for t in svc["command"] if (v := t.rpartition("=")[2]).isdigit()}
        assert container_ports(svc) <= set_ports, name
        hc = svc.get("healthcheck")
        if hc:
            assert int(hc["test"][-1]) in container_ports(svc), name


def test_the_offline_validator_refuses_what_compose_refuses() -> None:
    """The checks above can fail: each broken copy of the file is refused for its own reason."""
    good = load()

    def broken(edit: Any) -> list[str]:
        doc = json.loads(json.dumps(good))
        edit(doc)
        return problems(doc)

    assert broken(lambda d: d["services"]["broker"].update(comand=["broker"])) == ["broker: unknown attribute comand"]
    assert broken(lambda d: d["services"]["broker"]["depends_on"].update(nosuch={})) == [
        "broker: depends on unknown service nosuch"
    ]
    assert broken(lambda d: d["services"]["console"].setdefault("volumes", []).append("logs:/logs")) == [
        "console: named volume logs not declared under volumes"
    ]
    assert broken(lambda d: d["services"]["prometheus"]["volumes"].append("./nosuch.yml:/x:ro")) == [
        "prometheus: bind source ./nosuch.yml does not exist"
    ]
    assert broken(lambda d: d["services"]["namesrv"].pop("healthcheck")) == [
        "broker: waits for namesrv to be healthy, but namesrv has no healthcheck"
    ]
    assert broken(lambda d: d["services"]["namesrv"].update(depends_on=["console"])) == [
        "depends_on cycle among ['broker', 'console', 'grafana', 'namesrv', 'prometheus']"
    ]
    assert broken(lambda d: d["services"]["grafana"].update(restart="sometimes")) == ["grafana: restart 'sometimes'"]
    with pytest.raises(ValueError, match="invalid interpolation"):
        interpolate("price $ 5", {})
    assert interpolate("$${A} ${B:-x} ${C-y} $D", {"C": "", "D": "d"}) == "${A} x  d"


def test_the_image_build_context_is_checked(tmp_path: Path) -> None:
    """A Dockerfile COPY of something missing from the context, or left out by its .dockerignore, is refused."""
    shutil.copytree(DEPLOY, tmp_path / "deploy")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        (tmp_path / name).write_text("")
    (tmp_path / "src").mkdir()
    doc = load(tmp_path / "deploy" / "compose.yaml")
    assert problems(doc, tmp_path / "deploy") == []
    ignore = tmp_path / "deploy" / "Dockerfile.dockerignore"
    ignore.write_text(ignore.read_text().replace("!setup.py\n", ""))
    (tmp_path / "README.md").unlink()
    assert sorted(set(problems(doc, tmp_path / "deploy"))) == [
        f"{svc}: {why}" for svc in ("broker", "console", "namesrv")
        for why in ("COPY source README.md missing", "COPY source setup.py is ignored")
    ]  # fmt: skip


def test_prometheus_and_grafana_files_match_the_compose_services() -> None:
    doc = load()
    services = doc["services"]
    # Prometheus scrapes each rocketq server on the metrics port its command sets
    for job, targets in prometheus_targets().items():
        for service, port in targets:
            assert service in services, (job, service)
            assert f"metricsPromExporterPort={port}" in services[service]["command"], (job, service, port)
            assert "metricsExporterType=PROM" in services[service]["command"]
    scraped = {s for targets in prometheus_targets().values() for s, _ in targets}
    assert scraped == {"namesrv", "broker"}
    # Grafana: the data source is the Prometheus service, the dashboards folder is the mounted one
    grafana = services["grafana"]
    mounts = dict(str(m).split(":")[:2][::-1] for m in grafana["volumes"])  # container path → host path
    prov = DEPLOY / mounts["/etc/grafana/provisioning"].removeprefix("./")
    (source,) = yaml.safe_load((prov / "datasources" / "prometheus.yaml").read_text())["datasources"]
    assert source["type"] == "prometheus"
    assert source["url"] == "http://prometheus:9090"
    assert any(p.endswith(":9090") for p in services["prometheus"]["ports"])
    (provider,) = yaml.safe_load((prov / "dashboards" / "rocketq.yaml").read_text())["providers"]
    dash_dir = provider["options"]["path"]
    assert (DEPLOY / mounts[dash_dir].removeprefix("./") / "rocketq.json").is_file()
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"{dash_dir}/rocketq.json"
    # the dashboard's panels read the provisioned data source through its variable
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    for panel in dash["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]


def test_dashboard_json_is_what_the_generator_writes_and_lays_out() -> None:
    spec = importlib.util.spec_from_file_location("grafana_dashboard", ROOT / "scripts" / "grafana_dashboard.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert DASHBOARD.read_text(encoding="utf-8") == module.render(), "run python scripts/grafana_dashboard.py"
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for p in dash["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"{p['title']} overlaps another panel"
        cells |= mine


def documented_server_metrics() -> set[str]:
    """The metrics docs/metrics.md says the broker and the name server export: the first column of the broker's
    table, and the name server's own gauges."""
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    section = text.split("## What the broker exports", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([a-z0-9_]+)`", line.split("|")[1]))
    return names | set(re.findall(r"`(rocketq_namesrv_[a-z_]+)`", section))


def test_dashboard_has_a_panel_for_every_documented_metric() -> None:
    documented = documented_server_metrics()
    assert len(documented) >= 20  # the parse found the table
    queried = {re.sub(r"_(bucket|count|sum)$", "", m) for e in dashboard_queries() for m in METRIC.findall(e)}
    assert documented - queried == set()


# ------------------------------------------------------------------------------------------------- live


@dataclass
class Running:
    services: dict[str, LocalService]
    hosts: dict[str, dict[int, int]]  # service → container port → port here


@contextlib.asynccontextmanager
async def compose_up(tmp_path: Path) -> AsyncIterator[Running]:
    """Start the compose file's rocketq services, in compose's order, from their own command lines and
    environment (as local processes on loopback test ports); stop them all at the end."""
    doc = load()
    targets = {(s, p) for ts in prometheus_targets().values() for s, p in ts}
    procs: list[asyncio.subprocess.Process] = []
    run = Running({}, {})
    try:
        for name in start_order(doc["services"]):
            if doc["services"][name].get("image") != ROCKETQ_IMAGE:
                continue
            svc = LocalService.of(doc, name, tmp_path / "volumes")
            ports = container_ports(svc.spec) | {p for s, p in targets if s == name}
            svc.own_ports = {p: free_port() for p in ports}
            if name == "broker":  # listenPort 0: an ephemeral port (a fixed one needs its VIP and HA neighbours)
                svc.own_ports[10911] = 0
            run.services[name], run.hosts[name] = svc, svc.own_ports
            argv = svc.argv(run.hosts)
            assert svc.unmounted_paths(svc.spec["command"]) == [], name
            for d in svc.mounts.values():
                if not d.exists():  # a named volume (bind sources exist: problems() checks them)
                    d.mkdir(parents=True)
            env = {**os.environ, **svc.environment(run.hosts)}
            with (tmp_path / f"{name}.log").open("ab") as log:
                proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "rocketq", *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=log
                )
            procs.append(proc)
            await ready(name, proc, svc, tmp_path)
        yield run
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.terminate()
        for proc in procs:
            try:
                async with asyncio.timeout(30):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def ready(name: str, proc: asyncio.subprocess.Process, svc: LocalService, tmp_path: Path) -> None:
    """Wait for the line a server prints once it listens; for the broker, learn its ephemeral port from it."""
    assert proc.stdout is not None
    async with asyncio.timeout(60):
        line = await proc.stdout.readline()
    log = (tmp_path / f"{name}.log").read_text(errors="replace")
    assert b"listening on" in line, f"{name} did not start: {line!r}\n{log}"
    if name == "broker":
        # brokerIP1=broker became localhost: registered by name (clients resolve it), stored as its address
        m = re.search(rb"advertised as localhost:(\d+)", line)
        assert m, line
        svc.own_ports[10911] = int(m.group(1))


async def http_get(port: int, path: str) -> tuple[int, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        async with asyncio.timeout(30):
            data = await reader.read()
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode(errors="replace")


@dataclass
class Exposed:
    """What one scrape serves: sample name → the label sets of its samples."""

    samples: dict[str, list[dict[str, str]]]

    @classmethod
    def parse(cls, text: str) -> Exposed:
        out: dict[str, list[dict[str, str]]] = {}
        for fam in text_string_to_metric_families(text):
            # a family without samples (no slave: no replication lag) still names its samples by its type
            suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}.get(fam.type, [""])
            for suffix in suffixes:
                out.setdefault(fam.name + suffix, [])
            for s in fam.samples:
                out.setdefault(s.name, []).append(s.labels)
        return cls(out)

    def merge(self, other: Exposed) -> Exposed:
        merged = {k: list(v) for k, v in self.samples.items()}
        for k, v in other.samples.items():
            merged.setdefault(k, []).extend(v)
        return Exposed(merged)


SELECTOR = re.compile(r"\b((?:rocketmq|rocketq)_[a-z0-9_]+)\{([^}]*)\}")
MATCHER = re.compile(r'([a-z_]+)\s*(=~|!=|!~|=)\s*"([^"]*)"')
GROUPING = re.compile(r"by \(([^)]*)\) \((?:rate\()?((?:rocketmq|rocketq)_[a-z0-9_]+)")
LABEL_VALUES = re.compile(r"label_values\(((?:rocketmq|rocketq)_[a-z0-9_]+)(?:\{[^}]*\})?, *([a-z_]+)\)")


def dashboard_problems(exposed: Exposed) -> list[str]:
    """Metrics the dashboard's queries name that the scrape does not serve; labels they filter or group by that
    the metric's samples do not carry; literal label values no sample has."""
    out = []
    for expr in dashboard_queries():
        for name in METRIC.findall(expr):
            if name not in exposed.samples:
                out.append(f"no metric {name} (in {expr})")
        uses: list[tuple[str, str, str | None]] = []  # (metric, label, literal value or None)
        for name, matchers in SELECTOR.findall(expr):
            for label, op, val in MATCHER.findall(matchers):
                uses.append((name, label, val if op == "=" and "$" not in val else None))
        for labels, name in GROUPING.findall(expr):
            uses += [(name, lb.strip(), None) for lb in labels.split(",")]
        uses += [(name, label, None) for name, label in LABEL_VALUES.findall(expr)]
        for name, label, val in uses:
            rows = exposed.samples.get(name) or []
            if rows and not any(label in r for r in rows):
                out.append(f"{name} has no label {label} (in {expr})")
            elif rows and val is not None and not any(r.get(label) == val for r in rows):
                out.append(f"no {name} sample has {label}={val!r} (in {expr})")
    return out


class _CommitOrRollback:
    """Commits a body starting with ``c``, rolls back the others."""

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        commit = msg.body.startswith(b"c")
        return LocalTransactionState.COMMIT_MESSAGE if commit else LocalTransactionState.ROLLBACK_MESSAGE

    def check_local_transaction(self, msg: object) -> LocalTransactionState:
        return LocalTransactionState.ROLLBACK_MESSAGE


@contextlib.asynccontextmanager
async def traffic(namesrv: str) -> AsyncIterator[list[bytes]]:
    """What gives every panel's metric rows: sends, a consumer that consumes five messages (committed) and
    fails one into the DLQ (max_reconsume_times=0), a committed and a rolled-back transaction; yields the
    bodies consumed while the producer and the consumer are still connected."""
    got: list[bytes] = []

    async def listener(msgs: list[Any], context: object) -> ConsumeConcurrentlyStatus:
        if any(m.body == b"dlq" for m in msgs):
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        got.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async with Producer("pDeploy", namesrv_addr=namesrv) as producer:
        for body in [b"deploy %d" % i for i in range(5)] + [b"dlq"]:
            await producer.send(Message(TOPIC, body))
        consumer = PushConsumer(GROUP, namesrv_addr=namesrv, rebalance_interval=1, broker_suspend_max_time=1,
                                max_reconsume_times=0,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
        consumer.subscribe(TOPIC, "*")
        consumer.register_message_listener(listener)
        await consumer.start()
        try:
            async with asyncio.timeout(60):
                while len(got) < 5:
                    await asyncio.sleep(0.05)
            await consumer.persist_consumer_offset()  # committed offsets: the lag gauges have rows
            async with TransactionProducer("pDeployTx", _CommitOrRollback(), namesrv_addr=namesrv) as tx:
                for body in (b"commit", b"rollback"):
                    await tx.send_message_in_transaction(Message(TX_TOPIC, body))
            yield got
        finally:
            await consumer.shutdown()


async def scrape(hosts: dict[str, dict[int, int]]) -> Exposed:
    """Every target of deploy/prometheus/prometheus.yml, scraped and parsed, in one view."""
    exposed = Exposed({})
    for targets in prometheus_targets().values():
        for service, port in targets:
            status, text = await http_get(hosts[service][port], "/metrics")
            assert status == 200, (service, text)
            exposed = exposed.merge(Exposed.parse(text))
    return exposed


async def test_compose_rocketq_services_serve_every_metric_the_dashboard_names(tmp_path: Path) -> None:
    async with compose_up(tmp_path) as run:
        # the compose healthchecks pass against the running services
        for name, svc in run.services.items():
            hc = svc.spec.get("healthcheck")
            if hc is None:
                continue
            assert hc["test"][0] == "CMD" and hc["test"][1] == "python", hc["test"]
            rc, out, err = await run_process(
                [sys.executable, *svc.translate_all(hc["test"][2:], run.hosts)], timeout=30
            )
            assert rc == 0, (name, out, err)
        namesrv = f"127.0.0.1:{run.hosts['namesrv'][9876]}"
        async with traffic(namesrv) as got:
            assert sorted(got) == sorted(b"deploy %d" % i for i in range(5))
            # END_TRANSACTION and the send-back to the DLQ are answered before they are counted: wait (bounded)
            exposed = Exposed({})
            for _ in range(300):
                exposed = await scrape(run.hosts)
                counted = ("send_to_dlq_messages", "commit_messages", "rollback_messages")
                if all(exposed.samples.get(f"rocketmq_{m}_total") for m in counted):
                    break
                await asyncio.sleep(0.1)
        assert dashboard_problems(exposed) == []
        # and every panel has rows to draw, but the replication lag (this compose broker has no slave)
        queried = {m for e in dashboard_queries() for m in METRIC.findall(e)}
        assert {m for m in queried if not exposed.samples[m]} == {"rocketmq_replication_lag_bytes"}
        # the check can fail: a misspelt metric, an unknown label and a label value nobody has are named
        broken = Exposed({k: v for k, v in exposed.samples.items() if k != "rocketmq_topic_number"})
        assert any("no metric rocketmq_topic_number" in p for p in dashboard_problems(broken))
        unlabelled = {
            k: [{kk: vv for kk, vv in r.items() if kk != "node_id"} for r in v] for k, v in exposed.samples.items()
        }
        assert any("has no label node_id" in p for p in dashboard_problems(Exposed(unlabelled)))
        no_long_poll = {k: [{**r, "is_long_polling": "false"} for r in v] for k, v in exposed.samples.items()}
        assert any("is_long_polling='true'" in p for p in dashboard_problems(Exposed(no_long_poll)))
        # the console serves its pages through the name server the compose file gives it
        assert set(run.services) == {"namesrv", "broker", "console"}
        status, page = await http_get(run.hosts["console"][8080], "/ops")
        assert status == 200, page
        assert f"<td>{namesrv}</td>" in page


# ---------------------------------------------------------------------------------------------- systemd


def unit_sections(path: Path) -> dict[str, dict[str, list[str]]]:
    """A systemd unit file: section → key → values (keys may repeat); comments and continuations handled."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    lines = iter(path.read_text(encoding="utf-8").splitlines())
    for line in lines:
        while line.endswith("\\"):
            line = line[:-1] + " " + next(lines)
        if not line.strip() or line.lstrip().startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[] "), {})
            continue
        assert current is not None, f"{path.name}: {line!r} outside a section"
        key, eq, value = line.partition("=")
        assert eq, f"{path.name}: {line!r}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def units() -> Iterator[tuple[Path, list[str]]]:
    for path in sorted((DEPLOY / "systemd").glob("*.service")):
        unit = unit_sections(path)
        assert set(unit) == {"Unit", "Service", "Install"}, path.name
        (exec_start,) = unit["Service"]["ExecStart"]
        argv = shlex.split(exec_start)
        assert argv[0].startswith("/") and Path(argv[0]).name == "rocketq", exec_start
        yield path, argv[1:]


def test_systemd_units_start_commands_parse_with_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    found = {}
    for path, argv in units():
        args = build_parser().parse_args(argv)  # SystemExit(2) on an unknown option or command
        assert args.func is not None
        found[argv[0]] = path.name
        if argv[0] in ("namesrv", "broker"):
            # -p: the whole configuration is read and checked (unknown keys, values) without starting
            local = [str(DEPLOY / "broker.conf") if a == "/etc/rocketq/broker.conf" else a for a in argv]
            capsys.readouterr()
            assert main([*local, "-p"]) == 0, capsys.readouterr().err
            printed = dict(line.split("=", 1) for line in capsys.readouterr().out.splitlines() if "=" in line)
            assert printed["metricsExporterType"] == "PROM", path.name
            # systemd starts it in /: a relative directory would land there
            dirs = {k: v for k, v in printed.items() if re.search(r"(Path|Dir|Home)$", k) and v}
            assert dirs and all(v.startswith("/") for v in dirs.values()), (path.name, dirs)
    assert set(found) == {"namesrv", "broker", "console"}


def test_unit_parser_refuses_what_systemd_refuses(tmp_path: Path) -> None:
    bad = tmp_path / "bad.service"
    bad.write_text("ExecStart=/bin/true\n[Service]\n")
    with pytest.raises(AssertionError, match="outside a section"):
        unit_sections(bad)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["broker", "--no-such-flag"])
    with contextlib.redirect_stderr(io.StringIO()):
        assert main(["broker", "-c", str(DEPLOY / "broker.conf"), "flushDiskTyp=SYNC_FLUSH", "-p"]) == 2
