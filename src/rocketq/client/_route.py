"""The publish queue list a producer derives from a topic route (``TopicPublishInfo``).

The route classes, the subscribe list and the TBW102 shaping live in ``rocketq.protocol.route``, the topic
names in ``rocketq.protocol.topics``. Rules from Java ``MQClientInstance.topicRouteData2TopicPublishInfo``
and ``topicRouteData2TopicSubscribeInfo``:

* publish: when ``orderTopicConf`` is set (``"brokerA:4;brokerB:8"``) it alone decides the queues; otherwise
  every writable QueueData, sorted by broker name, whose broker has a master (id 0) contributes queue ids
  ``0 … writeQueueNums-1``;
* subscribe: every readable QueueData contributes ``0 … readQueueNums-1`` (masters not required);
* TBW102 fallback: a topic the name server does not know is published through the route of ``TBW102``
  with ``min(defaultTopicQueueNums, readQueueNums)`` queues per broker; the broker then auto-creates it.
"""

from __future__ import annotations

import random

from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.route import (
    MASTER_ID,
    TopicRouteData,
)

__all__ = ["TopicPublishInfo", "to_publish_info"]


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
