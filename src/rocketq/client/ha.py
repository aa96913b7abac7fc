"""The replication admin requests, as Java 5's ``MQAdminExt`` sends them (``mqadmin haStatus``,
``getSyncStateSet``, ``electMaster``).

* GET_BROKER_HA_STATUS (907) to a broker: no header; body ``HARuntimeInfo`` JSON (``rocketq.replication.status``).
* CONTROLLER_GET_SYNC_STATE_DATA (1006) to a controller: body a JSON list of broker names; answer
  ``{"replicasInfoTable": {name: {masterBrokerId, masterAddress, masterEpoch, syncStateSetEpoch,
  inSyncReplicas, notInSyncReplicas}}}`` (each replica ``{brokerName, brokerId, brokerAddress, alive}``).
* CONTROLLER_ELECT_MASTER (1002) to a controller with ``designateElect=true``: an admin's switch-over to one
  broker id; the answer's header names the master, its epoch and the in-sync set's epoch.

A controller answers with its own codes (2000–2014): ``ControllerAdminError`` names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocketq.codes import ControllerResponseCode, ResponseCode
from rocketq.errors import BrokerError, ProtocolError
from rocketq.protocol import fastjson

__all__ = ["ControllerAdminError", "ElectResult", "ReplicaGroup", "controller_error", "parse_sync_state_data"]


class ControllerAdminError(BrokerError):
    """A controller's answer other than SUCCESS, named by its controller code."""

    def __init__(self, remark: str | None = None, code: int | None = None) -> None:
        super().__init__(remark, code)
        if self.code in ControllerResponseCode._value2member_map_:
            name = ControllerResponseCode(self.code).name
        elif self.code in ResponseCode._value2member_map_:
            name = ResponseCode(self.code).name
        else:
            name = "UNKNOWN"
        self.args = (f"{name} ({self.code}): {self.remark}",)


def controller_error(code: int, remark: str | None, addr: str) -> ControllerAdminError:
    return ControllerAdminError(f"{(remark or '').strip()} (controller {addr})", code)


@dataclass(frozen=True, slots=True)
class Replica:
    broker_id: int
    address: str
    alive: bool
    in_sync: bool


@dataclass(frozen=True, slots=True)
class ReplicaGroup:
    """One broker group as the controller keeps it."""

    broker_name: str
    master_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set_epoch: int
    replicas: tuple[Replica, ...]

    @property
    def in_sync_ids(self) -> list[int]:
        return [r.broker_id for r in self.replicas if r.in_sync]


@dataclass(frozen=True, slots=True)
class ElectResult:
    master_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set_epoch: int
    #: False: the controller kept the current master (CONTROLLER_MASTER_STILL_EXIST)
    changed: bool = True


def _int(value: Any, default: int = 0) -> int:
    return default if value is None else int(value)


def parse_sync_state_data(body: bytes) -> dict[str, ReplicaGroup]:
    try:
        obj = fastjson.loads_lenient(body) if body else {}
        table = obj.get("replicasInfoTable") or {}
        out: dict[str, ReplicaGroup] = {}
        for name, g in table.items():
            replicas = [
                Replica(int(r["brokerId"]), str(r.get("brokerAddress") or ""), bool(r.get("alive")), in_sync)
                for key, in_sync in (("inSyncReplicas", True), ("notInSyncReplicas", False))
                for r in g.get(key) or []
            ]
            master = g.get("masterBrokerId")
            out[str(name)] = ReplicaGroup(
                str(name), None if master is None else int(master), g.get("masterAddress"),
                _int(g.get("masterEpoch")), _int(g.get("syncStateSetEpoch")),
                tuple(sorted(replicas, key=lambda r: r.broker_id)),
            )  # fmt: skip
        return out
    except (ProtocolError, AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"bad CONTROLLER_GET_SYNC_STATE_DATA body: {exc}") from None
