"""A broker's (or an admin's) side of the controller codes: typed calls over a ``RemotingClient``.

The broker in controller mode (its role manager is the replication lane's) uses these; every call answers a
typed value or raises ``ControllerError`` with the controller's code and remark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rocketq.codes import ControllerRequestCode as Code
from rocketq.codes import ControllerResponseCode, ResponseCode
from rocketq.errors import BrokerError, ProtocolError
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.controller_headers import (
    AlterSyncStateSetRequestHeader,
    AlterSyncStateSetResponseHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    ElectMasterRequestHeader,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
    MasterInfoHeader,
    RegisterBrokerToControllerRequestHeader,
)
from rocketq.protocol.fastjson import loads_lenient
from rocketq.protocol.headers import Header
from rocketq.remoting.client import RemotingClient
from rocketq.replication.controller.manager import decode_sync_state_set, sync_state_set_body


class ControllerError(BrokerError):
    """A controller answer other than SUCCESS."""

    def __init__(self, remark: str | None = None, code: int | None = None) -> None:
        super().__init__(remark, code)
        try:
            name = ControllerResponseCode(self.code).name
        except ValueError:
            name = ResponseCode(self.code).name if self.code in ResponseCode._value2member_map_ else "UNKNOWN"
        self.args = (f"{name} ({self.code}): {self.remark}",)


@dataclass(frozen=True, slots=True)
class MasterInfo:
    """Who leads a group; ``master_id`` None: nobody (yet)."""

    master_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set: frozenset[int]
    sync_state_set_epoch: int


class ControllerClient:
    def __init__(
        self, remoting: RemotingClient, address: str, *, timeout: float = 3.0,
        sign: Callable[[RemotingCommand], RemotingCommand] | None = None,
    ) -> None:  # fmt: skip
        self.remoting = remoting
        self.address = address
        self.timeout = timeout
        #: signs each request with the caller's account (a protected name server's embedded controller needs it)
        self.sign = sign

    async def _call(self, code: int, header: Header | None = None, body: bytes = b"") -> RemotingCommand:
        cmd = RemotingCommand.request(code, header.to_ext() if header is not None else {}, body)
        if self.sign is not None:
            cmd = self.sign(cmd)
        return await self.remoting.invoke(self.address, cmd, timeout=self.timeout)

    async def _ok(self, code: int, header: Header | None = None, body: bytes = b"") -> RemotingCommand:
        resp = await self._call(code, header, body)
        if resp.code != ResponseCode.SUCCESS:
            raise ControllerError(resp.remark, resp.code)
        return resp

    async def leader_address(self) -> str | None:
        resp = await self._ok(Code.CONTROLLER_GET_METADATA_INFO)
        return GetMetaDataResponseHeader.from_ext(resp.ext_fields).controller_leader_address

    async def next_broker_id(self, cluster_name: str, broker_name: str) -> int:
        resp = await self._ok(
            Code.CONTROLLER_GET_NEXT_BROKER_ID,
            GetNextBrokerIdRequestHeader(cluster_name=cluster_name, broker_name=broker_name),
        )
        nxt = GetNextBrokerIdResponseHeader.from_ext(resp.ext_fields).next_broker_id
        if nxt is None:
            raise ProtocolError("CONTROLLER_GET_NEXT_BROKER_ID answer without nextBrokerId")
        return nxt

    async def apply_broker_id(self, cluster_name: str, broker_name: str, broker_id: int, check_code: str) -> None:
        await self._ok(
            Code.CONTROLLER_APPLY_BROKER_ID,
            ApplyBrokerIdRequestHeader(
                cluster_name=cluster_name,
                broker_name=broker_name,
                applied_broker_id=broker_id,
                register_check_code=check_code,
            ),
        )

    async def register(self, cluster_name: str, broker_name: str, broker_id: int, address: str) -> MasterInfo:
        resp = await self._ok(
            Code.CONTROLLER_REGISTER_BROKER,
            RegisterBrokerToControllerRequestHeader(
                cluster_name=cluster_name, broker_name=broker_name, broker_id=broker_id, broker_address=address
            ),
        )
        return _master_info(MasterInfoHeader.from_ext(resp.ext_fields), resp.body)

    async def heartbeat(self, header: BrokerHeartbeatRequestHeader) -> None:
        await self._ok(Code.BROKER_HEARTBEAT, header)

    async def elect(
        self, cluster_name: str, broker_name: str, broker_id: int, *, designate: bool = False
    ) -> MasterInfo:
        """Ask for an election; MASTER_STILL_EXIST is not an error here: it names the master that stays."""
        resp = await self._call(
            Code.CONTROLLER_ELECT_MASTER,
            ElectMasterRequestHeader(
                cluster_name=cluster_name, broker_name=broker_name, broker_id=broker_id, designate_elect=designate
            ),
        )
        if resp.code not in (ResponseCode.SUCCESS, ControllerResponseCode.CONTROLLER_MASTER_STILL_EXIST):
            raise ControllerError(resp.remark, resp.code)
        h = MasterInfoHeader.from_ext(resp.ext_fields)
        ids: frozenset[int] = frozenset()
        if resp.code == ResponseCode.SUCCESS and resp.body:
            try:
                ids = frozenset(int(i) for i in loads_lenient(resp.body).get("syncStateSet") or [])
            except (ProtocolError, ValueError, TypeError, AttributeError) as exc:
                raise ProtocolError(f"bad CONTROLLER_ELECT_MASTER body: {exc}") from None
        return MasterInfo(h.master_broker_id, h.master_address, h.master_epoch or 0, ids, h.sync_state_set_epoch or 0)

    async def replica_info(self, broker_name: str) -> MasterInfo:
        resp = await self._ok(Code.CONTROLLER_GET_REPLICA_INFO, GetReplicaInfoRequestHeader(broker_name=broker_name))
        h = GetReplicaInfoResponseHeader.from_ext(resp.ext_fields)
        ids, set_epoch = _sync_state(resp.body)
        return MasterInfo(h.master_broker_id, h.master_address, h.master_epoch or 0, ids, set_epoch)

    async def alter_sync_state_set(
        self, broker_name: str, master_id: int, master_epoch: int, ids: frozenset[int], set_epoch: int
    ) -> int:
        """Propose a new in-sync set (the master only); returns the new set epoch."""
        resp = await self._ok(
            Code.CONTROLLER_ALTER_SYNC_STATE_SET,
            AlterSyncStateSetRequestHeader(
                broker_name=broker_name, master_broker_id=master_id, master_epoch=master_epoch
            ),
            sync_state_set_body(ids, set_epoch),
        )
        return AlterSyncStateSetResponseHeader.from_ext(resp.ext_fields).new_sync_state_set_epoch


def _sync_state(body: bytes | bytearray | memoryview) -> tuple[frozenset[int], int]:
    if not body:
        return frozenset(), 0
    try:
        return decode_sync_state_set(bytes(body))
    except ValueError as exc:
        raise ProtocolError(str(exc)) from None


def _master_info(h: MasterInfoHeader, body: bytes | bytearray | memoryview) -> MasterInfo:
    ids, set_epoch = _sync_state(body)
    return MasterInfo(h.master_broker_id, h.master_address, h.master_epoch or 0, ids, set_epoch)
