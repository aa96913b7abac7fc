"""Name-server configuration, and its Java-style properties view (GET/UPDATE_NAMESRV_CONFIG)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rocketq.common.suggest import did_you_mean
from rocketq.errors import ConfigError
from rocketq.namesrv.kv_config import DEFAULT_KV_MAX_BYTES
from rocketq.protocol.command import DEFAULT_MAX_FRAME_SIZE
from rocketq.remoting.limits import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_PARTIAL_FRAME_BYTES,
    DEFAULT_MAX_WRITE_BUFFER,
    DEFAULT_WRITE_HIGH_WATER,
    DEFAULT_WRITE_LOW_WATER,
    ServerLimits,
)
from rocketq.remoting.tls import (
    SERVER_CERT_KEY,
    SERVER_CLIENT_AUTH_KEY,
    SERVER_KEY_KEY,
    SERVER_MODE_KEY,
    SERVER_TRUST_KEY,
    ServerTls,
    TlsMode,
)

DEFAULT_PORT = 9876
MAX_KV_BYTES = 1 << 30  # the table is held in memory and rewritten whole on each change


@dataclass(slots=True)
class NamesrvConfig:
    """Settings of one name server. Durations are seconds.

    ``kv_config_path`` defaults to ``<home_dir>/kvConfig.json`` (Java: ``~/namesrv/kvConfig.json``).
    """

    listen_host: str = "0.0.0.0"
    listen_port: int = DEFAULT_PORT
    home_dir: Path = Path("./data/namesrv")
    kv_config_path: Path | None = None
    scan_interval: float = 10.0
    broker_expiry: float = 120.0
    order_message_enable: bool = False
    idle_timeout: float = 120.0
    # remoting limits, as the broker's (serverMaxConnections, ...; see rocketq.remoting.limits)
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_partial_frame_bytes: int = DEFAULT_MAX_PARTIAL_FRAME_BYTES
    write_high_water: int = DEFAULT_WRITE_HIGH_WATER
    write_low_water: int = DEFAULT_WRITE_LOW_WATER
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER
    kv_config_max_bytes: int = DEFAULT_KV_MAX_BYTES
    #: the broker's Java 5.1 keys, for the name server's /metrics (rocketq's own): PROM serves it, DISABLE (the
    #: default) not; loopback unless protected or allowed; 5558 beside a broker's 5557 (0: any free port)
    metrics_exporter_type: str = "DISABLE"
    metrics_prom_exporter_port: int = 5558
    metrics_prom_exporter_host: str = "127.0.0.1"
    #: serve on a non-loopback listen_host without protection (refused otherwise; rocketq.remoting.exposure)
    allow_insecure_bind: bool = False
    #: TLS on the port (rocketq.remoting.tls), by Java's property names tls.server.*
    tls_mode: str = "disabled"
    tls_cert_path: str = ""
    tls_key_path: str = ""
    tls_trust_cert_path: str = ""
    tls_need_client_auth: str = "none"
    #: name server protection: the account file write requests are checked against (namesrv.protection)
    acl_file: Path | None = None
    acl_reload_interval: float = 5.0
    #: serve the 5.x controller's codes from this name server (Java ``enableControllerInNamesrv``)
    enable_controller_in_namesrv: bool = False
    #: the embedded controller: elect outside the in-sync set when nobody in it is alive
    enable_elect_unclean_master: bool = False
    notify_broker_role_changed: bool = True
    #: where the embedded controller keeps its state (default ``<home_dir>/controller``)
    controller_store_path: Path | None = None

    def __post_init__(self) -> None:
        self.home_dir = Path(self.home_dir)
        if self.kv_config_path is not None:
            self.kv_config_path = Path(self.kv_config_path)
        if self.acl_file is not None:
            self.acl_file = Path(self.acl_file)
        if self.controller_store_path is not None:
            self.controller_store_path = Path(self.controller_store_path)
        if not 0 <= self.listen_port <= 65535:
            raise ConfigError("listen_port", f"{self.listen_port} is not a TCP port")
        if self.metrics_exporter_type.upper() not in ("DISABLE", "PROM"):
            raise ConfigError("metricsExporterType", f"{self.metrics_exporter_type!r}: PROM or DISABLE")
        if not 0 <= self.metrics_prom_exporter_port <= 65535:
            raise ConfigError("metricsPromExporterPort", f"{self.metrics_prom_exporter_port} is not a TCP port")
        for name in ("scan_interval", "broker_expiry", "idle_timeout", "acl_reload_interval"):
            if not getattr(self, name) > 0:  # also rejects NaN
                raise ConfigError(name, "must be positive")
        if not 0 <= self.kv_config_max_bytes <= MAX_KV_BYTES:
            raise ConfigError("kvConfigMaxBytes", f"must be between 0 and {MAX_KV_BYTES} bytes")
        for problem, why in self.server_limits().problems(DEFAULT_MAX_FRAME_SIZE):
            raise ConfigError(problem, why)
        self.server_tls()

    def server_tls(self) -> ServerTls:
        return ServerTls(
            TlsMode.parse(self.tls_mode), self.tls_cert_path, self.tls_key_path,
            trust_cert_path=self.tls_trust_cert_path, need_client_auth=self.tls_need_client_auth,
        )  # fmt: skip

    def server_limits(self) -> ServerLimits:
        return ServerLimits(
            self.max_connections, self.max_partial_frame_bytes, self.write_high_water, self.write_low_water,
            self.max_write_buffer,
        )  # fmt: skip

    @property
    def resolved_controller_store_path(self) -> Path:
        return self.controller_store_path if self.controller_store_path is not None else self.home_dir / "controller"

    @property
    def resolved_kv_config_path(self) -> Path:
        return self.kv_config_path if self.kv_config_path is not None else self.home_dir / "kvConfig.json"

    # -------------------------------------------------------------------------- properties (wire edge)

    def to_properties(self) -> str:
        """``key=value`` lines with Java's property names (milliseconds where Java uses them)."""
        return "".join(f"{key}={spec.show(self)}\n" for key, spec in _PROPERTIES.items())

    def update_from_properties(self, props: dict[str, str], *, strict: bool = False) -> list[str]:
        """Apply the known, updatable keys and return them; unknown keys are ignored (as Java does), or refused
        with ``strict`` (settings given on the command line).

        The new values are validated together before any is applied; a value of the wrong type or outside its
        bounds (see ``MIN_BROKER_EXPIRY_MS``) raises ConfigError naming the key, and nothing changes.
        """
        staged: dict[str, Any] = {}
        applied: list[str] = []
        for key, text in props.items():
            spec = _PROPERTIES.get(key)
            remote_only = key in START_ONLY_KEYS and not strict
            if spec is None or spec.attr is None or key in CONFIG_BLACK_LIST or remote_only:
                if strict:
                    settable = [k for k, v in _PROPERTIES.items() if v.attr and k not in CONFIG_BLACK_LIST]
                    hint = did_you_mean(key, settable)
                    raise ConfigError(key, f"unknown name server setting, or not one that can be set this way{hint}")
                continue
            try:
                staged[spec.attr] = spec.parse(text.strip())
            except ValueError as exc:
                raise ConfigError(key, f"bad value {text[:40]!r}: {exc}") from None
            applied.append(key)
        replace(self, **staged)  # runs __post_init__: raises ConfigError before anything changes
        for attr, value in staged.items():
            setattr(self, attr, value)
        return applied


@dataclass(frozen=True, slots=True)
class _Property:
    show: Callable[[NamesrvConfig], str]
    attr: str | None = None
    parse: Callable[[str], Any] = str


def _bool(text: str) -> bool:
    # Java's Boolean.parseBoolean reads any other text as false; a typo should not silently turn a setting off
    low = text.lower()
    if low not in ("true", "false"):
        raise ValueError("expected true or false")
    return low == "true"


def _integer(text: str, low: int, high: int, unit: str) -> int:
    try:
        value = int(text)  # Java's parseLong/parseInt: "1.5", "1e3" and "inf" are refused too
    except ValueError:
        raise ValueError("not an integer") from None
    if not low <= value <= high:
        raise ValueError(f"must be between {low} and {high} {unit}")
    return value


# Bounds of the settings UPDATE_NAMESRV_CONFIG may change at run time. A broker is dropped when it has not
# registered for brokerChannelExpiredTime, or when its connection is closed (idle for
# serverChannelMaxIdleTimeSeconds): either below a broker's registration period would unregister every live
# broker between two registrations. Java brokers register every 30 s by default and at most every 60 s
# (registerNameServerPeriod is clamped to 10-60 s), so both must be at least 90 s: one and a half of the longest
# period, three of the default. The scan only looks for expired brokers; below 1 s it would busy the loop.
MIN_BROKER_EXPIRY_MS = 90_000
MIN_IDLE_SECONDS = 90
MIN_SCAN_INTERVAL_MS = 1_000
MAX_DURATION_MS = 86_400_000  # a day: any longer keeps a dead broker in the routes for good


def _expiry_ms(text: str) -> float:
    return _integer(text, MIN_BROKER_EXPIRY_MS, MAX_DURATION_MS, "ms") / 1000.0


def _scan_ms(text: str) -> float:
    return _integer(text, MIN_SCAN_INTERVAL_MS, MAX_DURATION_MS, "ms") / 1000.0


def _reload_ms(text: str) -> float:
    return _integer(text, 10, MAX_DURATION_MS, "ms") / 1000.0


def _idle_seconds(text: str) -> float:
    return float(_integer(text, MIN_IDLE_SECONDS, MAX_DURATION_MS // 1000, "s"))


def _ms(seconds: float) -> str:
    return str(round(seconds * 1000))


_PROPERTIES: dict[str, _Property] = {
    "rocketmqHome": _Property(lambda c: str(c.home_dir)),
    "kvConfigPath": _Property(lambda c: str(c.resolved_kv_config_path)),
    "listenPort": _Property(lambda c: str(c.listen_port)),
    "orderMessageEnable": _Property(lambda c: str(c.order_message_enable).lower(), "order_message_enable", _bool),
    "serverChannelMaxIdleTimeSeconds": _Property(lambda c: str(round(c.idle_timeout)), "idle_timeout", _idle_seconds),
    "scanNotActiveBrokerInterval": _Property(lambda c: _ms(c.scan_interval), "scan_interval", _scan_ms),
    "brokerChannelExpiredTime": _Property(lambda c: _ms(c.broker_expiry), "broker_expiry", _expiry_ms),
    "serverMaxConnections": _Property(lambda c: str(c.max_connections), "max_connections", int),
    "serverMaxPartialFrameBytes": _Property(lambda c: str(c.max_partial_frame_bytes), "max_partial_frame_bytes", int),
    "serverWriteBufferHighWaterMark": _Property(lambda c: str(c.write_high_water), "write_high_water", int),
    "serverWriteBufferLowWaterMark": _Property(lambda c: str(c.write_low_water), "write_low_water", int),
    "serverMaxWriteBufferBytes": _Property(lambda c: str(c.max_write_buffer), "max_write_buffer", int),
    "kvConfigMaxBytes": _Property(lambda c: str(c.kv_config_max_bytes), "kv_config_max_bytes", int),
    "metricsExporterType": _Property(lambda c: c.metrics_exporter_type, "metrics_exporter_type"),
    "metricsPromExporterPort": _Property(
        lambda c: str(c.metrics_prom_exporter_port), "metrics_prom_exporter_port", int
    ),
    "metricsPromExporterHost": _Property(lambda c: c.metrics_prom_exporter_host, "metrics_prom_exporter_host"),
    "allowInsecureBind": _Property(lambda c: str(c.allow_insecure_bind).lower(), "allow_insecure_bind", _bool),
    "aclFile": _Property(lambda c: str(c.acl_file or ""), "acl_file", lambda text: Path(text) if text else None),
    "aclReloadIntervalMills": _Property(lambda c: _ms(c.acl_reload_interval), "acl_reload_interval", _reload_ms),
    "enableControllerInNamesrv": _Property(
        lambda c: str(c.enable_controller_in_namesrv).lower(), "enable_controller_in_namesrv", _bool
    ),
    "enableElectUncleanMaster": _Property(
        lambda c: str(c.enable_elect_unclean_master).lower(), "enable_elect_unclean_master", _bool
    ),
    "notifyBrokerRoleChanged": _Property(
        lambda c: str(c.notify_broker_role_changed).lower(), "notify_broker_role_changed", _bool
    ),
    "controllerStorePath": _Property(
        lambda c: str(c.resolved_controller_store_path), "controller_store_path", lambda t: Path(t) if t else None
    ),
    SERVER_MODE_KEY: _Property(lambda c: c.tls_mode, "tls_mode"),
    SERVER_CERT_KEY: _Property(lambda c: c.tls_cert_path, "tls_cert_path"),
    SERVER_KEY_KEY: _Property(lambda c: c.tls_key_path, "tls_key_path"),
    SERVER_TRUST_KEY: _Property(lambda c: c.tls_trust_cert_path, "tls_trust_cert_path"),
    SERVER_CLIENT_AUTH_KEY: _Property(lambda c: c.tls_need_client_auth, "tls_need_client_auth"),
}

# Keys that UPDATE_NAMESRV_CONFIG must not touch (Java's default black list plus rocketmqHome).
CONFIG_BLACK_LIST = frozenset({"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"})
# Security settings: given at start-up only (command line); a remote UPDATE_NAMESRV_CONFIG ignores them
START_ONLY_KEYS = frozenset(
    {
        "allowInsecureBind", "aclFile", "aclReloadIntervalMills", "enableControllerInNamesrv", "controllerStorePath",
        "metricsExporterType", "metricsPromExporterPort", "metricsPromExporterHost",
        SERVER_MODE_KEY, SERVER_CERT_KEY, SERVER_KEY_KEY, SERVER_TRUST_KEY, SERVER_CLIENT_AUTH_KEY,
    }
)  # fmt: skip


def parse_properties(text: str) -> dict[str, str]:
    """``java.util.Properties``-like: ``key=value`` or ``key:value`` lines, ``#``/``!`` comments."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        for i, ch in enumerate(line):
            if ch in "=:":
                out[line[:i].strip()] = line[i + 1 :].strip()
                break
        else:
            out[line] = ""
    return out
