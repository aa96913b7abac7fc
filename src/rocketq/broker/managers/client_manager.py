"""Producer and consumer channels registered by heartbeats, with expiry of silent clients.

RocketMQ's ConsumerManager/ProducerManager: a consumer group records its members (client id → connection),
consume type, message model, consume-from-where and subscriptions (with their ``subVersion``). When the set of
members changes, every member gets NOTIFY_CONSUMER_IDS_CHANGED so it rebalances at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rocketq.protocol.bodies import ConsumerData, SubscriptionData
from rocketq.remoting.connection import Connection

log = logging.getLogger("rocketq.broker.clients")


@dataclass(slots=True)
class ClientChannel:
    client_id: str
    conn: Connection
    language: str
    version: int
    last_update: float


@dataclass(slots=True)
class ConsumerGroupInfo:
    group: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    channels: dict[str, ClientChannel] = field(default_factory=dict)  # client id → channel
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)  # topic → subscription
    last_update: float = 0.0

    def client_ids(self) -> list[str]:
        return sorted(self.channels)


GroupChanged = Callable[[str, ConsumerGroupInfo], None]


class ConsumerManager:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.groups: dict[str, ConsumerGroupInfo] = {}
        self.clock = clock
        self.on_members_changed: GroupChanged | None = None

    def register(self, conn: Connection, client_id: str, data: ConsumerData) -> bool:
        """Record a consumer heartbeat; True when the group's membership changed."""
        now = self.clock()
        info = self.groups.get(data.group_name)
        if info is None:
            info = ConsumerGroupInfo(data.group_name)
            self.groups[data.group_name] = info
        info.consume_type = data.consume_type
        info.message_model = data.message_model
        info.consume_from_where = data.consume_from_where
        info.last_update = now
        existing = info.channels.get(client_id)
        changed = existing is None or existing.conn is not conn
        info.channels[client_id] = ClientChannel(client_id, conn, conn.language, conn.version, now)
        # Subscriptions: a newer subVersion replaces; topics no longer listed are dropped (updateSubscription).
        new_topics = set()
        for sub in data.subscriptions:
            new_topics.add(sub.topic)
            old = info.subscriptions.get(sub.topic)
            if old is None or sub.sub_version > old.sub_version or old.sub_string != sub.sub_string:
                info.subscriptions[sub.topic] = sub
        for topic in [t for t in info.subscriptions if t not in new_topics]:
            del info.subscriptions[topic]
        if changed:
            self._notify(info)
        return changed

    def unregister(self, group: str, client_id: str) -> None:
        info = self.groups.get(group)
        if info is None or info.channels.pop(client_id, None) is None:
            return
        if not info.channels:
            del self.groups[group]
        self._notify(info)

    def connection_closed(self, conn: Connection) -> None:
        for info in list(self.groups.values()):
            gone = [cid for cid, ch in info.channels.items() if ch.conn is conn]
            for cid in gone:
                del info.channels[cid]
            if gone:
                log.info("consumer.removed group=%s clients=%s reason=closed", info.group, gone)
                if not info.channels:
                    del self.groups[info.group]
                self._notify(info)

    def scan_expired(self, expiry: float) -> None:
        now = self.clock()
        for info in list(self.groups.values()):
            gone = [cid for cid, ch in info.channels.items() if now - ch.last_update > expiry]
            for cid in gone:
                ch = info.channels.pop(cid)
                ch.conn.close()
            if gone:
                log.info("consumer.expired group=%s clients=%s", info.group, gone)
                if not info.channels:
                    del self.groups[info.group]
                self._notify(info)

    def _notify(self, info: ConsumerGroupInfo) -> None:
        if self.on_members_changed is not None:
            self.on_members_changed(info.group, info)

    def get(self, group: str) -> ConsumerGroupInfo | None:
        return self.groups.get(group)

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.groups.get(group)
        return info.subscriptions.get(topic) if info else None

    def groups_subscribing(self, topic: str) -> list[str]:
        return [g for g, info in self.groups.items() if topic in info.subscriptions]


class ProducerManager:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.groups: dict[str, dict[str, ClientChannel]] = {}
        self.clock = clock

    def register(self, conn: Connection, client_id: str, group: str) -> None:
        self.groups.setdefault(group, {})[client_id] = ClientChannel(
            client_id, conn, conn.language, conn.version, self.clock()
        )

    def unregister(self, group: str, client_id: str) -> None:
        channels = self.groups.get(group)
        if channels is not None:
            channels.pop(client_id, None)
            if not channels:
                del self.groups[group]

    def connection_closed(self, conn: Connection) -> None:
        for group, channels in list(self.groups.items()):
            for cid in [c for c, ch in channels.items() if ch.conn is conn]:
                del channels[cid]
            if not channels:
                del self.groups[group]

    def scan_expired(self, expiry: float) -> None:
        now = self.clock()
        for group, channels in list(self.groups.items()):
            for cid in [c for c, ch in channels.items() if now - ch.last_update > expiry]:
                channels.pop(cid).conn.close()
            if not channels:
                del self.groups[group]

    def find_channel(self, client_id: str) -> ClientChannel | None:
        """The live channel a client's producer heartbeats came on, whatever its group (request-reply)."""
        for channels in self.groups.values():
            ch = channels.get(client_id)
            if ch is not None and not ch.conn.closed:
                return ch
        return None

    def any_channel(self, group: str) -> ClientChannel | None:
        """A live channel of the group (for CHECK_TRANSACTION_STATE)."""
        for ch in self.groups.get(group, {}).values():
            if not ch.conn.closed:
                return ch
        return None
