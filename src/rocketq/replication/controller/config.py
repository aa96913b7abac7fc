"""Controller settings, by Java ``ControllerConfig``'s property names (durations in ms on the properties side)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rocketq.errors import ConfigError

#: ``rocketq controller``'s default port (the port of Java's sample controller.conf; not read from Java's code)
DEFAULT_CONTROLLER_PORT = 9878


@dataclass(slots=True)
class ControllerConfig:
    #: elect from every replica when no in-sync one is alive (may lose acknowledged messages)
    enable_elect_unclean_master: bool = False
    #: tell every member of a group its new master after an election (NOTIFY_BROKER_ROLE_CHANGED)
    notify_broker_role_changed: bool = True
    #: how often dead brokers are looked for, seconds (Java ``scanNotActiveBrokerInterval`` 5000 ms)
    scan_not_active_broker_interval: float = 5.0
    #: where the state is kept; None: in memory only
    controller_store_path: Path | None = None

    def __post_init__(self) -> None:
        if self.controller_store_path is not None:
            self.controller_store_path = Path(self.controller_store_path)
        if not self.scan_not_active_broker_interval > 0:
            raise ConfigError("scanNotActiveBrokerInterval", "must be positive")

    def update_from_properties(self, props: dict[str, str]) -> list[str]:
        """Apply the controller keys found in ``props`` (others are left to their owner); returns them."""
        applied = []
        for key, text in props.items():
            value = text.strip()
            if key == "enableElectUncleanMaster":
                self.enable_elect_unclean_master = _bool(key, value)
            elif key == "notifyBrokerRoleChanged":
                self.notify_broker_role_changed = _bool(key, value)
            elif key == "scanNotActiveBrokerInterval":
                try:
                    ms = int(value)
                except ValueError:
                    raise ConfigError(key, f"bad value {value[:40]!r}: not an integer") from None
                if ms <= 0:
                    raise ConfigError(key, "must be positive")
                self.scan_not_active_broker_interval = ms / 1000.0
            elif key == "controllerStorePath":
                self.controller_store_path = Path(value) if value else None
            else:
                continue
            applied.append(key)
        return applied

    def to_properties(self) -> dict[str, str]:
        return {
            "enableElectUncleanMaster": str(self.enable_elect_unclean_master).lower(),
            "notifyBrokerRoleChanged": str(self.notify_broker_role_changed).lower(),
            "scanNotActiveBrokerInterval": str(round(self.scan_not_active_broker_interval * 1000)),
            "controllerStorePath": str(self.controller_store_path or ""),
        }


def _bool(key: str, text: str) -> bool:
    low = text.lower()
    if low not in ("true", "false"):
        raise ConfigError(key, f"bad value {text[:40]!r}: expected true or false")
    return low == "true"
