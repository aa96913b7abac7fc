"""Topics: list, create/update, delete, status (mqadmin topicList, updateTopic, deleteTopic, topicStatus)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from rocketq.client.admin._base import AdminBase, mq_table
from rocketq.client.admin._types import (
    TopicQueueStatus,
)
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError, error_for_code
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE, TopicConfig
from rocketq.protocol.topics import AUTO_CREATE_TOPIC

log = logging.getLogger("rocketq.client.admin")


class TopicAdmin(AdminBase):
    async def create_topic(
        self,
        topic: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        read_queue_nums: int = 8,
        write_queue_nums: int = 8,
        perm: int = PERM_READ | PERM_WRITE,
        order: bool = False,
        topic_filter_type: str = "SINGLE_TAG",
        topic_sys_flag: int = 0,
        wait_for_route: float = 5.0,
    ) -> list[str]:
        """UPDATE_AND_CREATE_TOPIC on one broker or every master of ``cluster``; returns the addresses used.

        Creating an existing topic updates it (Java ``updateTopic`` is the same request). Then waits up to
        ``wait_for_route`` seconds (0: not at all) until the name server routes the topic to those brokers, since
        a broker may register the new topic after answering.
        """
        addrs = await self._targets(cluster, broker_addr)
        tc = TopicConfig(topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, topic_sys_flag, order)
        ext = {
            "defaultTopic": AUTO_CREATE_TOPIC,
            "order": "true" if tc.order else "false",
            "perm": str(tc.perm),
            "readQueueNums": str(tc.read_queue_nums),
            "topic": tc.topic_name,
            "topicFilterType": tc.topic_filter_type,
            "topicSysFlag": str(tc.topic_sys_flag),
            "writeQueueNums": str(tc.write_queue_nums),
        }
        for addr in addrs:
            await self._api.create_topic(addr, ext, self.timeout)
        if wait_for_route > 0:
            await self._wait_for_route(topic, addrs, wait_for_route)
        return addrs

    async def _wait_for_route(self, topic: str, addrs: list[str], timeout: float) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            try:
                route = await self._api.get_topic_route(topic, self.timeout)
                routed = {a for bd in route.broker_datas for a in bd.broker_addrs.values()}
                names = {q.broker_name for q in route.queue_datas}
                if all(a in routed for a in addrs) and names:
                    return
            except BrokerError:
                pass
            if asyncio.get_running_loop().time() >= deadline:
                log.warning("create_topic.route_not_seen topic=%s after=%.1fs", topic, timeout)
                return
            await asyncio.sleep(0.05)

    async def delete_topic(self, topic: str, *, cluster: str | None = None, broker_addr: str | None = None) -> None:
        """DELETE_TOPIC_IN_BROKER on the brokers, then DELETE_TOPIC_IN_NAMESRV on every name server."""
        for addr in await self._targets(cluster, broker_addr):
            await self._api.delete_topic_in_broker(addr, topic, self.timeout)
        for ns in self.config.namesrv_list():
            cmd = self._api.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": topic})
            resp = await self._api.invoke(ns, cmd, self.timeout)
            if resp.code != ResponseCode.SUCCESS:
                raise error_for_code(resp.code, resp.remark)

    async def topic_configs(self, broker_addr: str) -> dict[str, dict[str, Any]]:
        """GET_ALL_TOPIC_CONFIG: one broker's topic configs by name (Java TopicConfig JSON)."""
        obj = await self._api.broker_json(broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG, None, self.timeout)
        table = (obj or {}).get("topicConfigTable") or {}
        return {str(k): dict(v) for k, v in sorted(table.items()) if isinstance(v, dict)}

    async def broker_system_topics(self, broker_addr: str) -> list[str]:
        """GET_SYSTEM_TOPIC_LIST_FROM_BROKER: the topics the broker made for itself (its cluster and broker
        names, the system topics)."""
        obj = await self._api.broker_json(broker_addr, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER, None,
                                          self.timeout)  # fmt: skip
        return sorted(str(t) for t in (obj or {}).get("topicList") or [])

    async def topic_status(self, topic: str) -> list[TopicQueueStatus]:
        """GET_TOPIC_STATS_INFO from every broker of the topic's route."""
        route = await self.topic_route(topic)
        out: list[TopicQueueStatus] = []
        for bd in route.broker_datas:
            addr = bd.select_broker_addr()
            if addr is None:
                continue
            obj = await self._api.broker_json(addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic}, self.timeout)
            for mq, v in mq_table((obj or {}).get("offsetTable")):
                out.append(TopicQueueStatus(mq, int(v.get("minOffset", 0)), int(v.get("maxOffset", 0)),
                                            int(v.get("lastUpdateTimestamp", 0))))  # fmt: skip
        return sorted(out, key=lambda s: s.message_queue)
