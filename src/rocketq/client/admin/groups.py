"""Consumer groups: progress, connections, offsets (mqadmin consumerProgress, consumerConnection, resetOffsetByTime)."""

from __future__ import annotations

import logging
from typing import Any

from rocketq.client.admin._base import AdminBase, mq_table
from rocketq.client.admin._types import (
    ConsumerConnection,
    GroupSummary,
    PopInflight,
    QueueProgress,
    connection_set,
)
from rocketq.client.errors import NoRouteError
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError, error_for_code
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.pop_admin import POP_INFLIGHT_STATS
from rocketq.protocol.topics import retry_topic

log = logging.getLogger("rocketq.client.admin")


class GroupAdmin(AdminBase):
    async def consume_progress(self, group: str, topic: str | None = None) -> list[QueueProgress]:
        """GET_CONSUME_STATS on every broker the group consumes from: per-queue broker / consumer offsets."""
        return (await self._consume_stats(group, topic))[0]

    async def _consume_stats(self, group: str, topic: str | None) -> tuple[list[QueueProgress], float]:
        """GET_CONSUME_STATS of every broker the group consumes from: the queues, and the consume TPS summed."""
        out: list[QueueProgress] = []
        tps = 0.0
        addrs = await self._group_brokers(group, topic)
        failures: list[BrokerError] = []
        for addr in addrs:
            ext = {"consumerGroup": group}
            if topic:
                ext["topic"] = topic
            try:
                obj = await self._api.broker_json(addr, RequestCode.GET_CONSUME_STATS, ext, self.timeout)
            except BrokerError as exc:
                failures.append(exc)
                continue
            tps += float((obj or {}).get("consumeTps", 0) or 0)
            for mq, v in mq_table((obj or {}).get("offsetTable")):
                out.append(QueueProgress(mq, int(v.get("brokerOffset", 0)), int(v.get("consumerOffset", 0)),
                                         int(v.get("lastTimestamp", 0))))  # fmt: skip
        if failures and len(failures) == len(addrs):
            raise failures[0]
        return sorted(out, key=lambda p: p.message_queue), tps

    async def pop_inflight(self, group: str | None = None) -> list[PopInflight]:
        """POP groups (message-level balancing) on every master: messages in flight, invisible and ready."""
        out: list[PopInflight] = []
        masters = [b.addr for b in await self.brokers() if b.broker_id == 0]
        ext = {"consumerGroup": group} if group else None
        for addr in masters:
            rows = await self._api.broker_json(addr, POP_INFLIGHT_STATS, ext, self.timeout) or []
            out.extend(PopInflight(addr, str(r["group"]), str(r["topic"]), int(r["inflight"]), int(r["invisible"]),
                                   int(r["ready"])) for r in rows)  # fmt: skip
        return sorted(out, key=lambda p: (p.group, p.topic, p.broker_addr))

    async def consumer_groups(self) -> list[str]:
        """Every consumer group the name servers know of, found as Java's mqadmin consumerProgress finds them:
        by the retry topics (``%RETRY%group``) in the topic list."""
        prefix = retry_topic("")
        topics = await self.topic_list()
        return sorted({t[len(prefix) :] for t in topics if t.startswith(prefix) and len(t) > len(prefix)})

    async def group_summary(self, group: str) -> GroupSummary:
        """One row of consumerProgress without ``-g`` (Java's GroupConsumeInfo): connections, consume type,
        model and lowest client version from GET_CONSUMER_CONNECTION_LIST, TPS and total lag from
        GET_CONSUME_STATS. Either may fail (a group offline, a group without offsets): its fields stay empty."""
        summary = GroupSummary(group)
        try:
            progress, summary.consume_tps = await self._consume_stats(group, None)
            summary.diff_total = sum(p.broker_offset - p.consumer_offset for p in progress)
        except (BrokerError, NoRouteError) as exc:
            log.debug("admin.group_summary consume stats of %s: %s", group, exc)
        try:
            cc = await self.consumer_connections(group)
        except (BrokerError, NoRouteError) as exc:
            log.debug("admin.group_summary connections of %s: %s", group, exc)
            return summary
        summary.count = len(cc.connections)
        summary.consume_type = cc.consume_type
        summary.message_model = cc.message_model
        summary.min_version = min((c.version for c in cc.connections), default=None)
        return summary

    async def consumer_connections(self, group: str) -> ConsumerConnection:
        """GET_CONSUMER_CONNECTION_LIST (ConsumerNotOnlineError when nobody of the group is connected)."""
        last: BrokerError | None = None
        obj: Any = None
        for addr in await self._group_brokers(group, None):
            try:
                obj = await self._api.broker_json(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                                  {"consumerGroup": group}, self.timeout)  # fmt: skip
                break
            except BrokerError as exc:
                last = exc
        if obj is None:
            if last is not None:
                raise last
            obj = {}
        subs = {str(t): str((s or {}).get("subString", "")) for t, s in (obj.get("subscriptionTable") or {}).items()}
        return ConsumerConnection(
            connection_set(obj), str(obj.get("consumeType", "")),
            str(obj.get("messageModel", "")), str(obj.get("consumeFromWhere", "")), subs,
        )  # fmt: skip

    async def reset_offset_by_timestamp(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> dict[MessageQueue, int]:
        """Move ``group``'s offsets of ``topic`` to the first message stored at or after ``timestamp_ms``.

        Uses INVOKE_BROKER_TO_RESET_OFFSET (the broker resets and tells online consumers). When a broker does
        not support it or the group is offline, falls back to SEARCH_OFFSET_BY_TIMESTAMP + UPDATE_CONSUMER_OFFSET
        per queue (Java's ``resetOffsetByTimestampOld``; only safe while the group's consumers are stopped).
        """
        route = await self.topic_route(topic)
        result: dict[MessageQueue, int] = {}
        for bd in route.broker_datas:
            addr = bd.select_broker_addr()
            if addr is None:
                continue
            ext = {"topic": topic, "group": group, "timestamp": str(timestamp_ms)}
            ext["isForce"] = "true" if force else "false"
            resp = await self._api.invoke(addr, self._api.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext),
                                          self.timeout)  # fmt: skip
            if resp.code == ResponseCode.SUCCESS:
                obj = fastjson.loads(resp.body) if resp.body else {}
                for mq, off in mq_table((obj or {}).get("offsetTable")):
                    result[mq] = int(off)
                continue
            if resp.code not in (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, ResponseCode.CONSUMER_NOT_ONLINE):
                raise error_for_code(resp.code, resp.remark)
            log.info("reset_offset.fallback broker=%s code=%s", bd.broker_name, resp.code)
            for qd in route.queue_datas:
                if qd.broker_name != bd.broker_name:
                    continue
                for qid in range(qd.read_queue_nums):
                    mq = MessageQueue(topic, bd.broker_name, qid)
                    if timestamp_ms == -1:  # Java's "to the end" (skipAccumulatedMessage)
                        offset = await self._api.get_max_offset(addr, mq, self.timeout)
                    else:
                        offset = await self._api.search_offset(addr, mq, timestamp_ms, self.timeout)
                    await self._api.update_consumer_offset(addr, group, mq, offset, self.timeout, oneway=False)
                    result[mq] = offset
        return result
