"""Statistics and queue inspection (mqadmin statsAll, brokerConsumeStats, queryCq, topicClusterList, and who
consumes a topic)."""

from __future__ import annotations

import logging
from typing import Any

from rocketq.client.admin._base import AdminBase, mq_table
from rocketq.client.admin._types import BrokerConsumeStats, GroupTopicStats, QueueProgress, TopicGroupStats
from rocketq.codes import RequestCode
from rocketq.errors import BrokerError, ClientError
from rocketq.protocol.topics import is_system_topic

log = logging.getLogger("rocketq.client.admin")

#: Java BrokerStatsManager's item names that statsAll reads
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"


def sum_24h(stats: dict[str, Any]) -> int:
    """Java statsAll's compute24HourSum: the day's sum, else the hour's, else the minute's."""
    for window in ("statsDay", "statsHour", "statsMinute"):
        total = int((stats.get(window) or {}).get("sum", 0) or 0)
        if total:
            return total
    return 0


def _tps(stats: dict[str, Any]) -> float:
    return float((stats.get("statsMinute") or {}).get("tps", 0) or 0)


class StatsAdmin(AdminBase):
    async def view_broker_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> dict[str, Any]:
        """VIEW_BROKER_STATS_DATA: Java's BrokerStatsData (``statsMinute``/``statsHour``/``statsDay``, each
        ``sum``, ``tps``, ``avgpt``) of one item, e.g. ``TOPIC_PUT_NUMS`` by topic or ``GROUP_GET_NUMS`` by
        ``topic@group``. An item the broker never counted is its refusal (BrokerError)."""
        ext = {"statsName": stats_name, "statsKey": stats_key}
        obj = await self._api.broker_json(broker_addr, RequestCode.VIEW_BROKER_STATS_DATA, ext, self.timeout)
        return dict(obj or {})

    async def broker_consume_stats(self, broker_addr: str, *, is_order: bool = False) -> BrokerConsumeStats:
        """GET_BROKER_CONSUME_STATS: every group's progress on every topic of one broker (``is_order``: only
        ordered groups, as Java's ``-o``)."""
        ext = {"isOrder": "true" if is_order else "false"}
        obj = await self._api.broker_json(broker_addr, RequestCode.GET_BROKER_CONSUME_STATS, ext, self.timeout * 3)
        obj = obj or {}
        out = BrokerConsumeStats(str(obj.get("brokerAddr") or broker_addr), int(obj.get("totalDiff") or 0))
        for by_group in obj.get("consumeStatsList") or []:
            for group, stats_list in (by_group or {}).items():
                for stats in stats_list or []:
                    queues = [QueueProgress(mq, int(v.get("brokerOffset", 0)), int(v.get("consumerOffset", 0)),
                                            int(v.get("lastTimestamp", 0)))
                              for mq, v in mq_table((stats or {}).get("offsetTable"))]  # fmt: skip
                    topic = queues[0].message_queue.topic if queues else ""
                    out.entries.append(GroupTopicStats(str(group), topic, float((stats or {}).get("consumeTps") or 0),
                                                       sorted(queues, key=lambda q: q.message_queue)))  # fmt: skip
        out.entries.sort(key=lambda e: (e.topic, e.group))
        return out

    async def groups_consuming(self, topic: str) -> list[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO on every broker of the topic: the groups subscribed to it or holding
        offsets on it."""
        route = await self.topic_route(topic)
        groups: set[str] = set()
        for bd in route.broker_datas:
            addr = bd.select_broker_addr()
            if addr is None:
                continue
            obj = await self._api.broker_json(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic},
                                              self.timeout)  # fmt: skip
            groups.update(str(g) for g in (obj or {}).get("groupList") or [])
        return sorted(groups)

    async def topic_clusters(self, topic: str) -> list[str]:
        """mqadmin topicClusterList: the clusters whose brokers serve ``topic``."""
        route = await self.topic_route(topic)
        names = {bd.broker_name for bd in route.broker_datas}
        clusters: dict[str, list[str]] = (await self.cluster_info()).get("clusterAddrTable") or {}
        return sorted(c for c, brokers in clusters.items() if names & set(brokers))

    async def query_consume_queue(
        self, topic: str, queue_id: int, index: int, count: int = 10, *, group: str | None = None,
        broker_addr: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """QUERY_CONSUME_QUEUE (mqadmin queryCq): a queue's min/max index and ``count`` units from ``index``
        (``queueData``: physicOffset, physicSize, tagsCode), with ``group`` its subscription. Without
        ``broker_addr`` the first broker of the route is asked (as Java does)."""
        if broker_addr is None:
            route = await self.topic_route(topic)
            addrs = [a for bd in route.broker_datas if (a := bd.select_broker_addr())]
            if not addrs:
                raise ClientError(f"no broker address in the route of {topic}")
            broker_addr = addrs[0]
        ext = {"topic": topic, "queueId": str(queue_id), "index": str(index), "count": str(count)}
        if group:
            ext["consumerGroup"] = group
        obj = await self._api.broker_json(broker_addr, RequestCode.QUERY_CONSUME_QUEUE, ext, self.timeout)
        return dict(obj or {})

    async def stats_all(self, topic: str | None = None, *, active_only: bool = False) -> list[TopicGroupStats]:
        """mqadmin statsAll: per topic (every non-system topic, or ``topic``) its in TPS and 24-hour count, and
        per consumer group of it the accumulation, out TPS and 24-hour count, summed over the topic's brokers.
        ``active_only``: only the (topic, group) rows with an online consumer (Java's ``-a``)."""
        topics = [topic] if topic else [t for t in await self.topic_list() if not is_system_topic(t)]
        rows: list[TopicGroupStats] = []
        for t in topics:
            try:
                route = await self.topic_route(t)
            except BrokerError as exc:
                log.debug("admin.stats_all route of %s: %s", t, exc)
                continue
            addrs = [a for bd in route.broker_datas if (a := bd.select_broker_addr())]
            in_tps, in_24h = 0.0, 0
            for addr in addrs:
                try:
                    s = await self.view_broker_stats(addr, TOPIC_PUT_NUMS, t)
                except BrokerError:
                    continue  # nothing was ever put there
                in_tps += _tps(s)
                in_24h += sum_24h(s)
            groups = await self.groups_consuming(t)
            if not groups and not active_only:
                rows.append(TopicGroupStats(t, "", 0, in_tps, 0.0, in_24h, 0))
            for g in groups:
                if active_only and not await self._online(g):
                    continue
                out_tps, out_24h = 0.0, 0
                for addr in addrs:
                    try:
                        s = await self.view_broker_stats(addr, GROUP_GET_NUMS, f"{t}@{g}")
                    except BrokerError:
                        continue
                    out_tps += _tps(s)
                    out_24h += sum_24h(s)
                rows.append(TopicGroupStats(t, g, await self._accumulation(g, t), in_tps, out_tps, in_24h, out_24h))
        return rows

    async def _online(self, group: str) -> bool:
        for addr in await self._group_brokers(group, None):
            try:
                obj = await self._api.broker_json(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                                  {"consumerGroup": group}, self.timeout)  # fmt: skip
            except BrokerError:
                continue
            if (obj or {}).get("connectionSet"):
                return True
        return False

    async def _accumulation(self, group: str, topic: str) -> int:
        total = 0
        for addr in await self._group_brokers(group, topic):
            try:
                obj = await self._api.broker_json(addr, RequestCode.GET_CONSUME_STATS,
                                                  {"consumerGroup": group, "topic": topic}, self.timeout)  # fmt: skip
            except BrokerError:
                continue
            for _, v in mq_table((obj or {}).get("offsetTable")):
                total += int(v.get("brokerOffset", 0)) - int(v.get("consumerOffset", 0))
        return total
