"""Latency fault avoidance (Java MQFaultStrategy / LatencyFaultToleranceImpl) with an injected clock."""

from __future__ import annotations

from rocketq.client._route import to_publish_info
from rocketq.client.latency import LatencyFaultTolerance, MQFaultStrategy
from rocketq.protocol.route import BrokerData, QueueData, TopicRouteData

ROUTE = TopicRouteData(
    (QueueData("a", 2, 2, 6), QueueData("b", 2, 2, 6)),
    (BrokerData("c", "a", {0: "1:1"}), BrokerData("c", "b", {0: "2:2"})),
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def test_not_available_duration_table() -> None:
    s = MQFaultStrategy(True)
    assert [s.compute_not_available_duration(ms) for ms in (0, 49, 100, 549, 550, 999, 1000, 2000, 3000, 15000,
                                                             30000)] == [
        0, 0, 0, 0, 30000, 30000, 60000, 120000, 180000, 600000, 600000,
    ]  # fmt: skip


def test_failed_broker_is_avoided_until_its_time_passes() -> None:
    clock = Clock()
    s = MQFaultStrategy(True, clock)
    info = to_publish_info("T", ROUTE)
    s.update_fault_item("a", 10, isolation=True)  # counts as 30 s latency → 600 s
    assert all(s.select_one_message_queue(info, None).broker_name == "b" for _ in range(10))
    clock.now += 600_000
    assert {s.select_one_message_queue(info, None).broker_name for _ in range(10)} == {"a", "b"}


def test_disabled_strategy_records_nothing() -> None:
    s = MQFaultStrategy(False)
    s.update_fault_item("a", 99999, True)
    assert "a" not in s.latency_fault_tolerance


def test_all_unavailable_picks_a_better_half_broker() -> None:
    clock = Clock()
    s = MQFaultStrategy(True, clock)
    info = to_publish_info("T", ROUTE)
    s.update_fault_item("a", 600, False)  # 30 s
    s.update_fault_item("b", 2500, False)  # 120 s
    picked = s.select_one_message_queue(info, None)
    assert picked.broker_name == "a"  # lower latency sorts first; half = 1 → always the best
    assert 0 <= picked.queue_id < 2


def test_tolerance_ordering_and_removal() -> None:
    clock = Clock()
    lft = LatencyFaultTolerance(clock)
    assert lft.pick_one_at_least() is None
    lft.update_fault_item("x", 5, 0)
    lft.update_fault_item("y", 1, 1000)
    assert lft.is_available("x") and not lft.is_available("y") and lft.is_available("unknown")
    assert lft.pick_one_at_least() == "x"  # available items sort first
    lft.remove("x")
    assert lft.pick_one_at_least() == "y"
