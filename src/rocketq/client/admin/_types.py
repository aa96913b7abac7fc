"""What the admin client answers with."""

from __future__ import annotations

from dataclasses import dataclass, field

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
