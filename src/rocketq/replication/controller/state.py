"""The controller's tables and the events that change them (Java ``ReplicasInfoManager``'s memory).

Every change is an event: the manager decides (pure, no change), the service persists the events, then
applies them here. Replaying the same events on an empty state gives the same state, which is what the
persistence relies on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: ids are assigned from 1 (Java ``MixAll.FIRST_SLAVE_ID``); 0 is the master's id in routes, never an assignment
FIRST_BROKER_ID = 1


@dataclass(slots=True)
class BrokerGroup:
    """One broker group (``brokerName``): its replicas and its sync state."""

    cluster_name: str
    broker_name: str
    #: broker id → address
    addresses: dict[int, str] = field(default_factory=dict)
    #: broker id → registerCheckCode (``addr;timestampMs``) it applied with
    check_codes: dict[int, str] = field(default_factory=dict)
    master_id: int | None = None
    master_epoch: int = 0
    sync_state_set: set[int] = field(default_factory=set)
    sync_state_set_epoch: int = 0

    @property
    def first_election(self) -> bool:
        """No master was ever elected in this group (Java ``isFirstTimeForElect``)."""
        return self.master_epoch == 0

    @property
    def next_broker_id(self) -> int:
        return max(self.addresses, default=FIRST_BROKER_ID - 1) + 1

    def address_of(self, broker_id: int | None) -> str | None:
        return None if broker_id is None else self.addresses.get(broker_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "clusterName": self.cluster_name,
            "brokerName": self.broker_name,
            "brokerIdTable": {str(k): v for k, v in sorted(self.addresses.items())},
            "registerCheckCodes": {str(k): v for k, v in sorted(self.check_codes.items())},
            "masterBrokerId": self.master_id,
            "masterEpoch": self.master_epoch,
            "syncStateSet": sorted(self.sync_state_set),
            "syncStateSetEpoch": self.sync_state_set_epoch,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> BrokerGroup:
        master = raw.get("masterBrokerId")
        return cls(
            cluster_name=str(raw["clusterName"]),
            broker_name=str(raw["brokerName"]),
            addresses={int(k): str(v) for k, v in raw.get("brokerIdTable", {}).items()},
            check_codes={int(k): str(v) for k, v in raw.get("registerCheckCodes", {}).items()},
            master_id=None if master is None else int(master),
            master_epoch=int(raw.get("masterEpoch", 0)),
            sync_state_set={int(i) for i in raw.get("syncStateSet", [])},
            sync_state_set_epoch=int(raw.get("syncStateSetEpoch", 0)),
        )


# ------------------------------------------------------------------------------------------------ events


@dataclass(frozen=True, slots=True)
class ApplyBrokerId:
    cluster_name: str
    broker_name: str
    broker_address: str
    broker_id: int
    check_code: str


@dataclass(frozen=True, slots=True)
class UpdateBrokerAddress:
    broker_name: str
    broker_address: str
    broker_id: int


@dataclass(frozen=True, slots=True)
class AlterSyncStateSet:
    broker_name: str
    sync_state_set: frozenset[int]


@dataclass(frozen=True, slots=True)
class ElectMaster:
    """``new_master`` None: the master died and nobody could be elected (the group is left without one)."""

    broker_name: str
    new_master: int | None


@dataclass(frozen=True, slots=True)
class CleanBrokerData:
    """``broker_ids`` empty: forget the whole group."""

    broker_name: str
    broker_ids: frozenset[int] = frozenset()


Event = ApplyBrokerId | UpdateBrokerAddress | AlterSyncStateSet | ElectMaster | CleanBrokerData

_EVENT_TYPES: dict[str, type[Any]] = {
    t.__name__: t for t in (ApplyBrokerId, UpdateBrokerAddress, AlterSyncStateSet, ElectMaster, CleanBrokerData)
}


def event_to_json(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(event).__name__}
    for name in event.__dataclass_fields__:
        value = getattr(event, name)
        out[name] = sorted(value) if isinstance(value, frozenset) else value
    return out


def event_from_json(raw: dict[str, Any]) -> Event:
    kind = _EVENT_TYPES.get(str(raw.get("type")))
    if kind is None:
        raise ValueError(f"unknown controller event type {raw.get('type')!r}")
    args = {k: v for k, v in raw.items() if k != "type"}
    for name in ("sync_state_set", "broker_ids"):
        if name in args:
            args[name] = frozenset(int(i) for i in args[name])
    event: Event = kind(**args)
    return event


class ControllerState:
    """All broker groups by ``brokerName``. ``apply`` is the only mutator."""

    def __init__(self) -> None:
        self.groups: dict[str, BrokerGroup] = {}

    def apply(self, event: Event) -> None:
        if isinstance(event, ApplyBrokerId):
            group = self.groups.get(event.broker_name)
            if group is None:
                group = self.groups[event.broker_name] = BrokerGroup(event.cluster_name, event.broker_name)
            if event.broker_id not in group.addresses:
                group.addresses[event.broker_id] = event.broker_address
                group.check_codes[event.broker_id] = event.check_code
        elif isinstance(event, UpdateBrokerAddress):
            group = self.groups.get(event.broker_name)
            if group is not None and event.broker_id in group.addresses:
                group.addresses[event.broker_id] = event.broker_address
        elif isinstance(event, AlterSyncStateSet):
            group = self.groups.get(event.broker_name)
            if group is not None:
                group.sync_state_set = set(event.sync_state_set)
                group.sync_state_set_epoch += 1
        elif isinstance(event, ElectMaster):
            group = self.groups.get(event.broker_name)
            if group is None:
                return
            # Both outcomes move the master epoch: a master lost without successor is a change too, and a
            # broker that still believes in the old epoch must be fenced.
            group.master_id = event.new_master
            group.master_epoch += 1
            if event.new_master is not None:
                group.sync_state_set = {event.new_master}
                group.sync_state_set_epoch += 1
        else:  # CleanBrokerData
            self._clean(event)

    def _clean(self, event: CleanBrokerData) -> None:
        if not event.broker_ids:
            self.groups.pop(event.broker_name, None)
            return
        group = self.groups.get(event.broker_name)
        if group is None:
            return
        for broker_id in event.broker_ids:
            group.addresses.pop(broker_id, None)
            group.check_codes.pop(broker_id, None)
            group.sync_state_set.discard(broker_id)
        if not group.addresses:
            del self.groups[event.broker_name]

    def to_json(self) -> dict[str, Any]:
        return {"groups": [g.to_json() for _, g in sorted(self.groups.items())]}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ControllerState:
        state = cls()
        for item in raw.get("groups", []):
            group = BrokerGroup.from_json(item)
            state.groups[group.broker_name] = group
        return state
