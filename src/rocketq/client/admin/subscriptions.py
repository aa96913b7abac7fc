"""Subscription groups and their offsets (mqadmin updateSubGroup, deleteSubGroup, getConsumerConfig,
cloneGroupOffset, skipAccumulatedMessage, allocateMQ)."""

from __future__ import annotations

import logging
from typing import Any

from rocketq.client.admin._base import mq_table
from rocketq.client.admin._types import SubscriptionGroupInfo
from rocketq.client.admin.groups import GroupAdmin
from rocketq.client.allocate import allocate_averagely
from rocketq.client.lowlevel import to_subscribe_info
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError, ClientError
from rocketq.protocol.bodies import MessageQueue, dumps
from rocketq.protocol.route import MASTER_ID
from rocketq.protocol.topics import retry_topic

log = logging.getLogger("rocketq.client.admin")


class SubscriptionAdmin(GroupAdmin):
    async def _all_masters(self, cluster: str | None, broker_addr: str | None) -> list[str]:
        """One broker, the masters of ``cluster``, or every master of every cluster (mqadmin's default when
        neither ``-b`` nor ``-c`` is given for the read-only and clean-up commands)."""
        if broker_addr or cluster:
            return await self._targets(cluster, broker_addr)
        addrs = [b.addr for b in await self.brokers() if b.broker_id == MASTER_ID]
        if not addrs:
            raise ClientError("no master broker is registered")
        return addrs

    async def subscription_groups(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[SubscriptionGroupInfo]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG of one broker or the masters: every group's config, per broker."""
        out: list[SubscriptionGroupInfo] = []
        for addr in await self._all_masters(cluster, broker_addr):
            obj = await self._api.broker_json(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, None, self.timeout)
            table = (obj or {}).get("subscriptionGroupTable") or {}
            for name in sorted(table):
                if isinstance(table[name], dict):
                    out.append(SubscriptionGroupInfo(addr, dict(table[name])))
        return out

    async def subscription_group_config(self, group: str, broker_addr: str) -> dict[str, Any] | None:
        """A group's SubscriptionGroupConfig on one broker (mqadmin getConsumerConfig reads it so); None: none."""
        for info in await self.subscription_groups(broker_addr=broker_addr):
            if info.group_name == group:
                return info.config
        return None

    async def update_subscription_group(
        self,
        group: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        consume_enable: bool = True,
        consume_from_min_enable: bool = True,
        consume_broadcast_enable: bool = True,
        retry_queue_nums: int = 1,
        retry_max_times: int = 16,
        broker_id: int = MASTER_ID,
        which_broker_when_consume_slowly: int = 1,
        notify_consumer_ids_changed_enable: bool = True,
        consume_message_orderly: bool | None = None,
    ) -> list[str]:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on one broker or every master of ``cluster``; returns the addresses.
        The defaults are mqadmin updateSubGroup's (it writes every field, given or not); ``consume_message_orderly``
        (RocketMQ 5: the group's 5.x consumers receive FIFO) is sent only when given."""
        if not group:
            raise ValueError("a subscription group needs a name")
        config = {
            "groupName": group, "consumeEnable": consume_enable, "consumeFromMinEnable": consume_from_min_enable,
            "consumeBroadcastEnable": consume_broadcast_enable, "retryQueueNums": retry_queue_nums,
            "retryMaxTimes": retry_max_times, "brokerId": broker_id,
            "whichBrokerWhenConsumeSlowly": which_broker_when_consume_slowly,
            "notifyConsumerIdsChangedEnable": notify_consumer_ids_changed_enable,
        }  # fmt: skip
        if consume_message_orderly is not None:
            config["consumeMessageOrderly"] = consume_message_orderly
        addrs = await self._targets(cluster, broker_addr)
        for addr in addrs:
            await self._api.call(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, self.timeout,
                                 dumps(config))  # fmt: skip
        return addrs

    async def delete_subscription_group(
        self, group: str, *, cluster: str | None = None, broker_addr: str | None = None, remove_offset: bool = False
    ) -> list[str]:
        """DELETE_SUBSCRIPTIONGROUP on one broker or every master of ``cluster`` (``remove_offset``: its consumer
        offsets too, mqadmin deleteSubGroup -r)."""
        addrs = await self._targets(cluster, broker_addr)
        ext = {"groupName": group, "removeOffset": "true" if remove_offset else "false"}
        for addr in addrs:
            await self._api.call(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, ext, self.timeout)
        return addrs

    async def clone_group_offset(
        self, src_group: str, dest_group: str, topic: str, *, offline: bool = False
    ) -> list[str]:
        """CLONE_GROUP_OFFSET on every broker of ``topic``'s route: ``dest_group`` gets ``src_group``'s offsets of
        the topic (Java's cloneGroupOffset). Returns the brokers asked."""
        route = await self.topic_route(topic)
        ext = {"srcGroup": src_group, "destGroup": dest_group, "topic": topic}
        ext["offline"] = "true" if offline else "false"
        addrs = [a for bd in route.broker_datas if (a := bd.select_broker_addr())]
        for addr in addrs:
            await self._api.call(addr, RequestCode.CLONE_GROUP_OFFSET, ext, self.timeout)
        return addrs

    async def skip_accumulation(self, group: str, topic: str, *, force: bool = True) -> dict[MessageQueue, int]:
        """Move the group's offsets of ``topic`` to the end of every queue (mqadmin skipAccumulatedMessage: a
        reset to timestamp -1)."""
        return await self.reset_offset_by_timestamp(group, topic, -1, force=force)

    async def topics_of_group(self, group: str) -> list[str]:
        """The topics a group has consumer offsets on. Java 5's QUERY_TOPICS_BY_CONSUMER where a broker has it;
        otherwise (a 4.9 broker, rocketq) the topics of GET_CONSUME_STATS, as Java 4.9's tools derive them."""
        topics: set[str] = set()
        for addr in await self._group_brokers(group, None):
            try:
                obj = await self._api.broker_json(addr, RequestCode.QUERY_TOPICS_BY_CONSUMER, {"group": group},
                                                  self.timeout)  # fmt: skip
                topics.update(str(t) for t in (obj or {}).get("topicList") or [])
                continue
            except BrokerError as exc:
                if exc.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                    raise
            try:
                obj = await self._api.broker_json(addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": group},
                                                  self.timeout)  # fmt: skip
            except BrokerError as exc:
                log.debug("admin.topics_of_group %s on %s: %s", group, addr, exc)
                continue
            topics.update(mq.topic for mq, _ in mq_table((obj or {}).get("offsetTable")))
        topics.discard(retry_topic(group))
        return sorted(topics)

    async def allocate_mq(self, topic: str, client_ids: list[str]) -> dict[str, list[MessageQueue]]:
        """mqadmin allocateMQ: how AllocateMessageQueueAveragely shares ``topic``'s readable queues among
        ``client_ids`` (computed here; nothing is asked of a consumer)."""
        if not client_ids:
            raise ValueError("allocateMQ needs at least one client id")
        mq_all = sorted(to_subscribe_info(topic, await self.topic_route(topic)))
        if not mq_all:
            raise ClientError(f"topic {topic!r} has no readable queue")
        return {cid: allocate_averagely("aa", cid, mq_all, client_ids) for cid in client_ids}
