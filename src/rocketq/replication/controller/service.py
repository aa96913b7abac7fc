"""The controller: decisions (``manager``), liveness (``liveness``) and persistence (``store``) together.

Transport-neutral and synchronous: typed headers in, ``Decision`` out. A decision's events are made durable
by the store first and applied after, so an answer never reports a change a restart would forget. The
periodic ``scan`` finds dead brokers and elects for groups whose master is among them; the role changes it
(and any election) produces are queued in ``notices`` for the transport to deliver.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass

from rocketq.codes import ControllerResponseCode as CRC
from rocketq.protocol.controller_headers import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    CleanBrokerDataRequestHeader,
    ElectMasterRequestHeader,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    RegisterBrokerToControllerRequestHeader,
)
from rocketq.replication.controller.config import ControllerConfig
from rocketq.replication.controller.liveness import BrokerLive, Clock, LivenessTable
from rocketq.replication.controller.manager import Decision, ReplicasManager
from rocketq.replication.controller.state import ControllerState, ElectMaster
from rocketq.replication.controller.store import MemoryMetadataStore, MetadataStore

log = logging.getLogger("rocketq.controller")


@dataclass(frozen=True, slots=True)
class RoleChange:
    """A group's new master, to be told to every member address (NOTIFY_BROKER_ROLE_CHANGED)."""

    broker_name: str
    master_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set: frozenset[int]
    sync_state_set_epoch: int
    member_addresses: tuple[str, ...]


class Controller:
    def __init__(self, config: ControllerConfig, store: MetadataStore | None = None, *, clock: Clock) -> None:
        self.config = config
        self.store: MetadataStore = store if store is not None else MemoryMetadataStore()
        self.state: ControllerState = self.store.load()
        self.liveness = LivenessTable(clock)
        self.manager = ReplicasManager(self.state, elect_unclean=config.enable_elect_unclean_master)
        #: role changes not yet delivered (the transport drains it)
        self.notices: list[RoleChange] = []
        #: this controller's address, as GET_METADATA_INFO names the leader (a single controller leads)
        self.address: str | None = None

    # ------------------------------------------------------------------------------------------- helpers

    def live(self, cluster_name: str, broker_name: str, broker_id: int) -> BrokerLive | None:
        if self.liveness.is_alive(cluster_name, broker_name, broker_id):
            return self.liveness.get(cluster_name, broker_name, broker_id)
        return None

    def _commit(self, decision: Decision) -> Decision:
        if not decision.events:
            return decision
        after = copy.deepcopy(self.state)
        for event in decision.events:
            after.apply(event)
        self.store.commit(after, decision.events)  # raises: nothing applied, the caller answers an error
        for event in decision.events:
            self.state.apply(event)
            if isinstance(event, ElectMaster):
                self._note_role_change(event.broker_name)
        return decision

    def _note_role_change(self, broker_name: str) -> None:
        group = self.state.groups.get(broker_name)
        if group is None or not self.config.notify_broker_role_changed:
            return
        self.notices.append(
            RoleChange(
                broker_name,
                group.master_id,
                group.address_of(group.master_id),
                group.master_epoch,
                frozenset(group.sync_state_set),
                group.sync_state_set_epoch,
                tuple(sorted(group.addresses.values())),
            )
        )

    # ------------------------------------------------------------------------------------------ requests

    def heartbeat(self, req: BrokerHeartbeatRequestHeader, channel: object | None = None) -> Decision:
        if req.broker_id is None:
            return Decision(CRC.CONTROLLER_INVALID_REQUEST, "heartbeat without brokerId")
        timeout = None if req.heartbeat_timeout_mills is None else req.heartbeat_timeout_mills / 1000.0
        self.liveness.heartbeat(
            req.cluster_name,
            req.broker_name,
            req.broker_id,
            req.broker_addr,
            timeout=timeout,
            epoch=req.epoch,
            max_offset=req.max_offset,
            confirm_offset=req.confirm_offset,
            election_priority=req.election_priority,
            channel=channel,
        )
        return Decision()

    def next_broker_id(self, req: GetNextBrokerIdRequestHeader) -> Decision:
        return self.manager.next_broker_id(req)

    def apply_broker_id(self, req: ApplyBrokerIdRequestHeader) -> Decision:
        return self._commit(self.manager.apply_broker_id(req))

    def register_broker(self, req: RegisterBrokerToControllerRequestHeader) -> Decision:
        return self._commit(self.manager.register_broker(req, self.live))

    def elect_master(self, req: ElectMasterRequestHeader) -> Decision:
        return self._commit(self.manager.elect_master(req, self.live))

    def alter_sync_state_set(
        self, req: AlterSyncStateSetRequestHeader, new_set: frozenset[int], set_epoch: int
    ) -> Decision:
        return self._commit(self.manager.alter_sync_state_set(req, new_set, set_epoch, self.live))

    def replica_info(self, broker_name: str) -> Decision:
        return self.manager.replica_info(broker_name)

    def sync_state_data(self, broker_names: list[str]) -> Decision:
        return self.manager.sync_state_data(broker_names, self.live)

    def clean_broker_data(self, req: CleanBrokerDataRequestHeader) -> Decision:
        decision = self._commit(self.manager.clean_broker_data(req, self.live))
        if decision.ok:
            ids = frozenset(int(i) for i in (req.broker_id_set_to_clean or "").split(";") if i.strip())
            self.liveness.forget(req.broker_name, ids)
        return decision

    def config_text(self) -> str:
        """GET_CONTROLLER_CONFIG: ``key=value`` lines with Java's property names."""
        return "".join(f"{k}={v}\n" for k, v in self.config.to_properties().items())

    def update_config(self, props: dict[str, str]) -> list[str]:
        """UPDATE_CONTROLLER_CONFIG: apply the known keys (all checked first; ConfigError changes nothing)."""
        staged = copy.copy(self.config)
        applied = staged.update_from_properties(props)
        for key in ("enable_elect_unclean_master", "notify_broker_role_changed", "scan_not_active_broker_interval"):
            setattr(self.config, key, getattr(staged, key))  # the store path is fixed once started
        self.manager.elect_unclean = self.config.enable_elect_unclean_master
        return applied

    def metadata(self) -> Decision:
        addr = self.address
        return Decision(
            header=GetMetaDataResponseHeader(
                group=None, controller_leader_id="0", controller_leader_address=addr, is_leader=True, peers=addr
            )
        )

    # ----------------------------------------------------------------------------------------------- scan

    def scan(self) -> list[Decision]:
        """Drop brokers whose heartbeat expired; elect for every group whose master is no longer alive while
        some member of it is (Java: the inactive-broker scan, then ``ElectMaster`` by the controller)."""
        for live in self.liveness.expire():
            log.info("controller.broker_expired cluster=%s group=%s id=%s addr=%s",
                     live.cluster_name, live.broker_name, live.broker_id, live.address)  # fmt: skip
        return self.elect_for_dead_masters()

    def on_channel_closed(self, channel: object) -> list[Decision]:
        """A connection closed: the brokers that heartbeated over it are dead now (Java
        ``onBrokerChannelClose``), without waiting for their timeout; elect where a master was among them."""
        gone = self.liveness.drop_channel(channel)
        for live in gone:
            log.info("controller.broker_disconnected cluster=%s group=%s id=%s addr=%s",
                     live.cluster_name, live.broker_name, live.broker_id, live.address)  # fmt: skip
        return self.elect_for_dead_masters() if gone else []

    def elect_for_dead_masters(self) -> list[Decision]:
        decisions = []
        for name, group in sorted(self.state.groups.items()):
            if group.master_id is None or self.live(group.cluster_name, name, group.master_id) is not None:
                continue
            if not any(self.live(group.cluster_name, name, i) for i in group.addresses):
                continue  # nobody to elect, nobody to tell: wait for a member to come back
            decision = self._commit(
                self.manager.elect_master(
                    ElectMasterRequestHeader(cluster_name=group.cluster_name, broker_name=name), self.live
                )
            )
            log.info(
                "controller.elect group=%s code=%s master=%s epoch=%s",
                name,
                decision.code,
                group.master_id,
                group.master_epoch,
            )
            decisions.append(decision)
        return decisions
