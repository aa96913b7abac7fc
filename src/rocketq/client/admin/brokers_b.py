"""What the console's Cluster, Dashboard, Topics and Producers pages read that the other mixins do not (yet):
broker config (26), broker stats (315), producers (204, 328), the groups consuming a topic (300)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocketq.client.admin._base import AdminBase
from rocketq.client.admin._types import ConnectionInfo
from rocketq.codes import RequestCode
from rocketq.errors import BrokerError
from rocketq.protocol.route import MASTER_ID


@dataclass(frozen=True, slots=True)
class StatsWindow:
    """One window of a BrokerStatsData (Java ``BrokerStatsItem``): the count, its rate, the average per sample."""

    sum: int
    tps: float
    avgpt: float


@dataclass(frozen=True, slots=True)
class BrokerStats:
    """VIEW_BROKER_STATS_DATA's answer: the last minute, hour and day of one stats item."""

    minute: StatsWindow
    hour: StatsWindow
    day: StatsWindow


@dataclass(frozen=True, slots=True)
class ProducerClient:
    """One producer client of GET_ALL_PRODUCER_INFO (Java ``ProducerInfo``)."""

    group: str
    client_id: str
    remote_ip: str
    language: str
    version: int
    last_update_timestamp: int


def _window(obj: Any) -> StatsWindow:
    obj = obj or {}
    return StatsWindow(int(obj.get("sum", 0)), float(obj.get("tps", 0.0)), float(obj.get("avgpt", 0.0)))


class BrokerReadAdmin(AdminBase):
    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_CONFIG: the broker's settings (a properties text) as key → value."""
        resp = await self._api.call(broker_addr, RequestCode.GET_BROKER_CONFIG, None, self.timeout)
        out: dict[str, str] = {}
        for line in bytes(resp.body or b"").decode(errors="replace").splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() and not key.lstrip().startswith("#"):
                out[key.strip()] = value.strip()
        return out

    async def broker_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStats | None:
        """VIEW_BROKER_STATS_DATA (``TOPIC_PUT_NUMS``/topic, ``GROUP_GET_NUMS``/``topic@group``, ...); None when the
        broker has no such item (nothing sent to the topic since it started)."""
        ext = {"statsName": stats_name, "statsKey": stats_key}
        try:
            obj = await self._api.broker_json(broker_addr, RequestCode.VIEW_BROKER_STATS_DATA, ext, self.timeout)
        except BrokerError as exc:
            if "not exist" in (exc.remark or ""):
                return None
            raise
        obj = obj or {}
        return BrokerStats(_window(obj.get("statsMinute")), _window(obj.get("statsHour")), _window(obj.get("statsDay")))

    async def all_producers(self) -> list[ProducerClient]:
        """GET_ALL_PRODUCER_INFO of every master: each producer client of each group (sorted, no duplicates)."""
        seen: dict[tuple[str, str], ProducerClient] = {}
        for b in await self.brokers():
            if b.broker_id != MASTER_ID:
                continue
            obj = await self._api.broker_json(b.addr, RequestCode.GET_ALL_PRODUCER_INFO, None, self.timeout) or {}
            for group, clients in (obj.get("data") or {}).items():
                for c in clients or []:
                    p = ProducerClient(str(group), str(c.get("clientId", "")), str(c.get("remoteIP", "")).lstrip("/"),
                                       str(c.get("language", "")), int(c.get("version", 0)),
                                       int(c.get("lastUpdateTimestamp", 0)))  # fmt: skip
                    seen.setdefault((p.group, p.client_id), p)
        return sorted(seen.values(), key=lambda p: (p.group, p.client_id))

    async def producer_connections(self, group: str, topic: str) -> list[ConnectionInfo]:
        """GET_PRODUCER_CONNECTION_LIST at the brokers of ``topic``'s route (Java examineProducerConnectionInfo);
        the broker's refusal when none of them knows the group."""
        route = await self.topic_route(topic)
        addrs = [a for bd in route.broker_datas if (a := bd.select_broker_addr())]
        found: dict[str, ConnectionInfo] = {}
        last: BrokerError | None = None
        for addr in addrs:
            try:
                obj = await self._api.broker_json(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST,
                                                  {"producerGroup": group}, self.timeout) or {}  # fmt: skip
            except BrokerError as exc:
                last = exc
                continue
            for c in obj.get("connectionSet") or []:
                info = ConnectionInfo(str(c.get("clientId", "")), str(c.get("clientAddr", "")),
                                      str(c.get("language", "")), int(c.get("version", 0)))  # fmt: skip
                found.setdefault(info.client_id, info)
        if not found and last is not None:
            raise last
        return sorted(found.values(), key=lambda c: c.client_id)

    async def topic_consumer_groups(self, topic: str) -> list[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO at the brokers of ``topic``'s route: the groups that consume it."""
        route = await self.topic_route(topic)
        groups: set[str] = set()
        for bd in route.broker_datas:
            addr = bd.select_broker_addr()
            if addr:
                obj = await self._api.broker_json(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic},
                                                  self.timeout) or {}  # fmt: skip
                groups.update(str(g) for g in obj.get("groupList") or [])
        return sorted(groups)
