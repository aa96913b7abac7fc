"""deploy/compose.yaml read without a container runtime: the Compose specification's structural rules that can be
checked offline (``problems``), and the translation of a rocketq service into a local process (``LocalService``):
the image's entrypoint becomes ``python -m rocketq``, service host names localhost, mounted container paths
their host directories, and the service's own ports test ports.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

# The Compose specification's attribute names (facts of compose-spec's schema) for what this file may use.
TOP_LEVEL = {"version", "name", "include", "services", "networks", "volumes", "configs", "secrets"}
SERVICE_KEYS = {
    "build", "command", "container_name", "depends_on", "entrypoint", "env_file", "environment", "expose",
    "healthcheck", "hostname", "image", "init", "labels", "logging", "networks", "platform", "ports",
    "pull_policy", "read_only", "restart", "stop_grace_period", "stop_signal", "tmpfs", "ulimits", "user",
    "volumes", "working_dir", "deploy", "profiles", "cap_drop", "security_opt", "extra_hosts",
}  # fmt: skip
BUILD_KEYS = {"context", "dockerfile", "args", "target", "labels", "cache_from", "network", "platforms"}
HEALTHCHECK_KEYS = {"test", "interval", "timeout", "retries", "start_period", "start_interval", "disable"}
DEPENDS_CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}
RESTART = {"no", "always", "on-failure", "unless-stopped"}
DURATION = re.compile(r"^(\d+(\.\d+)?(us|ms|s|m|h))+$")
# ${NAME}, ${NAME:-default}, ${NAME-default}; $$ is a literal dollar
INTERPOLATION = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)|\$")
PORT = re.compile(r"^(?:(?P<ip>[\d.]+):)?(?:(?P<host>\d+):)?(?P<container>\d+)(?:/(?:tcp|udp))?$")


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Compose's variable substitution; a lone ``$`` is an error (as ``docker compose config`` says)."""

    def one(m: re.Match[str]) -> str:
        text = m.group(0)
        if text == "$$":
            return "$"
        if text == "$":
            raise ValueError(f"invalid interpolation in {value!r}")
        name = m.group(1) or m.group(3)
        if text.startswith("${") and ":-" in text:
            return env.get(name) or m.group(2) or ""
        if text.startswith("${") and m.group(2) is not None:
            return env[name] if name in env else m.group(2)
        return env.get(name, "")

    return INTERPOLATION.sub(one, value)


def _walk(node: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(node, str):
        return fn(node)
    if isinstance(node, list):
        return [_walk(v, fn) for v in node]
    if isinstance(node, dict):
        return {k: _walk(v, fn) for k, v in node.items()}
    return node


def load(path: Path = DEPLOY / "compose.yaml", env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The compose file, YAML merge keys resolved (PyYAML's safe loader does ``<<``), variables substituted."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(raw, dict)
    return dict(_walk(raw, lambda s: interpolate(s, env or {})))


def problems(doc: Mapping[str, Any], base: Path = DEPLOY) -> list[str]:
    """What a compose validator would refuse in ``doc``: unknown attributes, dangling references, bad formats,
    missing files. Empty when valid."""
    out: list[str] = []
    out += [f"unknown top-level key {k}" for k in doc if k not in TOP_LEVEL and not k.startswith("x-")]
    services: dict[str, Any] = doc.get("services") or {}
    volumes = set(doc.get("volumes") or {})
    if not services:
        out.append("no services")
    for name, svc in services.items():
        if not re.fullmatch(r"[a-zA-Z0-9._-]+", name):
            out.append(f"{name}: invalid service name")
        out += [f"{name}: unknown attribute {k}" for k in svc if k not in SERVICE_KEYS and not k.startswith("x-")]
        if "image" not in svc and "build" not in svc:
            out.append(f"{name}: neither image nor build")
        out += _build(name, svc.get("build"), base)
        for key in ("command", "entrypoint"):
            if key in svc and not (isinstance(svc[key], str) or _strings(svc[key])):
                out.append(f"{name}: {key} must be a string or a list of strings")
        if svc.get("restart", "no") not in RESTART:
            out.append(f"{name}: restart {svc['restart']!r}")
        if "stop_grace_period" in svc and not DURATION.match(str(svc["stop_grace_period"])):
            out.append(f"{name}: stop_grace_period {svc['stop_grace_period']!r}")
        env = svc.get("environment", {})
        if not isinstance(env, dict) or not all(isinstance(v, str | int | float | bool) for v in env.values()):
            out.append(f"{name}: environment must map names to scalars")
        out += _ports(name, svc.get("ports", []))
        out += _volumes(name, svc.get("volumes", []), volumes, base)
        out += _depends(name, svc.get("depends_on", []), services)
        out += _healthcheck(name, svc.get("healthcheck"))
    out += _cycles(services)
    return out


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _build(name: str, build: Any, base: Path) -> list[str]:
    if build is None:
        return []
    if isinstance(build, str):
        build = {"context": build}
    out = [f"{name}: unknown build attribute {k}" for k in build if k not in BUILD_KEYS]
    context = (base / build.get("context", ".")).resolve()
    dockerfile = context / build.get("dockerfile", "Dockerfile")
    if not dockerfile.is_file():
        return [*out, f"{name}: no Dockerfile {dockerfile}"]
    ignore = dockerfile.with_name(dockerfile.name + ".dockerignore")  # BuildKit's per-Dockerfile ignore file
    lines = ignore.read_text(encoding="utf-8").splitlines() if ignore.exists() else []
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    for line in dockerfile.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if parts[:1] == ["COPY"] and not any(p.startswith("--from") for p in parts):
            out += [f"{name}: COPY source {s} missing" for s in parts[1:-1] if not (context / s).exists()]
            if patterns[:1] == ["*"]:  # everything ignored but the ! entries
                out += [f"{name}: COPY source {s} is ignored" for s in parts[1:-1] if f"!{s}" not in patterns]
    return out


def _ports(name: str, ports: list[Any]) -> list[str]:
    return [f"{name}: port {p!r}" for p in ports if not (isinstance(p, str) and PORT.match(p))]


def _volumes(name: str, mounts: list[Any], declared: set[str], base: Path) -> list[str]:
    out = []
    for m in mounts:
        parts = str(m).split(":")
        if len(parts) not in (2, 3) or not parts[1].startswith("/") or parts[2:] not in ([], ["ro"], ["rw"]):
            out.append(f"{name}: volume {m!r}")
        elif parts[0].startswith((".", "/")):
            if not (base / parts[0]).exists():
                out.append(f"{name}: bind source {parts[0]} does not exist")
        elif parts[0] not in declared:
            out.append(f"{name}: named volume {parts[0]} not declared under volumes")
    return out


def _depends(name: str, deps: Any, services: Mapping[str, Any]) -> list[str]:
    items = deps.items() if isinstance(deps, dict) else ((d, {}) for d in deps)
    out = []
    for dep, how in items:
        if dep not in services:
            out.append(f"{name}: depends on unknown service {dep}")
            continue
        condition = (how or {}).get("condition", "service_started")
        if condition not in DEPENDS_CONDITIONS:
            out.append(f"{name}: depends_on condition {condition!r}")
        if condition == "service_healthy" and "healthcheck" not in services[dep]:
            out.append(f"{name}: waits for {dep} to be healthy, but {dep} has no healthcheck")
    return out


def _healthcheck(name: str, hc: Any) -> list[str]:
    if hc is None:
        return []
    out = [f"{name}: unknown healthcheck attribute {k}" for k in hc if k not in HEALTHCHECK_KEYS]
    test = hc.get("test")
    if not (isinstance(test, str) or (_strings(test) and test[0] in ("CMD", "CMD-SHELL", "NONE"))):
        out.append(f"{name}: healthcheck test {test!r}")
    for key in ("interval", "timeout", "start_period"):
        if key in hc and not DURATION.match(str(hc[key])):
            out.append(f"{name}: healthcheck {key} {hc[key]!r}")
    return out


def dependencies(svc: Mapping[str, Any]) -> list[str]:
    deps = svc.get("depends_on", [])
    return list(deps) if isinstance(deps, dict | list) else []


def _cycles(services: Mapping[str, Any]) -> list[str]:
    try:
        start_order(services)
    except ValueError as exc:
        return [str(exc)]
    return []


def start_order(services: Mapping[str, Any]) -> list[str]:
    """Services in an order where each comes after what it depends on (compose's start order); an unknown
    dependency is left to ``problems``."""
    done: list[str] = []
    pending = dict(services)
    for _ in range(len(services)):
        ready = [n for n, s in pending.items() if all(d in done or d not in services for d in dependencies(s))]
        if not ready:
            break
        for n in ready:
            done.append(n)
            del pending[n]
    if pending:
        raise ValueError(f"depends_on cycle among {sorted(pending)}")
    return done


def container_ports(svc: Mapping[str, Any]) -> set[int]:
    ports = {int(m["container"]) for p in svc.get("ports", []) if (m := PORT.match(str(p)))}
    return ports | {int(p) for p in svc.get("expose", [])}


@dataclass
class LocalService:
    """How one compose service runs here: ``own_ports`` maps its container ports to the ports it gets in the
    test (filled in as the services start), ``mounts`` container paths to host paths."""

    name: str
    spec: Mapping[str, Any]
    mounts: dict[str, Path]
    own_ports: dict[int, int] = field(default_factory=dict)

    @classmethod
    def of(cls, doc: Mapping[str, Any], name: str, volume_root: Path, base: Path = DEPLOY) -> LocalService:
        mounts: dict[str, Path] = {}
        for m in doc["services"][name].get("volumes", []):
            src, dst = str(m).split(":")[:2]
            mounts[dst] = (base / src).resolve() if src.startswith((".", "/")) else volume_root / src
        return cls(name, doc["services"][name], mounts)

    def translate(self, token: str, hosts: Mapping[str, Mapping[int, int]]) -> str:
        """One argument or environment value as this machine runs it: ``svc:port`` → 127.0.0.1 and that
        service's test port; a value naming a service → ``localhost`` (still a host name, as the service's name is
        in the compose network); 0.0.0.0 → 127.0.0.1 (the test binds loopback only); a value that is one of this
        service's ports → its test port; a mounted path → its host path."""

        def host_port(m: re.Match[str]) -> str:
            return f"127.0.0.1:{hosts[m.group(1)][int(m.group(2))]}"

        names = "|".join(re.escape(n) for n in hosts)
        token = re.sub(rf"\b({names}):(\d+)\b", host_port, token) if names else token
        key, eq, value = token.rpartition("=")
        if eq and value in hosts:  # brokerIP1=broker (a bare "broker" is the subcommand)
            value = "localhost"
        elif value == "0.0.0.0":
            value = "127.0.0.1"
        elif value.isdigit() and int(value) in self.own_ports:
            value = str(self.own_ports[int(value)])
        else:
            for dst, src in sorted(self.mounts.items(), key=lambda kv: -len(kv[0])):
                if value == dst or value.startswith(dst + "/"):
                    value = str(src) + value[len(dst) :]
                    break
        return f"{key}{eq}{value}"

    def translate_all(self, tokens: Iterable[str], hosts: Mapping[str, Mapping[int, int]]) -> list[str]:
        return [self.translate(t, hosts) for t in tokens]

    def argv(self, hosts: Mapping[str, Mapping[int, int]]) -> list[str]:
        command = self.spec["command"]
        assert isinstance(command, list), f"{self.name}: use the list form of command"
        return self.translate_all(command, hosts)

    def environment(self, hosts: Mapping[str, Mapping[int, int]]) -> dict[str, str]:
        return {k: self.translate(str(v), hosts) for k, v in (self.spec.get("environment") or {}).items()}

    def unmounted_paths(self, tokens: Iterable[str]) -> list[str]:
        """Absolute container paths in ``tokens`` that no volume holds (they would vanish with the container)."""
        out = []
        for t in tokens:
            value = t.rpartition("=")[2]
            if value.startswith("/") and not any(value == d or value.startswith(d + "/") for d in self.mounts):
                out.append(value)
        return out
