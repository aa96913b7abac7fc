"""Route → publish / subscribe queue lists, the TBW102 fallback, and queue selection."""

from __future__ import annotations

from rocketq.client._route import TopicPublishInfo, to_publish_info
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.route import BrokerData, QueueData, TopicRouteData, to_subscribe_info, with_default_queue_nums

ROUTE = TopicRouteData(
    queue_datas=(
        QueueData("broker-b", 2, 3, 6),
        QueueData("broker-a", 4, 2, 6),
        QueueData("broker-c", 2, 2, 4),  # read-only
        QueueData("broker-d", 1, 1, 6),  # no master
    ),
    broker_datas=(
        BrokerData("c1", "broker-a", {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}),
        BrokerData("c1", "broker-b", {0: "10.0.0.3:10911"}),
        BrokerData("c1", "broker-c", {0: "10.0.0.4:10911"}),
        BrokerData("c1", "broker-d", {1: "10.0.0.5:10911"}),
    ),
)


def test_publish_list_sorted_by_broker_writable_with_master() -> None:
    info = to_publish_info("T", ROUTE)
    assert [(m.broker_name, m.queue_id) for m in info.message_queues] == [
        ("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1), ("broker-b", 2),
    ]  # fmt: skip
    assert not info.order_topic
    assert info.write_queue_nums_of("broker-b") == 3
    assert info.write_queue_nums_of("broker-c") == -1


def test_subscribe_list_readable_queues_without_master_requirement() -> None:
    mqs = to_subscribe_info("T", ROUTE)
    assert len(mqs) == 4 + 2 + 2 + 1
    assert MessageQueue("T", "broker-d", 0) in mqs


def test_order_topic_conf_overrides_queue_datas() -> None:
    route = TopicRouteData(ROUTE.queue_datas, ROUTE.broker_datas, order_topic_conf="broker-b:2;broker-a:1")
    info = to_publish_info("T", route)
    assert info.order_topic
    assert [(m.broker_name, m.queue_id) for m in info.message_queues] == [("broker-b", 0), ("broker-b", 1),
                                                                            ("broker-a", 0)]  # fmt: skip


def test_tbw102_fallback_uses_min_of_default_and_read_queue_nums() -> None:
    tbw = TopicRouteData((QueueData("broker-a", 8, 8, 7), QueueData("broker-b", 2, 2, 7)), ROUTE.broker_datas[:2])
    info = to_publish_info("NewTopic", with_default_queue_nums(tbw, 4))
    assert [(m.topic, m.broker_name, m.queue_id) for m in info.message_queues] == [
        ("NewTopic", "broker-a", i) for i in range(4)
    ] + [("NewTopic", "broker-b", i) for i in range(2)]


def test_select_avoids_last_broker_when_possible() -> None:
    info = to_publish_info("T", ROUTE)
    for _ in range(20):
        assert info.select_one_message_queue("broker-a").broker_name == "broker-b"
    single = TopicPublishInfo([MessageQueue("T", "x", 0)])
    assert single.select_one_message_queue("x").broker_name == "x"


def test_round_robin_covers_every_queue() -> None:
    info = to_publish_info("T", ROUTE)
    seen = {info.select_one_message_queue() for _ in range(len(info.message_queues))}
    assert seen == set(info.message_queues)
