"""Admin requests: topics, subscription groups, stats, runtime info, connections, broker config."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

import rocketq
from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.broker.messaging.admin import QUERY_CONSUME_QUEUE_MAX_COUNT, AdminService, QueueOffsets
from rocketq.broker.messaging.bounds import GROUP_INT_FIELDS, check_body_ints
from rocketq.broker.messaging.pacing import Pacer
from rocketq.broker.messaging.runtime_config import RuntimeConfigService
from rocketq.codes import VERSION_V3_1_8, RequestCode, ResponseCode
from rocketq.common.properties import parse_properties
from rocketq.errors import ProtocolError, RemotingError, RemotingTimeoutError
from rocketq.protocol.bodies import TopicConfig, dumps, encode_kv_table, loads
from rocketq.protocol.command import Buffer, RemotingCommand
from rocketq.protocol.headers import (
    CloneGroupOffsetRequestHeader,
    ConsumerCallRequestHeader,
    ConsumerGroupRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    QueryConsumeQueueRequestHeader,
    ResetOffsetRequestHeader,
    TopicRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rocketq.remoting.connection import Connection

log = logging.getLogger(__name__)


def _mq_key(topic: str, broker_name: str, queue_id: int) -> dict[str, Any]:
    return {"brokerName": broker_name, "queueId": queue_id, "topic": topic}


class AdminProcessors:
    def __init__(
        self,
        ctx: BrokerContext,
        *,
        send_queue_size: Callable[[], int],
        held_pulls: Callable[[], int],
        send_queue_head_wait_ms: Callable[[], int] = lambda: 0,
        delay_offsets: Callable[[], Any] | None = None,
    ) -> None:
        self._ctx = ctx
        self._admin = AdminService(ctx)
        self._config = RuntimeConfigService(ctx)
        self._send_queue_size = send_queue_size
        self._held_pulls = held_pulls
        self._delay_offsets = delay_offsets
        self._send_queue_head_wait_ms = send_queue_head_wait_ms

    def register(self) -> None:
        d = self._ctx.gate
        d.register(RequestCode.UPDATE_AND_CREATE_TOPIC, self.create_topic)
        d.register(RequestCode.DELETE_TOPIC_IN_BROKER, self.delete_topic)
        d.register(RequestCode.GET_ALL_TOPIC_CONFIG, self.all_topic_config)
        d.register(RequestCode.GET_TOPIC_STATS_INFO, self.topic_stats)
        d.register(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, self.create_group)
        d.register(RequestCode.DELETE_SUBSCRIPTIONGROUP, self.delete_group)
        d.register(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, self.all_groups)
        d.register(RequestCode.GET_CONSUME_STATS, self.consume_stats)
        d.register(RequestCode.GET_BROKER_RUNTIME_INFO, self.runtime_info)
        d.register(RequestCode.GET_CONSUMER_CONNECTION_LIST, self.consumer_connections)
        d.register(RequestCode.GET_PRODUCER_CONNECTION_LIST, self.producer_connections)
        d.register(RequestCode.GET_ALL_PRODUCER_INFO, self.all_producers)
        d.register(RequestCode.GET_BROKER_CONFIG, self.broker_config)
        d.register(RequestCode.UPDATE_BROKER_CONFIG, self.update_broker_config)
        d.register(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, self.consumed_by_who)
        d.register(RequestCode.GET_ALL_CONSUMER_OFFSET, self.all_consumer_offsets)
        d.register(RequestCode.GET_ALL_DELAY_OFFSET, self.all_delay_offsets)
        d.register(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.reset_offset)
        d.register(RequestCode.CLONE_GROUP_OFFSET, self.clone_group_offset)
        d.register(RequestCode.VIEW_BROKER_STATS_DATA, self.view_stats)
        d.register(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, self.clean_expired_consume_queues)
        d.register(RequestCode.CLEAN_UNUSED_TOPIC, self.clean_unused_topics)
        d.register(RequestCode.DELETE_EXPIRED_COMMITLOG, self.delete_expired_commit_log)
        d.register(RequestCode.GET_BROKER_CONSUME_STATS, self.broker_consume_stats)
        d.register(RequestCode.QUERY_CONSUME_QUEUE, self.query_consume_queue)
        d.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self.consumer_running_info)
        d.register(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER, self.system_topics)
        d.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self.consume_message_directly)

    async def create_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = CreateTopicRequestHeader.from_ext(cmd.ext_fields)
        tc = TopicConfig(
            h.topic, h.read_queue_nums, h.write_queue_nums, h.perm, h.topic_filter_type, h.topic_sys_flag or 0,
            h.order,
        )  # fmt: skip
        code, remark = await self._admin.create_topic(tc)
        return cmd.response(code, remark)

    def delete_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        code, remark = self._admin.delete_topic(TopicRequestHeader.from_ext(cmd.ext_fields).topic)
        return cmd.response(code, remark)

    def all_topic_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, body=dumps(self._ctx.topics.wrapper_json()))

    async def topic_stats(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicRequestHeader.from_ext(cmd.ext_fields)
        pacer = Pacer()
        queues = await self._admin.topic_offsets(h.topic, pacer)
        if queues is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist")
        name = self._ctx.config.brokerName
        # TopicStatsTable uses MessageQueue objects as map keys (a fastjson quirk): written in that form.
        rows = (
            (_mq_key(h.topic, name, q.queue_id), {"minOffset": q.min_offset, "maxOffset": q.max_offset,
                                                  "lastUpdateTimestamp": q.last_timestamp})
            for q in queues
        )  # fmt: skip
        return cmd.response(ResponseCode.SUCCESS, body=await _object_key_table("offsetTable", rows, pacer))

    def clean_expired_consume_queues(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        gone = self._admin.clean_expired_consume_queues()
        log.info("admin.clean_expired_cq queues=%s remote=%s", gone, conn.remote)
        return cmd.response(ResponseCode.SUCCESS)

    def clean_unused_topics(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        gone = self._admin.clean_unused_topics()
        log.info("admin.clean_unused_topics topics=%s remote=%s", gone, conn.remote)
        return cmd.response(ResponseCode.SUCCESS)

    def system_topics(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """GET_SYSTEM_TOPIC_LIST_FROM_BROKER: TopicList of the broker's own topics (mqadmin exportMetadata)."""
        return cmd.response(ResponseCode.SUCCESS, body=dumps({"topicList": self._ctx.topics.system_topics()}))

    def delete_expired_commit_log(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        self._admin.delete_expired_commit_log()
        log.info("admin.delete_expired_commit_log remote=%s", conn.remote)
        return cmd.response(ResponseCode.SUCCESS)

    def create_group(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        obj = loads(cmd.body)
        if not isinstance(obj, dict) or not obj.get("groupName") or not isinstance(obj["groupName"], str):
            return cmd.response(ResponseCode.SYSTEM_ERROR, "SubscriptionGroupConfig body without groupName")
        check_body_ints(obj, GROUP_INT_FIELDS, "SubscriptionGroupConfig")
        try:
            group = SubscriptionGroupConfig.from_json(obj)
        except (TypeError, ValueError) as exc:  # only the conversions of this one decode: a field of a wrong type
            raise ProtocolError(f"bad SubscriptionGroupConfig: {exc}") from exc
        code, remark = self._admin.update_group(group)
        return cmd.response(code, remark)

    def delete_group(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = DeleteSubscriptionGroupRequestHeader.from_ext(cmd.ext_fields)
        code, remark = self._admin.delete_group(h.group_name, h.remove_offset)
        return cmd.response(code, remark)

    def all_groups(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, body=dumps(self._ctx.groups.to_json()))

    def clone_group_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = CloneGroupOffsetRequestHeader.from_ext(cmd.ext_fields)
        cloned = self._admin.clone_offsets(h.src_group, h.dest_group, h.topic or None, h.offline)
        log.info("admin.clone_group_offset src=%s dest=%s topics=%s remote=%s", h.src_group, h.dest_group, cloned,
                 conn.remote)  # fmt: skip
        return cmd.response(ResponseCode.SUCCESS)

    async def consume_stats(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = GetConsumeStatsRequestHeader.from_ext(cmd.ext_fields)
        pacer = Pacer()
        by_topic = await self._admin.consume_offsets(h.consumer_group, h.topic or None, pacer=pacer)
        tps = self._admin.consume_tps(h.consumer_group, h.topic or None)
        return cmd.response(ResponseCode.SUCCESS, body=await self._consume_stats_body(by_topic, tps, pacer))

    async def broker_consume_stats(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """GET_BROKER_CONSUME_STATS: ConsumeStatsList, one ConsumeStats per group and topic (mqadmin
        brokerConsumeStats)."""
        h = GetConsumeStatsInBrokerHeader.from_ext(cmd.ext_fields)
        total_diff = 0
        groups = []
        pacer = Pacer()
        for group, by_topic in (await self._admin.broker_consume_offsets(h.is_order, pacer)).items():
            stats = []
            for topic, queues in by_topic.items():
                total_diff += sum(q.max_offset - q.consumer_offset for q in queues)
                tps = self._admin.consume_tps(group, topic)
                stats.append((await self._consume_stats_body({topic: queues}, tps, pacer)).decode())
            groups.append(f"{{{dumps(group).decode()}:[{','.join(stats)}]}}")
        addr = dumps(self._ctx.config.broker_addr).decode()
        body = f'{{"brokerAddr":{addr},"consumeStatsList":[{",".join(groups)}],"totalDiff":{total_diff}}}'
        return cmd.response(ResponseCode.SUCCESS, body=body.encode())

    async def _consume_stats_body(
        self, by_topic: dict[str, list[QueueOffsets]], tps: float, pacer: Pacer
    ) -> bytes:
        name = self._ctx.config.brokerName
        rows = (
            (_mq_key(topic, name, q.queue_id), {"brokerOffset": q.max_offset, "consumerOffset": q.consumer_offset,
                                                "lastTimestamp": q.last_timestamp})
            for topic, queues in by_topic.items()
            for q in queues
        )  # fmt: skip
        return await _object_key_table("offsetTable", rows, pacer, extra={"consumeTps": tps})

    def query_consume_queue(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """QUERY_CONSUME_QUEUE (mqadmin queryCq): a queue's bounds and raw units; with a group, its subscription."""
        h = QueryConsumeQueueRequestHeader.from_ext(cmd.ext_fields)
        # Java answers up to the end of the queue's file (300,000 units by default); rocketq at most this many
        count = min(h.count, QUERY_CONSUME_QUEUE_MAX_COUNT)
        found = self._ctx.store.consume_queue_units(h.topic, h.queue_id, h.index, count)
        if found is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"{h.queue_id}@{h.topic} is not exist!")
        min_index, max_index, units = found
        body: dict[str, Any] = {"maxQueueIndex": max_index, "minQueueIndex": min_index}
        if h.consumer_group is not None:
            sub = self._ctx.consumers.find_subscription(h.consumer_group, h.topic)
            if sub is None:
                body["filterData"] = f"{h.consumer_group}@{h.topic} is not online!"
            else:
                body["subscriptionData"] = sub.to_json()
                body["filterData"] = "null"  # Java: its filter data of a tag subscription, printed as JSON
        if units is None:
            remark = f"Index {h.index} of {h.queue_id}@{h.topic} is not exist!"
            return cmd.response(ResponseCode.SUCCESS, remark)  # Java answers SUCCESS with no body
        body["queueData"] = [{"eval": False, "physicOffset": p, "physicSize": n, "tagsCode": t} for p, n, t in units]
        return cmd.response(ResponseCode.SUCCESS, body=dumps(dict(sorted(body.items()))))

    def view_stats(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """VIEW_BROKER_STATS_DATA: BrokerStatsData of one stats item (mqadmin statsAll reads TOPIC_PUT_NUMS by
        topic and GROUP_GET_NUMS by ``topic@group``)."""
        h = ViewBrokerStatsDataRequestHeader.from_ext(cmd.ext_fields)
        stats = self._ctx.metrics.view_stats(h.stats_name, h.stats_key)
        if stats is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"The stats <{h.stats_name}> <{h.stats_key}> not exist")
        return cmd.response(ResponseCode.SUCCESS, body=dumps(stats.to_json()))

    def runtime_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """Java's prepareRuntimeInfo keys (mqadmin brokerStatus prints them all; clusterList reads the TPS,
        queue sizes and head waits, earliest message time and disk ratio). The store adds its own keys, putTps
        and the other TPS among them (Java's three windows: 10 s, 1 min, 10 min)."""
        broker = self._ctx
        metrics = broker.metrics
        table = {
            "brokerVersionDesc": f"rocketq {rocketq.__version__} (V4_9_8 protocol)",
            "brokerVersion": "409",
            "bootTimestamp": str(broker.boot_timestamp),
            "msgPutTotalYesterdayMorning": str(metrics.put_total_yesterday_morning),
            "msgPutTotalTodayMorning": str(metrics.put_total_today_morning),
            "msgPutTotalTodayNow": str(metrics.put_total),
            "msgGetTotalYesterdayMorning": str(metrics.get_total_yesterday_morning),
            "msgGetTotalTodayMorning": str(metrics.get_total_today_morning),
            "msgGetTotalTodayNow": str(metrics.get_total),
            "sendThreadPoolQueueSize": str(self._send_queue_size()),
            "sendThreadPoolQueueCapacity": str(broker.config.sendQueueCapacity),
            "sendThreadPoolQueueHeadWaitTimeMills": str(self._send_queue_head_wait_ms()),
            # pulls are served as they arrive: there is no pull queue to wait in
            "pullThreadPoolQueueSize": "0",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "startAcceptSendRequestTimeStamp": "0",
            "heldPullRequests": str(self._held_pulls()),
            "brokerName": broker.config.brokerName,
            "brokerRole": broker.role.role.value,
            "flushDiskType": broker.config.flushDiskType,
            "aclEnable": "true" if broker.config.aclEnable else "false",  # rocketq: whether requests are checked
        }
        for k, v in broker.store.runtime_info().items():
            table.setdefault(k, str(v))
        return cmd.response(ResponseCode.SUCCESS, body=encode_kv_table(table))

    def consumer_connections(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = ConsumerGroupRequestHeader.from_ext(cmd.ext_fields)
        info = self._ctx.consumers.get(h.consumer_group)
        if info is None or not info.channels:
            return cmd.response(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{h.consumer_group}] not online")
        body = {
            "connectionSet": [
                {"clientAddr": ch.conn.remote, "clientId": ch.client_id, "language": ch.language, "version": ch.version}
                for ch in info.channels.values()
            ],
            "consumeFromWhere": info.consume_from_where,
            "consumeType": info.consume_type,
            "messageModel": info.message_model,
            "subscriptionTable": {t: s.to_json() for t, s in info.subscriptions.items()},
        }
        return cmd.response(ResponseCode.SUCCESS, body=dumps(body))

    def producer_connections(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        group = cmd.ext_fields.get("producerGroup", "")
        channels = self._ctx.producers.groups.get(group)
        if channels is None:
            # Java's answer (mqadmin prints it); an empty connection set would read as "online, no clients".
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        body = {
            "connectionSet": [
                {"clientAddr": ch.conn.remote, "clientId": ch.client_id, "language": ch.language, "version": ch.version}
                for ch in channels.values()
            ]
        }
        return cmd.response(ResponseCode.SUCCESS, body=dumps(body))

    def all_producers(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """GET_ALL_PRODUCER_INFO (mqadmin producer, rocketmq-exporter): ProducerTableInfo, every producer group
        with its clients. ``remoteIP`` as Java writes it (a SocketAddress's toString: ``/ip:port``), the last
        heartbeat in epoch ms."""
        producers = self._ctx.producers
        now_ms, now = time.time() * 1000, producers.clock()
        data = {
            group: [{"clientId": ch.client_id, "language": ch.language, "remoteIP": f"/{ch.conn.remote}",
                     "version": ch.version, "lastUpdateTimestamp": int(now_ms - (now - ch.last_update) * 1000)}
                    for ch in channels.values()]
            for group, channels in producers.groups.items()
            if channels
        }  # fmt: skip
        return cmd.response(ResponseCode.SUCCESS, body=dumps({"data": data}))

    def broker_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        props = self._config.properties()
        text = "\n".join(f"{k}={v}" for k, v in sorted(props.items())) + "\n"
        version = self._ctx.topics.data_version.to_json()
        return cmd.response(ResponseCode.SUCCESS, body=text.encode(), ext_fields={"version": dumps(version).decode()})

    async def update_broker_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """UPDATE_BROKER_CONFIG: a properties text; RuntimeConfigService decides what may change."""
        if not cmd.body:
            return cmd.response(ResponseCode.SUCCESS)
        try:
            text = bytes(cmd.body).decode()
        except UnicodeDecodeError as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"UnsupportedEncodingException {exc}")
        code, remark = await self._config.update(parse_properties(text))
        return cmd.response(code, remark)

    # ------------------------------------------------------------------------- calls passed to a consumer

    async def consumer_running_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """GET_CONSUMER_RUNNING_INFO (mqadmin consumerStatus): asked of the consumer itself, its answer relayed."""
        h = ConsumerCallRequestHeader.from_ext(cmd.ext_fields)
        return await self._call_consumer(cmd, h, cmd.body)

    async def consume_message_directly(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """CONSUME_MESSAGE_DIRECTLY (mqadmin queryMsgById -g -d): the stored message, found by its offset message
        id, handed to one consumer's listener; the consumer's verdict relayed."""
        h = ConsumerCallRequestHeader.from_ext(cmd.ext_fields)
        offset = _offset_of_msg_id(h.msg_id or "")
        raw = self._ctx.store.select_one_message_by_offset(offset) if offset is not None else None
        if raw is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"can not find message by the msgId, {h.msg_id}")
        return await self._call_consumer(cmd, h, raw, brokerName=self._ctx.config.brokerName)

    async def _call_consumer(
        self, cmd: RemotingCommand, h: ConsumerCallRequestHeader, body: Buffer, **extra: str
    ) -> RemotingCommand:
        """Java's callConsumer: the request, with its header fields, to the client's own connection (10 s)."""
        info = self._ctx.consumers.get(h.consumer_group)
        ch = info.channels.get(h.client_id) if info is not None else None
        if ch is None:
            remark = f"The Consumer <{h.consumer_group}> <{h.client_id}> not online"
            return cmd.response(ResponseCode.SYSTEM_ERROR, remark)
        if ch.version < VERSION_V3_1_8:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR, f"The Consumer <{h.client_id}> Version <{ch.version}> too low to finish"
            )
        call = RemotingCommand.request(cmd.code, {**cmd.ext_fields, **extra}, body, language="JAVA")
        try:
            answer = await ch.conn.request(call, timeout=10.0)
        except RemotingTimeoutError as exc:
            return cmd.response(
                ResponseCode.CONSUME_MSG_TIMEOUT, f"consumer <{h.consumer_group}> <{h.client_id}> Timeout: {exc}"
            )
        except RemotingError as exc:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR, f"invoke consumer <{h.consumer_group}> <{h.client_id}> Exception: {exc}"
            )
        return cmd.response(answer.code, answer.remark, body=answer.body, ext_fields=dict(answer.ext_fields))

    def consumed_by_who(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicRequestHeader.from_ext(cmd.ext_fields)
        groups = set(self._ctx.consumers.groups_subscribing(h.topic)) | self._ctx.offsets.groups_of_topic(h.topic)
        return cmd.response(ResponseCode.SUCCESS, body=dumps({"groupList": sorted(groups)}))

    async def all_consumer_offsets(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """GET_ALL_CONSUMER_OFFSET: the whole table, copied on the loop, checked and encoded on a worker thread
        (a large table is not encoded on the loop)."""
        build = self._ctx.offsets.build()
        body = await asyncio.to_thread(lambda: dumps(build()))
        return cmd.response(ResponseCode.SUCCESS, body=body)

    def all_delay_offsets(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """GET_ALL_DELAY_OFFSET: the delay levels' progress as config/delayOffset.json holds it (a slave's
        SlaveSynchronize copies it)."""
        if self._delay_offsets is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, "No delay offset in this broker")
        return cmd.response(ResponseCode.SUCCESS, body=dumps(self._delay_offsets()))

    async def reset_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """INVOKE_BROKER_TO_RESET_OFFSET: rewind (or, with isForce, move) a group's offsets to a time.

        The offsets are ``AdminService.reset_offsets``'s; here they are pushed to the group's online consumers
        with RESET_CONSUMER_CLIENT_OFFSET (ResetOffsetBodyForC to C++ clients) and answered.
        """
        h = ResetOffsetRequestHeader.from_ext(cmd.ext_fields)
        broker = self._ctx
        pacer = Pacer()
        table = await self._admin.reset_offsets(h.group, h.topic, h.timestamp, h.is_force, pacer)
        if table is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, f"[reset-offset] topic does not exist, {h.topic}")
        name = broker.config.brokerName
        java_body = await _object_key_table("offsetTable", ((_mq_key(h.topic, name, q), o) for q, o in table), pacer)
        info = broker.consumers.get(h.group)
        channels = list(info.channels.values()) if info else []
        cpp_body = b""
        if any(ch.language == "CPP" for ch in channels):
            cpp_body = dumps({"offsetTable": [{**_mq_key(h.topic, name, q), "offset": o} for q, o in table]})
        for ch in channels:
            push = RemotingCommand.request(
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
                ResetOffsetRequestHeader(
                    topic=h.topic, group=h.group, timestamp=h.timestamp, is_force=h.is_force
                ).to_ext(),
                cpp_body if ch.language == "CPP" else java_body,
                language="JAVA",
            )
            ch.conn.send_oneway(push)
        return cmd.response(ResponseCode.SUCCESS, body=java_body)


async def _object_key_table(
    name: str, rows: Iterable[tuple[dict[str, Any], Any]], pacer: Pacer, extra: dict[str, Any] | None = None
) -> bytes:
    """fastjson writes ``{MessageQueue-object: value}`` maps, which standard JSON cannot express.

    We write the same map in fastjson's form (what Java admin tools parse) by splicing object keys into the
    text, so Java's mqadmin reads it; our own admin client parses this form too. ``rows`` are (key, value)
    pairs; the text is built in ``pacer``'s slices (a table may have a row per queue of a large topic).
    """
    parts = []
    for key, value in rows:
        parts.append(f"{dumps(key).decode()}:{dumps(value).decode()}")
        await pacer.step()
    head = "{" + f'"{name}":{{' + ",".join(parts) + "}"
    if extra:
        for k, v in extra.items():
            head += f',"{k}":{dumps(v).decode()}'
    return (head + "}").encode()


def _offset_of_msg_id(msg_id: str) -> int | None:
    """The commit-log offset in an offset message id (IPv4: 32 hex digits, IPv6: 56; the offset is the last 16)."""
    if len(msg_id) not in (32, 56):
        return None
    try:
        return int(msg_id[-16:], 16)
    except ValueError:
        return None
