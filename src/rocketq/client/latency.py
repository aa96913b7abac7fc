"""Latency-based broker fault avoidance for producers (Java ``MQFaultStrategy`` + ``LatencyFaultToleranceImpl``).

With ``send_latency_fault_enable`` on, every send records its latency per broker; a slow or failed broker is
avoided for a while:

=============  =====  =====  ======  ======  ======  ======  =======
latency ≥ ms      50    100     550    1000    2000    3000    15000
avoid for ms       0      0   30000   60000  120000  180000   600000
=============  =====  =====  ======  ======  ======  ======  =======

A failed send (``isolation``) counts as 30 000 ms of latency, so the broker is avoided for 600 s.
Queue choice: round robin over the publish list, skipping unavailable brokers; when every broker is
unavailable, pick one of the better half of the fault items ("not best broker").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rocketq.client._route import TopicPublishInfo
from rocketq.protocol.bodies import MessageQueue

__all__ = ["LatencyFaultTolerance", "MQFaultStrategy"]

Clock = Callable[[], int]


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(slots=True)
class _FaultItem:
    name: str
    current_latency: int
    start_timestamp: int


class LatencyFaultTolerance:
    """Per-broker fault items; a broker is available again once ``start_timestamp`` has passed."""

    def __init__(self, clock: Clock = _now_ms) -> None:
        self._clock = clock
        self._items: dict[str, _FaultItem] = {}
        self._which_item_worst = 0

    def update_fault_item(self, name: str, current_latency: int, not_available_duration: int) -> None:
        start = self._clock() + not_available_duration
        item = self._items.get(name)
        if item is None:
            self._items[name] = _FaultItem(name, current_latency, start)
        else:
            item.current_latency = current_latency
            item.start_timestamp = start

    def is_available(self, name: str) -> bool:
        item = self._items.get(name)
        return item is None or self._clock() - item.start_timestamp >= 0

    def remove(self, name: str | None) -> None:
        if name is not None:
            self._items.pop(name, None)

    def pick_one_at_least(self) -> str | None:
        """Among all fault items sorted (available first, then lower latency, then earlier start), one of the
        better half, rotating."""
        if not self._items:
            return None
        now = self._clock()
        items = sorted(
            self._items.values(),
            key=lambda it: (0 if now - it.start_timestamp >= 0 else 1, it.current_latency, it.start_timestamp),
        )
        half = len(items) // 2
        if half <= 0:
            return items[0].name
        self._which_item_worst = (self._which_item_worst + 1) & 0x7FFFFFFF
        return items[self._which_item_worst % half].name

    def __contains__(self, name: object) -> bool:
        return name in self._items


class MQFaultStrategy:
    """Chooses the queue for each send attempt; records latencies when ``send_latency_fault_enable``."""

    LATENCY_MAX = (50, 100, 550, 1000, 2000, 3000, 15000)
    NOT_AVAILABLE_DURATION = (0, 0, 30000, 60000, 120000, 180000, 600000)

    def __init__(self, send_latency_fault_enable: bool = False, clock: Clock = _now_ms) -> None:
        self.send_latency_fault_enable = send_latency_fault_enable
        self.latency_fault_tolerance = LatencyFaultTolerance(clock)
        self.latency_max: tuple[int, ...] = self.LATENCY_MAX
        self.not_available_duration: tuple[int, ...] = self.NOT_AVAILABLE_DURATION

    def select_one_message_queue(self, info: TopicPublishInfo, last_broker_name: str | None) -> MessageQueue:
        if not self.send_latency_fault_enable:
            return info.select_one_message_queue(last_broker_name)
        lft = self.latency_fault_tolerance
        n = len(info.message_queues)
        index = info.next_index()
        for _ in range(n):
            mq = info.message_queues[index % n]
            index += 1
            if lft.is_available(mq.broker_name):
                return mq
        not_best = lft.pick_one_at_least()
        write_queue_nums = info.write_queue_nums_of(not_best)
        if write_queue_nums > 0:
            mq = info.select_one_message_queue()
            if not_best is not None:
                return MessageQueue(mq.topic, not_best, info.next_index() % write_queue_nums)
            return mq
        lft.remove(not_best)
        return info.select_one_message_queue()

    def update_fault_item(self, broker_name: str, current_latency_ms: int, isolation: bool) -> None:
        if self.send_latency_fault_enable:
            duration = self.compute_not_available_duration(30000 if isolation else current_latency_ms)
            self.latency_fault_tolerance.update_fault_item(broker_name, current_latency_ms, duration)

    def compute_not_available_duration(self, current_latency_ms: int) -> int:
        for i in range(len(self.latency_max) - 1, -1, -1):
            if current_latency_ms >= self.latency_max[i]:
                return self.not_available_duration[i]
        return 0
