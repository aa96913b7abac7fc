"""Controller mode on the broker's port: NOTIFY_BROKER_ROLE_CHANGED (1008, from the controller) and
GET_BROKER_EPOCH_CACHE (1007, from a slave about to follow, or an admin). The decisions are the replicas
manager's."""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.codes import ControllerRequestCode, ResponseCode
from rocketq.errors import ProtocolError
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.controller_headers import NotifyBrokerRoleChangedRequestHeader
from rocketq.remoting.connection import Connection
from rocketq.replication.controller.client import MasterInfo
from rocketq.replication.controller.epoch import epoch_cache_body
from rocketq.replication.controller.manager import decode_sync_state_set
from rocketq.replication.replicas import ReplicasManager


class ReplicasProcessors:
    def __init__(self, ctx: BrokerContext, replicas: ReplicasManager) -> None:
        self._ctx = ctx
        self._replicas = replicas

    def register(self) -> None:
        d = self._ctx.gate
        d.register(ControllerRequestCode.NOTIFY_BROKER_ROLE_CHANGED, self.role_changed)
        d.register(ControllerRequestCode.GET_BROKER_EPOCH_CACHE, self.epoch_cache)

    def role_changed(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        h = NotifyBrokerRoleChangedRequestHeader.from_ext(cmd.ext_fields)
        ids: frozenset[int] = frozenset()
        set_epoch = h.sync_state_set_epoch
        if cmd.body:
            try:
                ids, set_epoch = decode_sync_state_set(bytes(cmd.body))
            except ValueError as exc:
                raise ProtocolError(f"bad NOTIFY_BROKER_ROLE_CHANGED body: {exc}") from None
        self._replicas.on_notify(MasterInfo(h.master_broker_id, h.master_address, h.master_epoch, ids, set_epoch))
        return None if cmd.is_oneway else cmd.response(ResponseCode.SUCCESS)

    def epoch_cache(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        r, cfg = self._replicas, self._ctx.config
        body = epoch_cache_body(cfg.brokerClusterName, cfg.brokerName, r.broker_id or 0, r.epochs,
                                self._ctx.store.get_max_phy_offset())  # fmt: skip
        return cmd.response(ResponseCode.SUCCESS, body=body)
