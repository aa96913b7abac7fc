"""The controller's remoting front: header in, ``Controller`` call, answer out. Nothing else lives here.

A malformed header or body is the gate's client mistake (SYSTEM_ERROR naming the problem, one log line).
A state that cannot be persisted is answered SYSTEM_ERROR and nothing is applied.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rocketq.codes import ControllerRequestCode as Code
from rocketq.codes import ResponseCode
from rocketq.errors import ConfigError, ProtocolError
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.controller_headers import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    CleanBrokerDataRequestHeader,
    ElectMasterRequestHeader,
    GetNextBrokerIdRequestHeader,
    GetReplicaInfoRequestHeader,
    RegisterBrokerToControllerRequestHeader,
)
from rocketq.protocol.fastjson import loads_lenient
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import Processor, RemotingDispatcher
from rocketq.replication.controller.manager import Decision, decode_sync_state_set
from rocketq.replication.controller.service import Controller
from rocketq.replication.controller.store import MetadataStoreError


class ControllerProcessor:
    def __init__(self, controller: Controller, *, after_request: Callable[[], None] | None = None) -> None:
        self.controller = controller
        #: run after every answered request (the runtime delivers queued role changes there)
        self.after_request = after_request

    def handlers(self) -> dict[int, Processor]:
        return {
            Code.BROKER_HEARTBEAT: self.heartbeat,
            Code.CONTROLLER_ALTER_SYNC_STATE_SET: self.alter_sync_state_set,
            Code.CONTROLLER_ELECT_MASTER: self.elect_master,
            Code.CONTROLLER_REGISTER_BROKER: self.register_broker,
            Code.CONTROLLER_GET_REPLICA_INFO: self.get_replica_info,
            Code.CONTROLLER_GET_METADATA_INFO: self.get_metadata_info,
            Code.CONTROLLER_GET_SYNC_STATE_DATA: self.get_sync_state_data,
            Code.CLEAN_BROKER_DATA: self.clean_broker_data,
            Code.GET_CONTROLLER_CONFIG: self.get_controller_config,
            Code.UPDATE_CONTROLLER_CONFIG: self.update_controller_config,
            Code.CONTROLLER_GET_NEXT_BROKER_ID: self.get_next_broker_id,
            Code.CONTROLLER_APPLY_BROKER_ID: self.apply_broker_id,
        }

    def register(self, dispatcher: RemotingDispatcher) -> None:
        for code, handler in self.handlers().items():
            dispatcher.register(code, handler)

    def _answer(self, req: RemotingCommand, d: Decision) -> RemotingCommand:
        if self.after_request is not None:
            self.after_request()
        ext = d.header.to_ext() if d.header is not None else {}
        return req.response(d.code, d.remark, ext, d.body)

    async def _change(self, req: RemotingCommand, change: Awaitable[Decision]) -> RemotingCommand:
        try:
            d = await change
        except MetadataStoreError as exc:
            return req.response(ResponseCode.SYSTEM_ERROR, f"controller state not persisted: {exc}")
        return self._answer(req, d)

    # -------------------------------------------------------------------------------------------- codes

    def heartbeat(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = BrokerHeartbeatRequestHeader.from_ext(req.ext_fields)
        return self._answer(req, self.controller.heartbeat(h, conn))

    async def alter_sync_state_set(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = AlterSyncStateSetRequestHeader.from_ext(req.ext_fields)
        try:
            ids, epoch = decode_sync_state_set(bytes(req.body))
        except ValueError as exc:
            raise ProtocolError(str(exc)) from None
        return await self._change(req, self.controller.alter_sync_state_set(h, ids, epoch))

    async def elect_master(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = ElectMasterRequestHeader.from_ext(req.ext_fields)
        return await self._change(req, self.controller.elect_master(h))

    async def register_broker(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = RegisterBrokerToControllerRequestHeader.from_ext(req.ext_fields)
        return await self._change(req, self.controller.register_broker(h))

    def get_replica_info(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = GetReplicaInfoRequestHeader.from_ext(req.ext_fields)
        return self._answer(req, self.controller.replica_info(h.broker_name))

    def get_metadata_info(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return self._answer(req, self.controller.metadata())

    def get_sync_state_data(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        names = loads_lenient(bytes(req.body) or b"[]")  # ProtocolError: the gate's client mistake
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ProtocolError("body is not a JSON list of broker names")
        return self._answer(req, self.controller.sync_state_data(names))

    async def clean_broker_data(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = CleanBrokerDataRequestHeader.from_ext(req.ext_fields)
        return await self._change(req, self.controller.clean_broker_data(h))

    def get_next_broker_id(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = GetNextBrokerIdRequestHeader.from_ext(req.ext_fields)
        return self._answer(req, self.controller.next_broker_id(h))

    async def apply_broker_id(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = ApplyBrokerIdRequestHeader.from_ext(req.ext_fields)
        return await self._change(req, self.controller.apply_broker_id(h))

    def get_controller_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return req.response(ResponseCode.SUCCESS, None, {}, self.controller.config_text().encode())

    def update_controller_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        try:
            text = bytes(req.body).decode()
        except UnicodeDecodeError:
            raise ProtocolError("body is not UTF-8 properties text") from None
        props = {}
        for raw in text.splitlines():
            line = raw.strip()
            if line and line[0] not in "#!":
                key, _, value = line.partition("=")
                props[key.strip()] = value.strip()
        try:
            self.controller.update_config(props)
        except ConfigError as exc:
            return req.response(ResponseCode.SYSTEM_ERROR, str(exc))
        return req.response(ResponseCode.SUCCESS)
