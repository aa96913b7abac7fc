"""Admin requests: topics, subscription groups, stats, runtime info, connections, broker config."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import rocketq
from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.broker.managers.topic_manager import NOT_ALLOWED_SEND_TOPICS, topic_name_error
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.bodies import TopicConfig, dumps, encode_kv_table, loads
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    ConsumerGroupRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    ResetOffsetRequestHeader,
    TopicRequestHeader,
)
from rocketq.remoting.connection import Connection


def _mq_key(topic: str, broker_name: str, queue_id: int) -> dict[str, Any]:
    return {"brokerName": broker_name, "queueId": queue_id, "topic": topic}


class AdminProcessors:
    def __init__(
        self, ctx: BrokerContext, *, send_queue_size: Callable[[], int], held_pulls: Callable[[], int]
    ) -> None:
        self._ctx = ctx
        self._send_queue_size = send_queue_size
        self._held_pulls = held_pulls

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
        d.register(RequestCode.GET_BROKER_CONFIG, self.broker_config)
        d.register(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, self.consumed_by_who)
        d.register(RequestCode.GET_ALL_CONSUMER_OFFSET, self.all_consumer_offsets)
        d.register(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.reset_offset)

    async def create_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = CreateTopicRequestHeader.from_ext(cmd.ext_fields)
        error = topic_name_error(h.topic)
        if error is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, error)
        if h.topic in NOT_ALLOWED_SEND_TOPICS:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"The topic[{h.topic}] is conflict with system topic.")
        if h.read_queue_nums <= 0 or h.write_queue_nums <= 0:
            return cmd.response(ResponseCode.SYSTEM_ERROR, "queue numbers must be positive")
        tc = TopicConfig(
            h.topic,
            h.read_queue_nums,
            h.write_queue_nums,
            h.perm,
            h.topic_filter_type,
            h.topic_sys_flag or 0,
            h.order,
        )
        self._ctx.topics.update(tc)
        # As Java does, answer once the name servers know the topic, so its route exists when the caller
        # goes on to use it.
        await self._ctx.registrar.register_all()
        return cmd.response(ResponseCode.SUCCESS)

    def delete_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicRequestHeader.from_ext(cmd.ext_fields)
        self._ctx.topics.delete(h.topic)
        self._ctx.offsets.remove_topic(h.topic)
        self._ctx.store.delete_topics({h.topic})
        self._ctx.registrar.kick()
        return cmd.response(ResponseCode.SUCCESS)

    def all_topic_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, body=dumps(self._ctx.topics.wrapper_json()))

    def topic_stats(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicRequestHeader.from_ext(cmd.ext_fields)
        tc = self._ctx.topics.get(h.topic)
        if tc is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist")
        store = self._ctx.store
        name = self._ctx.config.brokerName
        # TopicStatsTable uses MessageQueue objects as map keys (a fastjson quirk); we emit a list of
        # [key, value] pairs under "offsetTable" that our admin client reads, plus the object-key form's data.
        entries = []
        for qid in range(tc.write_queue_nums):
            max_off = store.get_max_offset_in_queue(h.topic, qid)
            last_ts = store.get_message_store_timestamp(h.topic, qid, max_off - 1) if max_off > 0 else 0
            entries.append(
                {
                    "mq": _mq_key(h.topic, name, qid),
                    "minOffset": store.get_min_offset_in_queue(h.topic, qid),
                    "maxOffset": max_off,
                    "lastUpdateTimestamp": last_ts,
                }
            )
        return cmd.response(ResponseCode.SUCCESS, body=_object_key_table("offsetTable", entries, "mq"))

    def create_group(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        obj = loads(cmd.body)
        if not isinstance(obj, dict) or not obj.get("groupName"):
            return cmd.response(ResponseCode.SYSTEM_ERROR, "SubscriptionGroupConfig body without groupName")
        self._ctx.groups.update(SubscriptionGroupConfig.from_json(obj))
        return cmd.response(ResponseCode.SUCCESS)

    def delete_group(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = DeleteSubscriptionGroupRequestHeader.from_ext(cmd.ext_fields)
        self._ctx.groups.delete(h.group_name)
        self._ctx.offsets.remove_group(h.group_name)
        return cmd.response(ResponseCode.SUCCESS)

    def all_groups(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, body=dumps(self._ctx.groups.to_json()))

    def consume_stats(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = GetConsumeStatsRequestHeader.from_ext(cmd.ext_fields)
        broker = self._ctx
        topics = [h.topic] if h.topic else sorted(broker.offsets.topics_of_group(h.consumer_group))
        entries = []
        for topic in topics:
            tc = broker.topics.get(topic)
            if tc is None:
                continue
            committed = broker.offsets.offsets_of(h.consumer_group, topic)
            for qid in range(tc.write_queue_nums):
                max_off = broker.store.get_max_offset_in_queue(topic, qid)
                consumer_off = committed.get(qid, -1)
                last_ts = 0
                if consumer_off > 0:
                    last_ts = broker.store.get_message_store_timestamp(topic, qid, consumer_off - 1)
                entries.append(
                    {
                        "mq": _mq_key(topic, broker.config.brokerName, qid),
                        "brokerOffset": max_off,
                        "consumerOffset": consumer_off,
                        "lastTimestamp": last_ts,
                    }
                )
        tps = broker.metrics.get_tps()
        return cmd.response(
            ResponseCode.SUCCESS, body=_object_key_table("offsetTable", entries, "mq", extra={"consumeTps": tps})
        )

    def runtime_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        broker = self._ctx
        store = broker.store
        table = {
            "brokerVersionDesc": f"rocketq {rocketq.__version__} (V4_9_8 protocol)",
            "brokerVersion": "409",
            "bootTimestamp": str(broker.boot_timestamp),
            "msgPutTotalTodayNow": str(broker.metrics.put_total),
            "msgGetTotalTodayNow": str(broker.metrics.get_total),
            "putTps": f"{broker.metrics.put_tps():.2f}",
            "getTransferedTps": f"{broker.metrics.get_tps():.2f}",
            "commitLogMinOffset": str(store.get_min_phy_offset()),
            "commitLogMaxOffset": str(store.get_max_phy_offset()),
            "sendThreadPoolQueueSize": str(self._send_queue_size()),
            "sendThreadPoolQueueCapacity": str(broker.config.sendQueueCapacity),
            "pullThreadPoolQueueSize": "0",
            "heldPullRequests": str(self._held_pulls()),
            "brokerName": broker.config.brokerName,
            "brokerRole": broker.role.role.value,
            "flushDiskType": broker.config.flushDiskType,
        }
        for k, v in store.runtime_info().items():
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
        channels = self._ctx.producers.groups.get(group, {})
        body = {
            "connectionSet": [
                {"clientAddr": ch.conn.remote, "clientId": ch.client_id, "language": ch.language, "version": ch.version}
                for ch in channels.values()
            ]
        }
        return cmd.response(ResponseCode.SUCCESS, body=dumps(body))

    def broker_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        props = self._ctx.config.as_properties()
        text = "\n".join(f"{k}={v}" for k, v in sorted(props.items())) + "\n"
        version = self._ctx.topics.data_version.to_json()
        return cmd.response(ResponseCode.SUCCESS, body=text.encode(), ext_fields={"version": dumps(version).decode()})

    def consumed_by_who(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicRequestHeader.from_ext(cmd.ext_fields)
        groups = set(self._ctx.consumers.groups_subscribing(h.topic)) | self._ctx.offsets.groups_of_topic(h.topic)
        return cmd.response(ResponseCode.SUCCESS, body=dumps({"groupList": sorted(groups)}))

    def all_consumer_offsets(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, body=dumps(self._ctx.offsets.to_json()))

    def reset_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """INVOKE_BROKER_TO_RESET_OFFSET: rewind (or, with isForce, move) a group's offsets to a time.

        Java's rule per queue: the offset found for ``timestamp`` (-1 = the max offset) replaces the group's
        offset when ``isForce`` or when it is smaller. The new offsets are pushed to the group's online
        consumers with RESET_CONSUMER_CLIENT_OFFSET (ResetOffsetBodyForC to C++ clients). Unlike Java, rocketq
        also writes them to its own offset table, so a reset sticks while the group is offline.
        """
        h = ResetOffsetRequestHeader.from_ext(cmd.ext_fields)
        broker = self._ctx
        tc = broker.topics.get(h.topic)
        if tc is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, f"[reset-offset] topic does not exist, {h.topic}")
        name = broker.config.brokerName
        store = broker.store
        table: list[tuple[int, int]] = []
        for qid in range(tc.write_queue_nums):
            if h.timestamp == -1:
                target = store.get_max_offset_in_queue(h.topic, qid)
            else:
                target = store.get_offset_in_queue_by_time(h.topic, qid, h.timestamp)
            current = broker.offsets.query(h.group, h.topic, qid)
            offset = target if h.is_force or current < 0 or target < current else current
            broker.offsets.commit(h.group, h.topic, qid, offset)
            table.append((qid, offset))
        entries = [{"mq": _mq_key(h.topic, name, q), "offset": o} for q, o in table]
        java_body = _object_key_values("offsetTable", entries)
        cpp_body = dumps({"offsetTable": [{**_mq_key(h.topic, name, q), "offset": o} for q, o in table]})
        info = broker.consumers.get(h.group)
        for ch in list(info.channels.values()) if info else []:
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


def _object_key_values(name: str, entries: list[dict[str, Any]]) -> bytes:
    """``{"offsetTable":{{MessageQueue}:offset,...}}`` — fastjson's object-keyed map with scalar values."""
    parts = [f"{dumps(e['mq']).decode()}:{int(e['offset'])}" for e in entries]
    return ("{" + f'"{name}":{{' + ",".join(parts) + "}}").encode()


def _object_key_table(name: str, entries: list[dict[str, Any]], key: str, extra: dict[str, Any] | None = None) -> bytes:
    """fastjson writes ``{MessageQueue-object: value}`` maps, which standard JSON cannot express.

    We write the same map in fastjson's form (what Java admin tools parse) by splicing object keys into the
    text, so Java's mqadmin reads it; our own admin client parses this form too.
    """
    parts = []
    for e in entries:
        k = dumps(e[key]).decode()
        v = dumps({kk: vv for kk, vv in e.items() if kk != key}).decode()
        parts.append(f"{k}:{v}")
    head = "{" + f'"{name}":{{' + ",".join(parts) + "}"
    if extra:
        for k, v in extra.items():
            head += f',"{k}":{dumps(v).decode()}'
    return (head + "}").encode()
