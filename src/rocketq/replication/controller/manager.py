"""The controller's decisions (Java ``ReplicasInfoManager``): a request in, a ``Decision`` out.

Nothing here changes the state: a decision carries the events that would, and the service persists them and
then applies them (``ControllerState.apply``). Answers carry Java's codes and remarks' meaning.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rocketq.codes import ControllerResponseCode as CRC
from rocketq.codes import ResponseCode
from rocketq.errors import ProtocolError
from rocketq.protocol.controller_headers import (
    AlterSyncStateSetRequestHeader,
    AlterSyncStateSetResponseHeader,
    ApplyBrokerIdRequestHeader,
    ApplyBrokerIdResponseHeader,
    CleanBrokerDataRequestHeader,
    ElectMasterRequestHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoResponseHeader,
    MasterInfoHeader,
    RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
)
from rocketq.protocol.fastjson import loads_lenient
from rocketq.protocol.headers import Header
from rocketq.replication.controller.elect import elect
from rocketq.replication.controller.liveness import BrokerLive
from rocketq.replication.controller.state import (
    FIRST_BROKER_ID,
    AlterSyncStateSet,
    ApplyBrokerId,
    BrokerGroup,
    CleanBrokerData,
    ControllerState,
    ElectMaster,
    Event,
    UpdateBrokerAddress,
)

#: (clusterName, brokerName, brokerId) → its last heartbeat when alive, else None
LiveOf = Callable[[str, str, int], BrokerLive | None]


@dataclass(slots=True)
class Decision:
    code: int = ResponseCode.SUCCESS
    remark: str | None = None
    header: Header | None = None
    body: bytes = b""
    events: list[Event] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.code == ResponseCode.SUCCESS


def _json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def sync_state_set_body(ids: set[int] | frozenset[int], epoch: int) -> bytes:
    """Java ``SyncStateSet``'s JSON."""
    return _json({"syncStateSet": sorted(ids), "syncStateSetEpoch": epoch})


def decode_sync_state_set(body: bytes) -> tuple[frozenset[int], int]:
    """The ids and epoch of a ``SyncStateSet`` body; ValueError when it is not one."""
    try:
        raw = loads_lenient(body)  # orjson underneath: bounded nesting, no RecursionError
        ids = frozenset(int(i) for i in raw.get("syncStateSet") or [])
        return ids, int(raw.get("syncStateSetEpoch", 0))
    except (ProtocolError, ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a SyncStateSet body: {exc}") from None


def member_group(group: BrokerGroup) -> dict[str, Any]:
    """Java ``BrokerMemberGroup``."""
    return {
        "cluster": group.cluster_name,
        "brokerName": group.broker_name,
        "brokerAddrs": {str(k): v for k, v in sorted(group.addresses.items())},
    }


class ReplicasManager:
    def __init__(self, state: ControllerState, *, elect_unclean: bool = False) -> None:
        self.state = state
        self.elect_unclean = elect_unclean

    # ------------------------------------------------------------------------------------- registration

    def next_broker_id(self, req: GetNextBrokerIdRequestHeader) -> Decision:
        group = self.state.groups.get(req.broker_name)
        nxt = FIRST_BROKER_ID if group is None else group.next_broker_id
        return Decision(
            header=GetNextBrokerIdResponseHeader(
                cluster_name=req.cluster_name, broker_name=req.broker_name, next_broker_id=nxt
            )
        )

    def apply_broker_id(self, req: ApplyBrokerIdRequestHeader) -> Decision:
        header = ApplyBrokerIdResponseHeader(cluster_name=req.cluster_name, broker_name=req.broker_name)
        address = req.register_check_code.split(";")[0]
        event = ApplyBrokerId(
            req.cluster_name, req.broker_name, address, req.applied_broker_id, req.register_check_code
        )
        group = self.state.groups.get(req.broker_name)
        if group is None:
            if req.applied_broker_id == FIRST_BROKER_ID:
                return Decision(header=header, events=[event])
            return Decision(
                CRC.CONTROLLER_BROKER_ID_INVALID,
                f"Broker-set: {req.broker_name} hasn't been "
                f"registered in controller, but broker try to apply brokerId: {req.applied_broker_id}",
                header,
            )
        known = group.check_codes.get(req.applied_broker_id)
        if req.applied_broker_id not in group.addresses or known == req.register_check_code:
            return Decision(header=header, events=[event])
        return Decision(
            CRC.CONTROLLER_BROKER_ID_INVALID,
            f"Fail to apply brokerId: {req.applied_broker_id} in broker-set: {req.broker_name}",
            header,
        )

    def register_broker(self, req: RegisterBrokerToControllerRequestHeader, live: LiveOf) -> Decision:
        group = self.state.groups.get(req.broker_name)
        if group is None:
            return Decision(
                CRC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                f"Broker-set: {req.broker_name} hasn't been registered in controller",
            )
        if req.broker_id not in group.addresses:
            return Decision(
                CRC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                f"BrokerId: {req.broker_id} hasn't been registered in broker-set: {req.broker_name}",
            )
        header = RegisterBrokerToControllerResponseHeader(cluster_name=req.cluster_name, broker_name=req.broker_name)
        if group.master_id is not None and live(group.cluster_name, group.broker_name, group.master_id):
            header = replace(
                header,
                master_broker_id=group.master_id,
                master_address=group.address_of(group.master_id),
                master_epoch=group.master_epoch,
                sync_state_set_epoch=group.sync_state_set_epoch,
            )
        events: list[Event] = []
        if group.addresses[req.broker_id] != req.broker_address:
            events.append(UpdateBrokerAddress(req.broker_name, req.broker_address, req.broker_id))
        body = sync_state_set_body(group.sync_state_set, group.sync_state_set_epoch)
        return Decision(header=header, body=body, events=events)

    # ----------------------------------------------------------------------------------------- election

    def elect_master(self, req: ElectMasterRequestHeader, live: LiveOf) -> Decision:
        """``req.broker_id`` None: the controller's own trigger (a dead master); ``designate_elect``: an admin's
        switch-over to ``broker_id``; otherwise a broker asking (it wins the group's first election)."""
        group = self.state.groups.get(req.broker_name)
        if group is None:
            return Decision(CRC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, "Broker hasn't been registered")
        if req.broker_id is not None and req.broker_id < 0:  # newer 5.x Java sends -1 for "no broker"
            req = replace(req, broker_id=None)
        lookup = lambda i: live(group.cluster_name, group.broker_name, i)  # noqa: E731
        new_master: int | None = None
        if group.first_election and req.broker_id is not None and req.broker_id in group.addresses:
            new_master = req.broker_id
        if new_master is None:
            new_master = elect(
                group.sync_state_set,
                set(group.addresses) if self.elect_unclean else None,
                group.master_id,
                lookup,
                designated=req.broker_id if req.designate_elect else None,
            )
        if new_master is not None and new_master == group.master_id:
            return Decision(
                CRC.CONTROLLER_MASTER_STILL_EXIST,
                f"The old master {group.master_id} is still alive, not need to elect new master for "
                f"broker {group.broker_name}",
                self._master_info(group),
            )
        if new_master is not None:
            header = MasterInfoHeader(
                master_broker_id=new_master,
                master_address=group.address_of(new_master),
                master_epoch=group.master_epoch + 1,
                sync_state_set_epoch=group.sync_state_set_epoch + 1,
            )
            body = _json({"brokerMemberGroup": member_group(group), "syncStateSet": [new_master]})
            return Decision(header=header, body=body, events=[ElectMaster(group.broker_name, new_master)])
        if req.broker_id is None:
            # the controller's trigger: record that the group has lost its master
            return Decision(
                CRC.CONTROLLER_MASTER_NOT_AVAILABLE,
                "Old master has down and failed to elect a new broker master",
                events=[ElectMaster(group.broker_name, None)] if group.master_id is not None else [],
            )
        return Decision(CRC.CONTROLLER_ELECT_MASTER_FAILED, "Failed to elect a new master")

    @staticmethod
    def _master_info(group: BrokerGroup) -> MasterInfoHeader:
        return MasterInfoHeader(
            master_broker_id=group.master_id,
            master_address=group.address_of(group.master_id),
            master_epoch=group.master_epoch,
            sync_state_set_epoch=group.sync_state_set_epoch,
        )

    # ------------------------------------------------------------------------------------- in-sync set

    def alter_sync_state_set(
        self, req: AlterSyncStateSetRequestHeader, new_set: frozenset[int], set_epoch: int, live: LiveOf
    ) -> Decision:
        group = self.state.groups.get(req.broker_name)
        fail = CRC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
        if group is None:
            return Decision(fail, "Broker metadata is not existed")
        if new_set == group.sync_state_set:
            return Decision(fail, "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet")
        if group.master_id != req.master_broker_id:
            return Decision(
                CRC.CONTROLLER_INVALID_MASTER,
                f"Rejecting alter syncStateSet request because the "
                f"current leader is:{{{group.master_id}}}, not {{{req.master_broker_id}}}",
            )
        if req.master_epoch != group.master_epoch:
            return Decision(
                CRC.CONTROLLER_FENCED_MASTER_EPOCH,
                f"Rejecting alter syncStateSet request because the "
                f"current master epoch is:{{{group.master_epoch}}}, not {{{req.master_epoch}}}",
            )
        if set_epoch != group.sync_state_set_epoch:
            return Decision(
                CRC.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
                "Rejecting alter syncStateSet request because "
                f"the current syncStateSet epoch is:{{{group.sync_state_set_epoch}}}, not {{{set_epoch}}}",
            )
        for replica in sorted(new_set):
            if replica not in group.addresses:
                return Decision(
                    CRC.CONTROLLER_INVALID_REPLICAS,
                    f"Rejecting alter syncStateSet request because the replicas {{{replica}}} don't exist",
                )
            if live(group.cluster_name, group.broker_name, replica) is None:
                return Decision(
                    CRC.CONTROLLER_BROKER_NOT_ALIVE,
                    f"Rejecting alter syncStateSet request because the replicas {{{replica}}} don't alive",
                )
        if group.master_id not in new_set:
            return Decision(
                fail,
                "Rejecting alter syncStateSet request because the newSyncStateSet don't contains "
                f"origin leader {{{group.master_id}}}",
            )
        epoch = group.sync_state_set_epoch + 1
        return Decision(
            header=AlterSyncStateSetResponseHeader(new_sync_state_set_epoch=epoch),
            body=sync_state_set_body(new_set, epoch),
            events=[AlterSyncStateSet(group.broker_name, new_set)],
        )

    # -------------------------------------------------------------------------------------------- reads

    def replica_info(self, broker_name: str) -> Decision:
        group = self.state.groups.get(broker_name)
        if group is None:
            return Decision(CRC.CONTROLLER_BROKER_METADATA_NOT_EXIST, "Broker metadata is not existed")
        header = GetReplicaInfoResponseHeader(
            master_broker_id=group.master_id,
            master_address=group.address_of(group.master_id),
            master_epoch=group.master_epoch,
        )
        return Decision(header=header, body=sync_state_set_body(group.sync_state_set, group.sync_state_set_epoch))

    def sync_state_data(self, broker_names: list[str], live: LiveOf) -> Decision:
        """Java ``BrokerReplicasInfo`` for the named groups (unknown names are left out)."""
        table: dict[str, Any] = {}
        for name in broker_names:
            group = self.state.groups.get(name)
            if group is None:
                continue
            in_sync: list[dict[str, Any]] = []
            not_in_sync: list[dict[str, Any]] = []
            for broker_id, address in sorted(group.addresses.items()):
                alive = live(group.cluster_name, name, broker_id) is not None
                ident = {"brokerName": name, "brokerId": broker_id, "brokerAddress": address, "alive": alive}
                (in_sync if broker_id in group.sync_state_set else not_in_sync).append(ident)
            table[name] = {
                "masterBrokerId": group.master_id,
                "masterAddress": group.address_of(group.master_id),
                "masterEpoch": group.master_epoch,
                "syncStateSetEpoch": group.sync_state_set_epoch,
                "inSyncReplicas": in_sync,
                "notInSyncReplicas": not_in_sync,
            }
        return Decision(body=_json({"replicasInfoTable": table}))

    def clean_broker_data(self, req: CleanBrokerDataRequestHeader, live: LiveOf) -> Decision:
        bad = CRC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
        group = self.state.groups.get(req.broker_name)
        try:
            ids = frozenset(int(i) for i in (req.broker_id_set_to_clean or "").split(";") if i.strip())
        except ValueError:
            return Decision(CRC.CONTROLLER_INVALID_REQUEST, f"bad brokerIdSetToClean {req.broker_id_set_to_clean!r}")
        if not req.is_clean_living_broker and group is not None:
            if not ids and group.master_id is not None:
                return Decision(bad, f"Broker {req.broker_name} is still alive, clean up failure")
            for broker_id in sorted(ids):
                if live(group.cluster_name, group.broker_name, broker_id) is not None:
                    return Decision(bad, f"Broker [{req.broker_name},  {broker_id}] is still alive, clean up failure")
        if group is None:
            return Decision(bad, f"Broker {req.broker_name} is not existed,clean broker data failure.")
        return Decision(events=[CleanBrokerData(req.broker_name, ids)])
