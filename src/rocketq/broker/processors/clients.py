"""HEART_BEAT, UNREGISTER_CLIENT, CHECK_CLIENT_CONFIG, GET_CONSUMER_LIST_BY_GROUP, offsets, queue locks."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketq.broker.message_filter import FilterBuildError, build_filter
from rocketq.broker.topic_manager import RETRY_PREFIX
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.bodies import (
    PERM_READ,
    PERM_WRITE,
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

if TYPE_CHECKING:
    from rocketq.broker.controller import BrokerController

log = logging.getLogger("rocketq.broker.clients")


class ClientProcessors:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self) -> None:
        d = self.broker.dispatcher
        d.register(RequestCode.HEART_BEAT, self.heartbeat)
        d.register(RequestCode.UNREGISTER_CLIENT, self.unregister_client)
        d.register(RequestCode.CHECK_CLIENT_CONFIG, self.check_client_config)
        d.register(RequestCode.GET_CONSUMER_LIST_BY_GROUP, self.consumer_list)
        d.register(RequestCode.QUERY_CONSUMER_OFFSET, self.query_consumer_offset)
        d.register(RequestCode.UPDATE_CONSUMER_OFFSET, self.update_consumer_offset)
        d.register(RequestCode.LOCK_BATCH_MQ, self.lock_batch)
        d.register(RequestCode.UNLOCK_BATCH_MQ, self.unlock_batch)

    def heartbeat(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        data = HeartbeatData.decode(cmd.body)
        broker = self.broker
        for consumer in data.consumers:
            group_cfg = broker.groups.find_or_create(consumer.group_name)
            if group_cfg is not None:
                retry_topic = RETRY_PREFIX + consumer.group_name
                if broker.topics.get(retry_topic) is None:
                    broker.topics.create_system_if_absent(
                        retry_topic, max(1, group_cfg.retry_queue_nums), PERM_READ | PERM_WRITE
                    )
                    broker.schedule_register()
            broker.consumers.register(conn, data.client_id, consumer)
        for group in data.producer_groups:
            broker.producers.register(conn, data.client_id, group)
        return cmd.response(ResponseCode.SUCCESS)

    def unregister_client(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = UnregisterClientRequestHeader.from_ext(cmd.ext_fields)
        if h.producer_group:
            self.broker.producers.unregister(h.producer_group, h.client_id)
        if h.consumer_group:
            self.broker.consumers.unregister(h.consumer_group, h.client_id)
        return cmd.response(ResponseCode.SUCCESS)

    def check_client_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        obj = loads(cmd.body)
        sub_obj = obj.get("subscriptionData") if isinstance(obj, dict) else None
        if not sub_obj:
            return cmd.response(ResponseCode.SUCCESS)
        sub = SubscriptionData.from_json(sub_obj)
        if sub.expression_type != "TAG" and not self.broker.config.enablePropertyFilter:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR, "The broker does not support consumer to filter message by SQL92"
            )
        try:
            build_filter(sub)
        except FilterBuildError as exc:
            return cmd.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc))
        return cmd.response(ResponseCode.SUCCESS)

    def consumer_list(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = GetConsumerListByGroupRequestHeader.from_ext(cmd.ext_fields)
        info = self.broker.consumers.get(h.consumer_group)
        if info is None or not info.channels:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {h.consumer_group}")
        return cmd.response(ResponseCode.SUCCESS, body=encode_consumer_id_list(info.client_ids()))

    def query_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = QueryConsumerOffsetRequestHeader.from_ext(cmd.ext_fields)
        offset = self.broker.offsets.query(h.consumer_group, h.topic, h.queue_id)
        if offset >= 0:
            return cmd.response(ResponseCode.SUCCESS, ext_fields=OffsetResponseHeader(offset=offset).to_ext())
        # RocketMQ's rule for a group with no offset: start at 0 while the queue is young (its first
        # message still in memory), otherwise QUERY_NOT_FOUND so the client applies consumeFromWhere.
        store = self.broker.store
        min_offset = store.get_min_offset_in_queue(h.topic, h.queue_id)
        if min_offset <= 0 and not self.broker.is_offset_in_disk(h.topic, h.queue_id, 0):
            return cmd.response(ResponseCode.SUCCESS, ext_fields=OffsetResponseHeader(offset=0).to_ext())
        return cmd.response(
            ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        )

    def update_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = UpdateConsumerOffsetRequestHeader.from_ext(cmd.ext_fields)
        self.broker.offsets.commit(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
        return cmd.response(ResponseCode.SUCCESS)

    async def lock_batch(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        body = LockBatchBody.decode(cmd.body)
        locks = self.broker.locks
        locked = locks.try_lock_batch(body.consumer_group, body.mq_set, body.client_id)
        write = locks.take_write()
        if write is not None:  # the lock table is on disk (off the loop) before the client hears of it
            await write
        return cmd.response(ResponseCode.SUCCESS, body=encode_lock_ok(locked))

    async def unlock_batch(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        body = LockBatchBody.decode(cmd.body)
        locks = self.broker.locks
        locks.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        write = locks.take_write()
        if write is not None:
            await write
        return cmd.response(ResponseCode.SUCCESS)
