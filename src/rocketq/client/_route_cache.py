"""The client's route tables (Java ``MQClientInstance.topicRouteTable`` / ``brokerAddrTable``), without I/O.

``RouteCache`` holds what the name server said: the route of each topic asked about, and the addresses of every
broker those routes named (by broker name, then broker id). It answers "which address serves broker X" for
sends, pulls, offsets and heartbeats. The owner fetches routes (``MQClientAPI.get_topic_route``) and hands them
in; ``ClientInstance`` and the Spark connector both keep one, so the rule is written once.
"""

from __future__ import annotations

import random

from rocketq.protocol.route import MASTER_ID, TopicRouteData

__all__ = ["RouteCache"]


class RouteCache:
    """Routes by topic and broker addresses by broker name; a pure table, driven by its owner."""

    __slots__ = ("broker_addr_table", "topic_route_table")

    def __init__(self) -> None:
        self.topic_route_table: dict[str, TopicRouteData] = {}
        #: broker name → {broker id → address}, from the latest route that named the broker
        self.broker_addr_table: dict[str, dict[int, str]] = {}

    # -- updates ------------------------------------------------------------------------------------------

    def learn_brokers(self, route: TopicRouteData) -> None:
        """Take the broker addresses of ``route`` (each broker it names replaces what was known of it)."""
        for bd in route.broker_datas:
            self.broker_addr_table[bd.broker_name] = dict(bd.broker_addrs)

    def remember(self, topic: str, route: TopicRouteData) -> None:
        """Keep ``route`` as the route of ``topic`` (its brokers are learned separately, by ``learn_brokers``)."""
        self.topic_route_table[topic] = route

    def put(self, topic: str, route: TopicRouteData) -> None:
        """``learn_brokers`` and ``remember`` in one."""
        self.learn_brokers(route)
        self.remember(topic, route)

    def forget(self, topic: str) -> None:
        """Drop the route of ``topic`` (the broker addresses it taught stay)."""
        self.topic_route_table.pop(topic, None)

    def clean_offline_brokers(self) -> list[str]:
        """Drop addresses no remembered route names any more; returns the broker names left with none."""
        live = {
            addr for r in self.topic_route_table.values() for bd in r.broker_datas for addr in bd.broker_addrs.values()
        }
        gone = []
        for name in list(self.broker_addr_table):
            table = {bid: a for bid, a in self.broker_addr_table[name].items() if a in live}
            if table:
                self.broker_addr_table[name] = table
            else:
                del self.broker_addr_table[name]
                gone.append(name)
        return gone

    # -- lookups ------------------------------------------------------------------------------------------

    def route(self, topic: str) -> TopicRouteData | None:
        return self.topic_route_table.get(topic)

    def master_addr(self, broker_name: str, *, topic: str | None = None) -> str | None:
        """The master's address of ``broker_name`` (Java ``findBrokerAddressInPublish``), or None.

        With ``topic``, also None unless the remembered route of ``topic`` names that broker.
        """
        if topic is not None:
            route = self.topic_route_table.get(topic)
            if route is None or route.broker(broker_name) is None:
                return None
        table = self.broker_addr_table.get(broker_name)
        return table.get(MASTER_ID) if table else None

    def subscribe_addr(
        self, broker_name: str, broker_id: int = MASTER_ID, only_this_broker: bool = False
    ) -> tuple[str, bool] | None:
        """(address, is_slave) of ``broker_id`` (or the next slave id, or any when not ``only_this_broker``).

        Java ``findBrokerAddressInSubscribe``.
        """
        table = self.broker_addr_table.get(broker_name)
        if not table:
            return None
        addr = table.get(broker_id)
        slave = broker_id != MASTER_ID
        if addr is None and slave:
            addr = table.get(broker_id + 1)
        if addr is None and not only_this_broker:
            bid = min(table)  # Java iterates a HashMap of small Long keys: the lowest id first
            addr = table[bid]
            slave = bid != MASTER_ID
        return (addr, slave) if addr is not None else None

    def any_broker_addr(self, topic: str) -> str | None:
        """A broker of ``topic``'s route, its master preferred (Java ``findBrokerAddrByTopic``)."""
        route = self.topic_route_table.get(topic)
        if route is None or not route.broker_datas:
            return None
        return random.choice(route.broker_datas).select_broker_addr()

    def all_broker_addrs(self) -> list[tuple[str, int, str]]:
        """Every known (broker name, broker id, address)."""
        return [(name, bid, addr) for name, table in self.broker_addr_table.items() for bid, addr in table.items()]
