"""What the admin client answers with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rocketq.protocol.bodies import MessageQueue


@dataclass(frozen=True, slots=True)
class TopicQueueStatus:
    """One queue of GET_TOPIC_STATS_INFO."""

    message_queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_timestamp: int


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """One queue of GET_CONSUME_STATS; ``lag`` = broker offset − consumer offset."""

    message_queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    last_timestamp: int

    @property
    def lag(self) -> int:
        return max(0, self.broker_offset - max(self.consumer_offset, 0))


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    client_id: str
    client_addr: str
    language: str
    version: int


@dataclass(slots=True)
class ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST."""

    connections: list[ConnectionInfo]
    consume_type: str = ""
    message_model: str = ""
    consume_from_where: str = ""
    subscriptions: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class GroupSummary:
    """One consumer group at a glance (mqadmin consumerProgress without ``-g``)."""

    group: str
    count: int = 0  #: clients connected
    min_version: int | None = None  #: the lowest MQVersion ordinal among them
    consume_type: str = ""
    message_model: str = ""
    consume_tps: float = 0.0
    diff_total: int = 0  #: broker offset − consumer offset, summed over the group's queues


@dataclass(slots=True)
class BrokerInfo:
    cluster: str
    broker_name: str
    broker_id: int
    addr: str
    runtime: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SubscriptionGroupInfo:
    """One broker's SubscriptionGroupConfig of a group (GET_ALL_SUBSCRIPTIONGROUP_CONFIG), Java's field names."""

    broker_addr: str
    config: dict[str, Any]

    @property
    def group_name(self) -> str:
        return str(self.config.get("groupName", ""))


@dataclass(frozen=True, slots=True)
class GroupTopicStats:
    """One group's consumption of one topic on one broker (an entry of GET_BROKER_CONSUME_STATS)."""

    group: str
    topic: str
    consume_tps: float
    queues: list[QueueProgress]

    @property
    def diff_total(self) -> int:
        return sum(q.broker_offset - q.consumer_offset for q in self.queues)


@dataclass(slots=True)
class BrokerConsumeStats:
    """GET_BROKER_CONSUME_STATS (mqadmin brokerConsumeStats)."""

    broker_addr: str
    total_diff: int
    entries: list[GroupTopicStats] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TopicGroupStats:
    """A row of mqadmin statsAll: a topic (and one of its consumer groups, or none) over the whole cluster."""

    topic: str
    group: str  #: "" for a topic without consumers
    accumulation: int
    in_tps: float
    out_tps: float
    in_msg_24h: int
    out_msg_24h: int


def connection_set(obj: Any) -> list[ConnectionInfo]:
    """The ``connectionSet`` of a producer or consumer connection answer (204/203), sorted by client id."""
    conns = [
        ConnectionInfo(
            str(c.get("clientId", "")),
            str(c.get("clientAddr", "")),
            str(c.get("language", "")),
            int(c.get("version", 0)),
        )
        for c in (obj or {}).get("connectionSet") or []
        if isinstance(c, dict)
    ]
    return sorted(conns, key=lambda c: c.client_id)


@dataclass(slots=True)
class PopInflight:
    """A POP group on one topic of one broker: popped and not acked, of which still invisible, and ready."""

    broker_addr: str
    group: str
    topic: str
    inflight: int
    invisible: int
    ready: int
