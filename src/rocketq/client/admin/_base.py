"""What every part of the admin client shares: the connection, the cluster view, the brokers to ask."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from types import TracebackType
from typing import Any, Self

from rocketq.client._instance import ClientInstance, unique_instance_name
from rocketq.client.admin._types import (
    BrokerInfo,
)
from rocketq.client.config import ClientConfig
from rocketq.client.errors import NoRouteError
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError, ClientError, ProtocolError, RemotingError
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.route import MASTER_ID, TopicRouteData
from rocketq.protocol.topics import retry_topic

log = logging.getLogger("rocketq.client.admin")

LONG_MAX = 2**63 - 1


class AdminBase:
    def __init__(self, *, namesrv_addr: str | None = None, config: ClientConfig | None = None,
                 timeout: float = 5.0) -> None:  # fmt: skip
        # A private copy: start() may set instance_name, which must not leak into other clients sharing the config.
        self.config = dataclasses.replace(config) if config is not None else ClientConfig()
        if namesrv_addr is not None:
            self.config.namesrv_addr = namesrv_addr
        if self.config.instance_name == "DEFAULT":
            self.config.instance_name = unique_instance_name()
        self.timeout = timeout
        self._instance: ClientInstance | None = None

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            self._instance = ClientInstance(self.config)
        return self._instance

    async def start(self) -> None:
        self.instance  # noqa: B018 - connections are opened lazily

    async def close(self) -> None:
        if self._instance is not None:
            await self._instance.shutdown()
            self._instance = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def _api(self) -> Any:
        return self.instance.api

    async def cluster_info(self) -> dict[str, Any]:
        """GET_BROKER_CLUSTER_INFO: ``{"brokerAddrTable": {...}, "clusterAddrTable": {...}}``."""
        return dict(await self._api.get_broker_cluster_info(self.timeout))

    async def brokers(self, cluster: str | None = None, *, runtime: bool = False) -> list[BrokerInfo]:
        """Every broker address known to the name server (optionally of one cluster), with runtime stats."""
        info = await self.cluster_info()
        by_name: dict[str, Any] = info.get("brokerAddrTable") or {}
        clusters: dict[str, list[str]] = info.get("clusterAddrTable") or {}
        out: list[BrokerInfo] = []
        for cl, names in sorted(clusters.items()):
            if cluster is not None and cl != cluster:
                continue
            for name in sorted(names):
                bd = by_name.get(name) or {}
                for bid, addr in sorted((bd.get("brokerAddrs") or {}).items(), key=lambda kv: int(kv[0])):
                    out.append(BrokerInfo(cl, name, int(bid), str(addr)))
        if runtime:

            async def fill(b: BrokerInfo) -> None:
                try:
                    b.runtime = await self.broker_runtime_info(b.addr)
                except (RemotingError, BrokerError) as exc:
                    b.runtime = {"error": str(exc)}

            await asyncio.gather(*(fill(b) for b in out))
        return out

    async def master_addrs(self, cluster: str) -> list[str]:
        addrs = [b.addr for b in await self.brokers(cluster) if b.broker_id == MASTER_ID]
        if not addrs:
            raise ClientError(f"no master broker in cluster {cluster!r}")
        return addrs

    async def broker_runtime_info(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO: the broker's KV table of counters and settings."""
        obj = await self._api.broker_json(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO, None, self.timeout)
        table = (obj or {}).get("table") or {}
        return {str(k): str(v) for k, v in table.items()}

    async def topic_list(self) -> list[str]:
        return sorted(await self._api.get_all_topic_list(self.timeout))

    async def topic_route(self, topic: str) -> TopicRouteData:
        try:
            return await self._api.get_topic_route(topic, self.timeout)  # type: ignore[no-any-return]
        except BrokerError as exc:
            if exc.code == ResponseCode.TOPIC_NOT_EXIST:
                raise await self._api.no_route_error(topic, self.timeout, exc.remark) from exc
            raise

    async def _targets(self, cluster: str | None, broker_addr: str | None) -> list[str]:
        if broker_addr:
            return [broker_addr]
        if cluster:
            return await self.master_addrs(cluster)
        clusters = (await self.cluster_info()).get("clusterAddrTable") or {}
        if len(clusters) == 1:
            return await self.master_addrs(next(iter(clusters)))
        raise ClientError("specify a cluster (-c) or a broker address (-b)")

    async def _group_brokers(self, group: str, topic: str | None) -> list[str]:
        """Brokers to ask about a group: those of its retry topic (as Java's examineConsumeStats does), else of
        ``topic``, else every master the name server knows."""
        for t in (retry_topic(group), topic):
            if t is None:
                continue
            try:
                route = await self._api.get_topic_route(t, self.timeout)
            except BrokerError:
                continue
            addrs = [a for bd in route.broker_datas if (a := bd.select_broker_addr())]
            if addrs:
                return addrs
        masters = [b.addr for b in await self.brokers() if b.broker_id == MASTER_ID]
        if not masters:
            raise NoRouteError(retry_topic(group), "no broker to ask about the group")
        return masters


def mq_table(table: Any) -> list[tuple[MessageQueue, Any]]:
    """A MessageQueue-keyed table in fastjson's object-key form, or as a list of ``{"mq": …, …}`` entries."""
    out: list[tuple[MessageQueue, Any]] = []
    if isinstance(table, dict):
        for k, v in table.items():
            try:
                out.append((fastjson.mq_from_key(k), v))
            except (ProtocolError, ValueError) as exc:
                log.debug("mq_table.bad_key key=%r error=%s", k, exc)
    elif isinstance(table, list):
        for e in table:
            if isinstance(e, dict) and "mq" in e:
                out.append((MessageQueue.from_json(e["mq"]), e))
            elif isinstance(e, list | tuple) and len(e) == 2:
                out.append((MessageQueue.from_json(e[0]), e[1]))
    return out
