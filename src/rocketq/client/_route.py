"""Topic routes (GET_ROUTEINFO_BY_TOPIC) and the publish / subscribe queue lists derived from them.

Pure functions and small value classes; ``ClientInstance`` keeps the tables. Rules from Java
``MQClientInstance.topicRouteData2TopicPublishInfo`` / ``topicRouteData2TopicSubscribeInfo``:

* publish: when ``orderTopicConf`` is set (``"brokerA:4;brokerB:8"``) it alone decides the queues; otherwise
  every writable QueueData, sorted by broker name, whose broker has a master (id 0) contributes queue ids
  ``0 … writeQueueNums-1``;
* subscribe: every readable QueueData contributes ``0 … readQueueNums-1`` (masters not required);
* TBW102 fallback: a topic the name server does not know is published through the route of ``TBW102``
  with ``min(defaultTopicQueueNums, readQueueNums)`` queues per broker; the broker then auto-creates it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE, MessageQueue
from rocketq.protocol.fastjson import loads
from rocketq.protocol.topics import AUTO_CREATE_TOPIC, DLQ_PREFIX, RETRY_PREFIX, dlq_topic, retry_topic

__all__ = [
    "AUTO_CREATE_TOPIC_KEY",
    "DLQ_GROUP_TOPIC_PREFIX",
    "MASTER_ID",
    "RETRY_GROUP_TOPIC_PREFIX",
    "BrokerData",
    "QueueData",
    "TopicPublishInfo",
    "TopicRouteData",
    "dlq_topic",
    "retry_topic",
    "to_publish_info",
    "to_subscribe_info",
    "with_default_queue_nums",
]

MASTER_ID = 0
# The client's (Java MixAll's) names for these; producer and consumers still import them from here.
AUTO_CREATE_TOPIC_KEY = AUTO_CREATE_TOPIC
RETRY_GROUP_TOPIC_PREFIX = RETRY_PREFIX
DLQ_GROUP_TOPIC_PREFIX = DLQ_PREFIX


@dataclass(frozen=True, slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @property
    def writable(self) -> bool:
        return bool(self.perm & PERM_WRITE)

    @property
    def readable(self) -> bool:
        return bool(self.perm & PERM_READ)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }


@dataclass(frozen=True, slots=True)
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str]

    def select_broker_addr(self) -> str | None:
        """The master's address, else any (Java ``BrokerData.selectBrokerAddr``)."""
        addr = self.broker_addrs.get(MASTER_ID)
        if addr is None and self.broker_addrs:
            return random.choice(list(self.broker_addrs.values()))
        return addr

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrs": {str(k): v for k, v in sorted(self.broker_addrs.items())},
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }


@dataclass(frozen=True, slots=True)
class TopicRouteData:
    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    order_topic_conf: str | None = None
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview) -> TopicRouteData:
        return cls.from_json(loads(body))

    @classmethod
    def from_json(cls, obj: Any) -> TopicRouteData:
        if not isinstance(obj, dict):
            raise ProtocolError("TopicRouteData is not a JSON object")
        try:
            qds = tuple(
                QueueData(
                    broker_name=str(q["brokerName"]),
                    read_queue_nums=int(q.get("readQueueNums", 0)),
                    write_queue_nums=int(q.get("writeQueueNums", 0)),
                    perm=int(q.get("perm", 0)),
                    topic_sys_flag=int(q.get("topicSysFlag", q.get("topicSynFlag", 0)) or 0),
                )
                for q in obj.get("queueDatas") or []
            )
            bds = tuple(
                BrokerData(
                    cluster=str(b.get("cluster", "")),
                    broker_name=str(b["brokerName"]),
                    broker_addrs={int(k): str(v) for k, v in (b.get("brokerAddrs") or {}).items()},
                )
                for b in obj.get("brokerDatas") or []
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ProtocolError(f"bad TopicRouteData: {exc}") from exc
        conf = obj.get("orderTopicConf")
        fst = obj.get("filterServerTable") or {}
        return cls(qds, bds, str(conf) if conf else None, {str(k): list(v) for k, v in fst.items()})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerDatas": [b.to_json() for b in self.broker_datas],
            "filterServerTable": self.filter_server_table,
            "queueDatas": [q.to_json() for q in self.queue_datas],
        }
        if self.order_topic_conf:
            out["orderTopicConf"] = self.order_topic_conf
        return out

    def broker(self, name: str) -> BrokerData | None:
        for bd in self.broker_datas:
            if bd.broker_name == name:
                return bd
        return None


def with_default_queue_nums(route: TopicRouteData, default_topic_queue_nums: int) -> TopicRouteData:
    """The TBW102 fallback: every QueueData gets ``min(default_topic_queue_nums, readQueueNums)`` queues."""
    qds = []
    for q in route.queue_datas:
        n = min(default_topic_queue_nums, q.read_queue_nums)
        qds.append(replace(q, read_queue_nums=n, write_queue_nums=n))
    return replace(route, queue_datas=tuple(qds))


class TopicPublishInfo:
    """The queues a producer may send a topic's messages to, plus the round-robin cursor."""

    __slots__ = ("have_topic_router_info", "message_queues", "order_topic", "route", "send_which_queue")

    def __init__(
        self,
        message_queues: list[MessageQueue] | None = None,
        route: TopicRouteData | None = None,
        order_topic: bool = False,
        have_topic_router_info: bool = False,
    ) -> None:
        self.message_queues: list[MessageQueue] = message_queues or []
        self.route = route
        self.order_topic = order_topic
        self.have_topic_router_info = have_topic_router_info
        # Java ThreadLocalIndex starts at a random non-negative int.
        self.send_which_queue = random.getrandbits(31)

    def ok(self) -> bool:
        return bool(self.message_queues)

    def next_index(self) -> int:
        self.send_which_queue = (self.send_which_queue + 1) & 0x7FFFFFFF
        return self.send_which_queue

    def select_one_message_queue(self, last_broker_name: str | None = None) -> MessageQueue:
        """Round robin; on a retry, skip queues of the broker that just failed (if another exists)."""
        n = len(self.message_queues)
        if last_broker_name is not None:
            for _ in range(n):
                mq = self.message_queues[self.next_index() % n]
                if mq.broker_name != last_broker_name:
                    return mq
        return self.message_queues[self.next_index() % n]

    def write_queue_nums_of(self, broker_name: str | None) -> int:
        """Java ``getQueueIdByBroker``: the writeQueueNums of a writable broker, else -1."""
        if self.route is None or broker_name is None:
            return -1
        for q in self.route.queue_datas:
            if q.writable and q.broker_name == broker_name:
                return q.write_queue_nums
        return -1

    def __repr__(self) -> str:
        return f"TopicPublishInfo(order_topic={self.order_topic}, queues={self.message_queues!r})"


def to_publish_info(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    mqs: list[MessageQueue] = []
    if route.order_topic_conf:
        for item in route.order_topic_conf.split(";"):
            if not item:
                continue
            name, _, nums = item.partition(":")
            mqs.extend(MessageQueue(topic, name, i) for i in range(int(nums)))
        return TopicPublishInfo(mqs, route, order_topic=True)
    for q in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if not q.writable:
            continue
        bd = route.broker(q.broker_name)
        if bd is None or MASTER_ID not in bd.broker_addrs:
            continue
        mqs.extend(MessageQueue(topic, q.broker_name, i) for i in range(q.write_queue_nums))
    return TopicPublishInfo(mqs, route, order_topic=False)


def to_subscribe_info(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    return {
        MessageQueue(topic, q.broker_name, i) for q in route.queue_datas if q.readable for i in range(q.read_queue_nums)
    }
