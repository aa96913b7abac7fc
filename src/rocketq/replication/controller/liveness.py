"""Broker heartbeats and their expiry (Java ``DefaultBrokerHeartbeatManager``), on an injected clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]

#: a broker's heartbeat timeout when it names none (Java ``heartbeatTimeoutMillis`` default 10 s)
DEFAULT_HEARTBEAT_TIMEOUT = 10.0


@dataclass(slots=True)
class BrokerLive:
    """What the last heartbeat of one broker said; the election orders candidates by these."""

    cluster_name: str
    broker_name: str
    broker_id: int
    address: str
    last_seen: float
    timeout: float
    epoch: int = 0
    max_offset: int = 0
    confirm_offset: int = 0
    election_priority: int = 0
    #: the connection its heartbeats came over (closing it is the broker's death, as in Java)
    channel: object | None = None


Key = tuple[str, str, int]  # (clusterName, brokerName, brokerId)


class LivenessTable:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.brokers: dict[Key, BrokerLive] = {}

    def heartbeat(
        self,
        cluster_name: str,
        broker_name: str,
        broker_id: int,
        address: str,
        *,
        timeout: float | None = None,
        epoch: int | None = None,
        max_offset: int | None = None,
        confirm_offset: int | None = None,
        election_priority: int | None = None,
        channel: object | None = None,
    ) -> None:
        key = (cluster_name, broker_name, broker_id)
        live = self.brokers.get(key)
        if live is None:
            live = self.brokers[key] = BrokerLive(
                cluster_name, broker_name, broker_id, address, 0.0, DEFAULT_HEARTBEAT_TIMEOUT
            )
        live.address = address
        live.last_seen = self.clock()
        if channel is not None:
            live.channel = channel
        if timeout is not None and timeout > 0:
            live.timeout = timeout
        # Absent fields keep what the broker said before (Java updates only the values it was given).
        if epoch is not None:
            live.epoch = epoch
        if max_offset is not None:
            live.max_offset = max_offset
        if confirm_offset is not None:
            live.confirm_offset = confirm_offset
        if election_priority is not None:
            live.election_priority = election_priority

    def get(self, cluster_name: str, broker_name: str, broker_id: int) -> BrokerLive | None:
        return self.brokers.get((cluster_name, broker_name, broker_id))

    def is_alive(self, cluster_name: str, broker_name: str, broker_id: int) -> bool:
        live = self.brokers.get((cluster_name, broker_name, broker_id))
        return live is not None and self.clock() - live.last_seen <= live.timeout

    def expire(self) -> list[BrokerLive]:
        """Drop and return the brokers whose last heartbeat is older than their timeout."""
        now = self.clock()
        dead = [live for live in self.brokers.values() if now - live.last_seen > live.timeout]
        for live in dead:
            del self.brokers[(live.cluster_name, live.broker_name, live.broker_id)]
        return dead

    def drop_channel(self, channel: object) -> list[BrokerLive]:
        """Drop and return the brokers whose heartbeats came over ``channel`` (it closed)."""
        gone = [live for live in self.brokers.values() if live.channel is channel]
        for live in gone:
            del self.brokers[(live.cluster_name, live.broker_name, live.broker_id)]
        return gone

    def forget(self, broker_name: str, broker_ids: frozenset[int] = frozenset()) -> None:
        for key in [k for k in self.brokers if k[1] == broker_name and (not broker_ids or k[2] in broker_ids)]:
            del self.brokers[key]
