"""The controller: decisions (``manager``), liveness (``liveness``) and persistence (``store``) together.

Transport-neutral: typed headers in, ``Decision`` out. A change is decided, made durable by the store and
applied under one lock, so decisions never race and an answer never reports a change a restart would forget
(the store may take its time: a file write runs off the loop, a replicated store waits for its quorum).
Reads and heartbeats need no lock. The periodic ``scan`` (and a closed broker connection) finds dead brokers
and elects for groups whose master is among them; role changes are queued in ``notices`` for the transport.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable
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
from rocketq.replication.controller.liveness import DEFAULT_HEARTBEAT_TIMEOUT, BrokerLive, Clock, LivenessTable
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
    def __init__(
        self,
        config: ControllerConfig,
        store: MetadataStore | None = None,
        *,
        clock: Clock,
        startup_grace: float = DEFAULT_HEARTBEAT_TIMEOUT,
    ) -> None:
        self.config = config
        self.store: MetadataStore = store if store is not None else MemoryMetadataStore()
        self.state: ControllerState = self.store.load()  # once, before serving
        self.liveness = LivenessTable(clock)
        self.manager = ReplicasManager(self.state, elect_unclean=config.enable_elect_unclean_master)
        #: role changes not yet delivered (the transport drains it)
        self.notices: list[RoleChange] = []
        #: this controller's address, as GET_METADATA_INFO names the leader (a single controller leads)
        self.address: str | None = None
        self._lock = asyncio.Lock()
        #: after a (re)start, brokers get one heartbeat timeout to be heard before a silent master counts as
        #: dead: the state survived the restart, the liveness table did not
        self._grace_until = clock() + startup_grace
        self._heard: set[tuple[str, str, int]] = set()

    # ------------------------------------------------------------------------------------------- helpers

    def live(self, cluster_name: str, broker_name: str, broker_id: int) -> BrokerLive | None:
        if self.liveness.is_alive(cluster_name, broker_name, broker_id):
            return self.liveness.get(cluster_name, broker_name, broker_id)
        return None

    async def _change(self, decide: Callable[[], Decision]) -> Decision:
        """Decide, persist the decision's events, apply them — one change at a time."""
        async with self._lock:
            decision = decide()
            if not decision.events:
                return decision
            after = copy.deepcopy(self.state)
            for event in decision.events:
                after.apply(event)
            await self.store.commit(after, decision.events)  # raises: nothing applied, the caller answers
            for event in decision.events:
                self.state.apply(event)
                if isinstance(event, ElectMaster):
                    self._note_role_change(event.broker_name)
            return decision

    def _note_role_change(self, broker_name: str) -> None:
        group = self.state.groups.get(broker_name)
        if group is None or not self.config.notify_broker_role_changed:
            return
        self.notices.append(RoleChange(
            broker_name, group.master_id, group.address_of(group.master_id), group.master_epoch,
            frozenset(group.sync_state_set), group.sync_state_set_epoch, tuple(sorted(group.addresses.values())),
        ))  # fmt: skip

    # ------------------------------------------------------------------------------------------ requests

    def heartbeat(self, req: BrokerHeartbeatRequestHeader, channel: object | None = None) -> Decision:
        if req.broker_id is None:
            return Decision(CRC.CONTROLLER_INVALID_REQUEST, "heartbeat without brokerId")
        timeout = None if req.heartbeat_timeout_mills is None else req.heartbeat_timeout_mills / 1000.0
        self.liveness.heartbeat(
            req.cluster_name, req.broker_name, req.broker_id, req.broker_addr, timeout=timeout, epoch=req.epoch,
            max_offset=req.max_offset, confirm_offset=req.confirm_offset, election_priority=req.election_priority,
            channel=channel,
        )  # fmt: skip
        self._heard.add((req.cluster_name, req.broker_name, req.broker_id))
        return Decision()

    def next_broker_id(self, req: GetNextBrokerIdRequestHeader) -> Decision:
        return self.manager.next_broker_id(req)

    async def apply_broker_id(self, req: ApplyBrokerIdRequestHeader) -> Decision:
        return await self._change(lambda: self.manager.apply_broker_id(req))

    async def register_broker(self, req: RegisterBrokerToControllerRequestHeader) -> Decision:
        return await self._change(lambda: self.manager.register_broker(req, self.live))

    async def elect_master(self, req: ElectMasterRequestHeader) -> Decision:
        return await self._change(lambda: self.manager.elect_master(req, self.live))

    async def alter_sync_state_set(
        self, req: AlterSyncStateSetRequestHeader, new_set: frozenset[int], set_epoch: int
    ) -> Decision:
        return await self._change(lambda: self.manager.alter_sync_state_set(req, new_set, set_epoch, self.live))

    def replica_info(self, broker_name: str) -> Decision:
        return self.manager.replica_info(broker_name)

    def sync_state_data(self, broker_names: list[str]) -> Decision:
        return self.manager.sync_state_data(broker_names, self.live)

    async def clean_broker_data(self, req: CleanBrokerDataRequestHeader) -> Decision:
        decision = await self._change(lambda: self.manager.clean_broker_data(req, self.live))
        if decision.ok:
            ids = frozenset(int(i) for i in (req.broker_id_set_to_clean or "").split(";") if i.strip())
            self.liveness.forget(req.broker_name, ids)
        return decision

    def metadata(self) -> Decision:
        addr = self.address
        header = GetMetaDataResponseHeader(
            group=None, controller_leader_id="0", controller_leader_address=addr, is_leader=True, peers=addr
        )
        return Decision(header=header)

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

    # ----------------------------------------------------------------------------------------------- scan

    async def scan(self) -> list[Decision]:
        """Drop brokers whose heartbeat expired; elect for every group whose master is no longer alive while
        some member of it is (Java: the inactive-broker scan, then ``ElectMaster`` by the controller)."""
        for live in self.liveness.expire():
            log.info("controller.broker_expired cluster=%s group=%s id=%s addr=%s",
                     live.cluster_name, live.broker_name, live.broker_id, live.address)  # fmt: skip
        return await self.elect_for_dead_masters()

    async def on_channel_closed(self, channel: object) -> list[Decision]:
        """A connection closed: the brokers that heartbeated over it are dead now (Java
        ``onBrokerChannelClose``), without waiting for their timeout; elect where a master was among them."""
        gone = self.liveness.drop_channel(channel)
        for live in gone:
            log.info("controller.broker_disconnected cluster=%s group=%s id=%s addr=%s",
                     live.cluster_name, live.broker_name, live.broker_id, live.address)  # fmt: skip
        return await self.elect_for_dead_masters() if gone else []

    async def elect_for_dead_masters(self) -> list[Decision]:
        decisions = []
        for name in sorted(self.state.groups):
            group = self.state.groups.get(name)
            if group is None or group.master_id is None or self.live(group.cluster_name, name, group.master_id):
                continue
            if not any(self.live(group.cluster_name, name, i) for i in group.addresses):
                continue  # nobody to elect, nobody to tell: wait for a member to come back
            never_heard = (group.cluster_name, name, group.master_id) not in self._heard
            if never_heard and self.liveness.clock() < self._grace_until:
                continue  # a master not heard from since our start may just not have sent its heartbeat yet
            req = ElectMasterRequestHeader(cluster_name=group.cluster_name, broker_name=name)
            decision = await self.elect_master(req)  # decided again under the lock: the state may have moved
            log.info("controller.elect group=%s code=%s master=%s epoch=%s",
                     name, decision.code, group.master_id, group.master_epoch)  # fmt: skip
            decisions.append(decision)
        return decisions
