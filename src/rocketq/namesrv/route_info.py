"""The name server's route tables: a pure state machine with an injected clock (no I/O, no asyncio).

Mirrors Apache RocketMQ 4.9.8 ``RouteInfoManager``:

* ``topic_queue_table``   topic → {brokerName → QueueData}
* ``broker_addr_table``   brokerName → BrokerData (cluster, name, {brokerId → addr})
* ``cluster_addr_table``  cluster → {brokerName}
* ``broker_live_table``   brokerAddr → BrokerLiveInfo (last update, DataVersion, channel, haServerAddr)
* ``filter_server_table`` brokerAddr → [filter server addr]

Rules kept from Java: only a master's (brokerId 0) topic configs touch ``topic_queue_table``, and only on its
first registration or when its DataVersion changed; a broker silent for ``broker_expiry`` seconds, or whose
channel closed, is removed together with its queue data and any cluster or topic left empty.

The route values (``QueueData``, ``BrokerData``) are frozen: a change to the tables puts a new value in place,
so a route handed out by ``pickup_topic_route_data`` shares them without copying.

A "channel" is whatever identifies the broker's connection (the server passes its ``Connection``); it is
compared by identity and never used here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from rocketq.codes import RequestCode
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE, DataVersion, TopicConfig
from rocketq.protocol.route import (
    MASTER_ID,
    BrokerData,
    QueueData,
    RegisterBrokerResult,
    TopicConfigSerializeWrapper,
    TopicRouteData,
)

log = logging.getLogger("rocketq.namesrv.route_info")

__all__ = [
    "BROKER_CHANNEL_EXPIRED_TIME",
    "BrokerLiveInfo",
    "Clock",
    "ExpiredBroker",
    "RegisterBrokerResult",
    "RouteInfoManager",
    "RouteStatistics",
]

BROKER_CHANNEL_EXPIRED_TIME = 120.0  # seconds (Java: 2 minutes)

# TopicSysFlag bits.
TOPIC_SYS_FLAG_UNIT = 0x1
TOPIC_SYS_FLAG_UNIT_SUB = 0x2

Clock = Callable[[], float]


@dataclass(slots=True)
class BrokerLiveInfo:
    last_update: float
    data_version: DataVersion
    channel: object
    ha_server_addr: str | None


@dataclass(frozen=True, slots=True)
class ExpiredBroker:
    broker_addr: str
    channel: object


@dataclass(slots=True)
class RouteInfoManager:
    """Route tables. ``clock`` returns seconds (monotonic is fine: it is only compared with itself)."""

    clock: Clock = time.monotonic
    broker_expiry: float = BROKER_CHANNEL_EXPIRED_TIME
    topic_queue_table: dict[str, dict[str, QueueData]] = field(default_factory=dict)
    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)
    broker_live_table: dict[str, BrokerLiveInfo] = field(default_factory=dict)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

    # ------------------------------------------------------------------------------------ registration

    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str | None,
        topic_config_wrapper: TopicConfigSerializeWrapper | None,
        filter_server_list: Sequence[str] | None,
        channel: object,
    ) -> RegisterBrokerResult:
        wrapper = topic_config_wrapper if topic_config_wrapper is not None else TopicConfigSerializeWrapper()
        if self._is_stale(broker_name, broker_addr, broker_id, wrapper.data_version):
            return RegisterBrokerResult()
        self.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)

        register_first = False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            register_first = True
            broker_data = BrokerData(cluster_name, broker_name, {})
        # A slave switched to master: the same ip:port must appear under one id only.
        addrs = {bid: addr for bid, addr in broker_data.broker_addrs.items() if addr != broker_addr or bid == broker_id}
        old_addr = addrs.get(broker_id)
        addrs[broker_id] = broker_addr
        broker_data = replace(broker_data, broker_addrs=addrs)
        self.broker_addr_table[broker_name] = broker_data
        if broker_id == MASTER_ID and old_addr != broker_addr:
            log.info(
                "broker.master_changed cluster=%s broker=%s old=%s new=%s",
                broker_data.cluster, broker_name, old_addr, broker_addr,
            )  # fmt: skip
        register_first = register_first or old_addr is None

        if (
            topic_config_wrapper is not None
            and broker_id == MASTER_ID
            and (self.is_broker_topic_config_changed(broker_addr, wrapper.data_version) or register_first)
        ):
            for tc in wrapper.topic_config_table.values():
                self._create_and_update_queue_data(broker_name, tc)

        prev = self.broker_live_table.get(broker_addr)
        self.broker_live_table[broker_addr] = BrokerLiveInfo(
            self.clock(), wrapper.data_version, channel, ha_server_addr
        )
        if prev is None:
            log.info("broker.registered addr=%s ha=%s cluster=%s name=%s id=%s",
                     broker_addr, ha_server_addr, cluster_name, broker_name, broker_id)

        if filter_server_list is not None:
            if filter_server_list:
                self.filter_server_table[broker_addr] = list(filter_server_list)
            else:
                self.filter_server_table.pop(broker_addr, None)

        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            if master_addr is not None:
                master_live = self.broker_live_table.get(master_addr)
                if master_live is not None:
                    return RegisterBrokerResult(master_addr=master_addr, ha_server_addr=master_live.ha_server_addr)
        return RegisterBrokerResult()

    def _is_stale(self, broker_name: str, broker_addr: str, broker_id: int, version: DataVersion) -> bool:
        """Java 5.x fencing: another alive address holds ``broker_id`` with a higher ``stateVersion`` (a newer
        master epoch), so this registration comes from a stale master. It is dropped: its address leaves the
        live table and every id of the group, and the answer names no master (Java answers an empty result)."""
        data = self.broker_addr_table.get(broker_name)
        holder = data.broker_addrs.get(broker_id) if data is not None else None
        if data is None or holder is None or holder == broker_addr:
            return False
        live = self.broker_live_table.get(holder)
        if live is None or live.data_version.state_version <= version.state_version:
            return False
        log.warning(
            "broker.stale_registration_refused broker=%s id=%s addr=%s stateVersion=%s holder=%s holderVersion=%s",
            broker_name, broker_id, broker_addr, version.state_version, holder, live.data_version.state_version,
        )  # fmt: skip
        addrs = {bid: addr for bid, addr in data.broker_addrs.items() if addr != broker_addr}
        self.broker_addr_table[broker_name] = replace(data, broker_addrs=addrs)
        self.broker_live_table.pop(broker_addr, None)
        return True

    def is_broker_topic_config_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        prev = self.query_broker_topic_config(broker_addr)
        return prev is None or prev != data_version

    def query_broker_topic_config(self, broker_addr: str) -> DataVersion | None:
        live = self.broker_live_table.get(broker_addr)
        return live.data_version if live is not None else None

    def update_broker_info_update_timestamp(self, broker_addr: str) -> None:
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update = self.clock()

    def _create_and_update_queue_data(self, broker_name: str, tc: TopicConfig) -> None:
        qd = QueueData(
            broker_name=broker_name,
            read_queue_nums=tc.read_queue_nums,
            write_queue_nums=tc.write_queue_nums,
            perm=tc.perm,
            topic_sys_flag=tc.topic_sys_flag,
        )
        by_broker = self.topic_queue_table.get(tc.topic_name)
        if by_broker is None:
            self.topic_queue_table[tc.topic_name] = {broker_name: qd}
            log.info("topic.registered topic=%s queue_data=%s", tc.topic_name, qd)
            return
        old = by_broker.get(broker_name)
        by_broker[broker_name] = qd
        if old is not None and old != qd:
            log.info("topic.changed topic=%s old=%s new=%s", tc.topic_name, old, qd)

    def unregister_broker(self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        removed = self.broker_live_table.pop(broker_addr, None)
        log.info("broker.unregistered addr=%s live=%s", broker_addr, removed is not None)
        self.filter_server_table.pop(broker_addr, None)
        remove_broker_name = False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is not None:
            addrs = {bid: addr for bid, addr in broker_data.broker_addrs.items() if bid != broker_id}
            if addrs:
                self.broker_addr_table[broker_name] = replace(broker_data, broker_addrs=addrs)
            else:
                del self.broker_addr_table[broker_name]
                remove_broker_name = True
        if remove_broker_name:
            names = self.cluster_addr_table.get(cluster_name)
            if names is not None:
                names.discard(broker_name)
                if not names:
                    del self.cluster_addr_table[cluster_name]
            self._remove_topic_by_broker_name(broker_name)

    def _remove_topic_by_broker_name(self, broker_name: str) -> None:
        for topic in list(self.topic_queue_table):
            by_broker = self.topic_queue_table[topic]
            if by_broker.pop(broker_name, None) is not None:
                log.info("topic.broker_removed topic=%s broker=%s", topic, broker_name)
            if not by_broker:
                del self.topic_queue_table[topic]
                log.info("topic.removed topic=%s", topic)

    # ------------------------------------------------------------------------------------------ queries

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """The route of ``topic``, or None when no queue data or no broker data is known for it."""
        by_broker = self.topic_queue_table.get(topic)
        if by_broker is None:
            return None
        broker_datas: list[BrokerData] = []
        filter_servers: dict[str, tuple[str, ...]] = {}
        for broker_name in sorted(by_broker):
            bd = self.broker_addr_table.get(broker_name)
            if bd is None:
                continue
            broker_datas.append(bd)  # frozen: shared, not copied
            if self.filter_server_table:
                for addr in bd.broker_addrs.values():
                    servers = self.filter_server_table.get(addr)
                    if servers is not None:
                        filter_servers[addr] = tuple(servers)
        if not broker_datas:
            return None
        return TopicRouteData(
            tuple(qd for _, qd in sorted(by_broker.items())),
            tuple(broker_datas),
            filter_server_table=filter_servers,
        )

    def get_all_topic_list(self) -> list[str]:
        return list(self.topic_queue_table)

    def get_topics_by_cluster(self, cluster: str) -> list[str]:
        names = self.cluster_addr_table.get(cluster, set())
        return [
            topic
            for topic, by_broker in self.topic_queue_table.items()
            if any(name in by_broker for name in names)
        ]

    def get_system_topic_list(self) -> tuple[list[str], str | None]:
        """Cluster names and broker names (Java lists them as "system topics"), plus one broker address."""
        topics: list[str] = []
        for cluster, names in self.cluster_addr_table.items():
            topics.append(cluster)
            topics.extend(sorted(names))
        broker_addr = None
        for bd in self.broker_addr_table.values():
            if bd.broker_addrs:
                broker_addr = bd.broker_addrs[min(bd.broker_addrs)]
                break
        return _unique(topics), broker_addr

    def _topics_where(self, pick: Callable[[QueueData], bool]) -> list[str]:
        # Java looks at one (the first) QueueData of each topic.
        out = []
        for topic, by_broker in self.topic_queue_table.items():
            first = next(iter(by_broker.values()), None)
            if first is not None and pick(first):
                out.append(topic)
        return out

    def get_unit_topics(self) -> list[str]:
        return self._topics_where(lambda qd: bool(qd.topic_sys_flag & TOPIC_SYS_FLAG_UNIT))

    def get_has_unit_sub_topic_list(self) -> list[str]:
        return self._topics_where(lambda qd: bool(qd.topic_sys_flag & TOPIC_SYS_FLAG_UNIT_SUB))

    def get_has_unit_sub_ununit_topic_list(self) -> list[str]:
        return self._topics_where(
            lambda qd: not qd.topic_sys_flag & TOPIC_SYS_FLAG_UNIT and bool(qd.topic_sys_flag & TOPIC_SYS_FLAG_UNIT_SUB)
        )

    # -------------------------------------------------------------------------------------- admin ops

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """Drop a topic everywhere, or only its queues on the brokers of ``cluster_name``."""
        if not cluster_name:
            self.topic_queue_table.pop(topic, None)
            return
        names = self.cluster_addr_table.get(cluster_name)
        by_broker = self.topic_queue_table.get(topic)
        if not names or by_broker is None:
            return
        for name in names:
            by_broker.pop(name, None)
        if not by_broker:
            del self.topic_queue_table[topic]

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, RequestCode.WIPE_WRITE_PERM_OF_BROKER)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, RequestCode.ADD_WRITE_PERM_OF_BROKER)

    def _operate_write_perm(self, broker_name: str, code: RequestCode) -> int:
        count = 0
        for by_broker in self.topic_queue_table.values():
            qd = by_broker.get(broker_name)
            if qd is None:
                continue
            # Adding sets exactly READ|WRITE, dropping any other bit, as Java does.
            perm = qd.perm & ~PERM_WRITE if code == RequestCode.WIPE_WRITE_PERM_OF_BROKER else PERM_READ | PERM_WRITE
            by_broker[broker_name] = replace(qd, perm=perm)
            count += 1
        return count

    # --------------------------------------------------------------------------------------- liveness

    def scan_not_active_broker(self) -> list[ExpiredBroker]:
        """Remove brokers not heard from for ``broker_expiry`` s; the caller closes the returned channels."""
        now = self.clock()
        expired = [
            ExpiredBroker(addr, live.channel)
            for addr, live in self.broker_live_table.items()
            if live.last_update + self.broker_expiry < now
        ]
        for item in expired:
            log.warning("broker.expired addr=%s after=%.1fs", item.broker_addr, self.broker_expiry)
            self._remove_broker_addr(item.broker_addr)
        return expired

    def on_channel_destroy(self, remote_addr: str | None, channel: object) -> None:
        """A broker's connection is gone: forget the broker registered over it.

        As Java does, the broker is found by its channel, falling back to ``remote_addr`` (the peer address)
        when no live broker used this channel. Unlike Java (which stops at the first), every broker registered
        over the channel is removed: one rocketq process may register several brokers over one connection.
        """
        found = (
            [addr for addr, live in self.broker_live_table.items() if live.channel is channel]
            if channel is not None
            else []
        )
        for addr in found:
            log.info("broker.channel_destroyed addr=%s", addr)
            self._remove_broker_addr(addr)
        if not found and remote_addr:
            self._remove_broker_addr(remote_addr)

    def _remove_broker_addr(self, found: str) -> None:
        self.broker_live_table.pop(found, None)
        self.filter_server_table.pop(found, None)

        broker_name_found: str | None = None
        remove_broker_name = False
        for name in list(self.broker_addr_table):
            bd = self.broker_addr_table[name]
            addrs = bd.broker_addrs
            # Only the first id with this address goes, as in Java.
            bid = next((bid for bid, addr in addrs.items() if addr == found), None)
            if bid is not None:
                broker_name_found = bd.broker_name
                addrs = {b: a for b, a in addrs.items() if b != bid}
                self.broker_addr_table[name] = replace(bd, broker_addrs=addrs)
            if not addrs:
                remove_broker_name = True
                del self.broker_addr_table[name]
            if broker_name_found is not None:
                break

        if broker_name_found is not None and remove_broker_name:
            for cluster in list(self.cluster_addr_table):
                names = self.cluster_addr_table[cluster]
                if broker_name_found in names:
                    names.discard(broker_name_found)
                    if not names:
                        del self.cluster_addr_table[cluster]
                    break
        if remove_broker_name and broker_name_found is not None:
            self._remove_topic_by_broker_name(broker_name_found)

    # ---------------------------------------------------------------------------------------- snapshot

    def statistics(self) -> RouteStatistics:
        return RouteStatistics(
            topics=len(self.topic_queue_table),
            brokers=len(self.broker_addr_table),
            clusters=len(self.cluster_addr_table),
            live_brokers=len(self.broker_live_table),
        )


@dataclass(frozen=True, slots=True)
class RouteStatistics:
    topics: int
    brokers: int
    clusters: int
    live_brokers: int


def _unique(items: list[str]) -> list[str]:
    # Java's TopicList is a HashSet.
    return list(dict.fromkeys(items))
