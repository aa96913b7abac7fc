"""Consumer-side operations, transport-neutral: offsets, heartbeats and client registration, queue locks.

Java spreads these over ConsumerManageProcessor, ClientManageProcessor and AdminBrokerProcessor's lock
handlers; the rules live here so the remoting processors (and a later gRPC front end) only translate.
"""

from __future__ import annotations

import os

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.topic_manager import RETRY_PREFIX
from rocketq.broker.message_filter import FilterBuildError, build_filter
from rocketq.broker.messaging.bounds import commit_error, group_error
from rocketq.codes import ResponseCode
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE, HeartbeatData, MessageQueue, SubscriptionData
from rocketq.remoting.connection import Connection


def _ram_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30


class ConsumerService:
    def __init__(self, ctx: BrokerContext) -> None:
        self._ctx = ctx
        self._ram = _ram_bytes()

    # ---------------------------------------------------------------------------------------- offsets

    def query_offset(self, group: str, topic: str, queue_id: int) -> int | None:
        """The group's committed offset; with none, 0 while the queue is young, else None (QUERY_NOT_FOUND).

        RocketMQ's rule for a group with no offset: start at 0 while the queue's first message is still in
        memory, otherwise let the client apply consumeFromWhere.
        """
        ctx = self._ctx
        offset = ctx.offsets.query(group, topic, queue_id)
        if offset >= 0:
            return offset
        if ctx.store.get_min_offset_in_queue(topic, queue_id) <= 0 and not self.is_offset_in_disk():
            return 0
        return None

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> str | None:
        """Store the group's offset; the reason when refused (Java stores whatever comes: rocketq keeps only
        what a consumer could have read, see docs/reliability.md)."""
        error = commit_error(self._ctx.config.maxTopicQueueNums, group, topic, queue_id, offset)
        if error is None:
            self._ctx.offsets.commit(group, topic, queue_id, offset)
        return error

    def is_offset_in_disk(self) -> bool:
        """Whether the oldest message has likely left the page cache (RocketMQ: > 40 % of RAM behind)."""
        store = self._ctx.store
        return store.get_max_phy_offset() - store.get_min_phy_offset() > self._ram * 0.4

    # ------------------------------------------------------------------------------------- heartbeats

    def heartbeat(self, channel: Connection, data: HeartbeatData) -> str | None:
        """Register the client's consumers (creating their retry topics) and producers; the reason when a
        consumer group's name is refused (a blank or > 255 characters: it would be stored, with a retry topic no
        TopicValidator passes), and then nothing is registered or created."""
        ctx = self._ctx
        for group in [c.group_name for c in data.consumers]:
            error = group_error("groupName", group)
            if error is not None:
                return f"{error}: {group[:64]!r}"
        for consumer in data.consumers:
            group_cfg = ctx.groups.find_or_create(consumer.group_name)
            if group_cfg is not None:
                retry_topic = RETRY_PREFIX + consumer.group_name
                if ctx.topics.get(retry_topic) is None:
                    ctx.topics.create_system_if_absent(
                        retry_topic, max(1, group_cfg.retry_queue_nums), PERM_READ | PERM_WRITE
                    )
                    ctx.registrar.kick()
            ctx.consumers.register(channel, data.client_id, consumer)
        for group in data.producer_groups:
            ctx.producers.register(channel, data.client_id, group)
        return None

    def unregister(self, client_id: str, producer_group: str | None, consumer_group: str | None) -> None:
        if producer_group:
            self._ctx.producers.unregister(producer_group, client_id)
        if consumer_group:
            self._ctx.consumers.unregister(consumer_group, client_id)

    def check_subscription(self, sub: SubscriptionData) -> tuple[int, str | None]:
        """Whether this broker can serve ``sub`` (CHECK_CLIENT_CONFIG): (code, remark)."""
        if sub.expression_type != "TAG" and not self._ctx.config.enablePropertyFilter:
            refused = f"The broker does not support consumer to filter message by {sub.expression_type}"
            return ResponseCode.SYSTEM_ERROR, refused
        try:
            build_filter(sub)
        except FilterBuildError as exc:
            return ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc)
        return ResponseCode.SUCCESS, None

    def consumer_ids(self, group: str) -> list[str] | None:
        info = self._ctx.consumers.get(group)
        if info is None or not info.channels:
            return None
        return info.client_ids()

    # ------------------------------------------------------------------------------------ queue locks

    async def lock(self, group: str, queues: list[MessageQueue], client_id: str) -> list[MessageQueue]:
        """Lock what can be locked for ``client_id``; the lock table is on disk before this returns."""
        locks = self._ctx.locks
        locked = locks.try_lock_batch(group, queues, client_id)
        await self._lock_table_written()
        return locked

    async def unlock(self, group: str, queues: list[MessageQueue], client_id: str) -> None:
        self._ctx.locks.unlock_batch(group, queues, client_id)
        await self._lock_table_written()

    async def _lock_table_written(self) -> None:
        write = self._ctx.locks.take_write()
        if write is not None:  # off the loop, but before the client hears of it
            await write
