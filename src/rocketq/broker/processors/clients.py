"""HEART_BEAT, UNREGISTER_CLIENT, CHECK_CLIENT_CONFIG, GET_CONSUMER_LIST_BY_GROUP, offsets, queue locks.

The rules are ``rocketq.broker.messaging.consumers.ConsumerService``'s; this module only translates.
"""

from __future__ import annotations

import logging

from rocketq.broker.context import BrokerContext
from rocketq.broker.messaging.consumers import ConsumerService
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.bodies import (
    HeartbeatData,
    LockBatchBody,
    SubscriptionData,
    encode_consumer_id_list,
    encode_lock_ok,
    loads,
)
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    GetConsumerListByGroupRequestHeader,
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.remoting.connection import Connection

log = logging.getLogger("rocketq.broker.clients")


class ClientProcessors:
    """The remoting front of ``ConsumerService``: header or body in, answer out."""

    def __init__(self, ctx: BrokerContext, service: ConsumerService) -> None:
        self._gate = ctx.gate
        self._service = service

    def register(self) -> None:
        d = self._gate
        d.register(RequestCode.HEART_BEAT, self.heartbeat)
        d.register(RequestCode.UNREGISTER_CLIENT, self.unregister_client)
        d.register(RequestCode.CHECK_CLIENT_CONFIG, self.check_client_config)
        d.register(RequestCode.GET_CONSUMER_LIST_BY_GROUP, self.consumer_list)
        d.register(RequestCode.QUERY_CONSUMER_OFFSET, self.query_consumer_offset)
        d.register(RequestCode.UPDATE_CONSUMER_OFFSET, self.update_consumer_offset)
        d.register(RequestCode.LOCK_BATCH_MQ, self.lock_batch)
        d.register(RequestCode.UNLOCK_BATCH_MQ, self.unlock_batch)

    def heartbeat(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        error = self._service.heartbeat(conn, HeartbeatData.decode(cmd.body))
        if error is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, error)
        return cmd.response(ResponseCode.SUCCESS)

    def unregister_client(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = UnregisterClientRequestHeader.from_ext(cmd.ext_fields)
        self._service.unregister(h.client_id, h.producer_group, h.consumer_group)
        return cmd.response(ResponseCode.SUCCESS)

    def check_client_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        obj = loads(cmd.body)
        sub_obj = obj.get("subscriptionData") if isinstance(obj, dict) else None
        if not sub_obj:
            return cmd.response(ResponseCode.SUCCESS)
        code, remark = self._service.check_subscription(SubscriptionData.from_json(sub_obj))
        return cmd.response(code, remark)

    def consumer_list(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = GetConsumerListByGroupRequestHeader.from_ext(cmd.ext_fields)
        ids = self._service.consumer_ids(h.consumer_group)
        if ids is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {h.consumer_group}")
        return cmd.response(ResponseCode.SUCCESS, body=encode_consumer_id_list(ids))

    def query_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = QueryConsumerOffsetRequestHeader.from_ext(cmd.ext_fields)
        offset = self._service.query_offset(h.consumer_group, h.topic, h.queue_id)
        if offset is not None:
            return cmd.response(ResponseCode.SUCCESS, ext_fields=OffsetResponseHeader(offset=offset).to_ext())
        return cmd.response(
            ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        )

    def update_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = UpdateConsumerOffsetRequestHeader.from_ext(cmd.ext_fields)
        error = self._service.commit_offset(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
        if error is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, error)
        return cmd.response(ResponseCode.SUCCESS)

    async def lock_batch(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        body = LockBatchBody.decode(cmd.body)
        locked = await self._service.lock(body.consumer_group, body.mq_set, body.client_id)
        return cmd.response(ResponseCode.SUCCESS, body=encode_lock_ok(locked))

    async def unlock_batch(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        body = LockBatchBody.decode(cmd.body)
        await self._service.unlock(body.consumer_group, body.mq_set, body.client_id)
        return cmd.response(ResponseCode.SUCCESS)
