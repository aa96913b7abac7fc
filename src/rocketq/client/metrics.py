"""Client-side metrics with the RocketMQ 5.x clients' names (rocketmq-clients ``MetricName``), for Prometheus.

Opt-in: give a client a ``ClientMetrics`` through its config (``ClientConfig(metrics=ClientMetrics())``; every
producer and consumer built on that config records into it). Without one nothing is timed or counted, and the
send and consume paths pay one ``is None`` test. With one, each send / listener call costs a clock read and a
histogram observation (the labelled children are cached per label set).

* ``rocketmq_send_cost_time`` (histogram, ms; ``topic``, ``client_id``, ``invocation_status``): one per
  ``send`` / ``send_async`` / batch sent, retries included, success or failure.
* ``rocketmq_delivery_latency`` (histogram, ms; ``topic``, ``client_id``, ``consumer_group``): per pulled
  message, from its store time on the broker to its arrival in the consumer (push and lite pull).
* ``rocketmq_await_time`` (histogram, ms; same labels): per consumed batch of the concurrent push consumer, from
  its arrival to the start of its listener call.
* ``rocketmq_process_time`` (histogram, ms; the labels and ``invocation_status``): per listener call.
* ``rocketq_consume_messages_total`` (counter; the same labels): rocketq's own, messages consumed OK
  (``success``) or failed (``failure``) as Java 4.x's consumeOKTPS / consumeFailedTPS count them —
  ``rate()`` of it is the consume OK / failed TPS.

The registry is ``prometheus_client``'s default unless one is given; serve it as any Python program does
(``prometheus_client.start_http_server(port)``, or ``generate_latest(metrics.registry)`` in a web handler).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

if TYPE_CHECKING:
    from rocketq.client.message import MessageExt

__all__ = ["ClientMetrics", "default_metrics"]

#: rocketmq-clients HistogramBuckets (milliseconds)
SEND_BUCKETS = (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
DELIVERY_BUCKETS = (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
AWAIT_BUCKETS = (1.0, 5.0, 20.0, 100.0, 1000.0, 5000.0, 10000.0)
PROCESS_BUCKETS = (1.0, 5.0, 10.0, 100.0, 1000.0, 10000.0, 60000.0)

SUCCESS, FAILURE = "success", "failure"


class ClientMetrics:
    """One set of client metrics in ``registry`` (a registry holds one set: share the object, or pass another
    registry). See the module docstring."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = REGISTRY if registry is None else registry
        consumer = ["topic", "client_id", "consumer_group"]
        self.send_cost = Histogram("rocketmq_send_cost_time", "send cost time (ms)",
                                   ["topic", "client_id", "invocation_status"], buckets=SEND_BUCKETS,
                                   registry=self.registry)  # fmt: skip
        self.delivery = Histogram("rocketmq_delivery_latency", "store to arrival in the consumer (ms)", consumer,
                                  buckets=DELIVERY_BUCKETS, registry=self.registry)  # fmt: skip
        self.await_time = Histogram("rocketmq_await_time", "arrival to the start of consumption (ms)", consumer,
                                    buckets=AWAIT_BUCKETS, registry=self.registry)  # fmt: skip
        self.process = Histogram("rocketmq_process_time", "listener call time (ms)", [*consumer, "invocation_status"],
                                 buckets=PROCESS_BUCKETS, registry=self.registry)  # fmt: skip
        self.consumed = Counter("rocketq_consume_messages", "messages consumed, by outcome",
                                [*consumer, "invocation_status"], registry=self.registry)  # fmt: skip
        # labelled children by label values: .labels() takes a lock and validates on every call
        self._children: dict[tuple[Any, ...], Any] = {}

    def _child(self, metric: Histogram | Counter, *values: str) -> Any:
        key = (id(metric), *values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    # -- producer ---------------------------------------------------------------------------------------------

    def on_send(self, topic: str, client_id: str, began: float, ok: bool) -> None:
        """A send API call ended (``began``: its ``time.perf_counter()``)."""
        ms = (time.perf_counter() - began) * 1000
        self._child(self.send_cost, topic, client_id, SUCCESS if ok else FAILURE).observe(ms)

    # -- consumers --------------------------------------------------------------------------------------------

    def on_arrived(self, topic: str, client_id: str, group: str, msgs: Sequence[MessageExt]) -> None:
        """Pulled messages reached the consumer: their delivery latency (clamped at 0: clocks differ)."""
        if not msgs:
            return
        child = self._child(self.delivery, topic, client_id, group)
        now = time.time() * 1000
        for m in msgs:
            child.observe(max(now - m.store_timestamp, 0.0))

    def on_await(self, topic: str, client_id: str, group: str, arrived: float) -> None:
        """A batch's listener call starts (``arrived``: ``time.perf_counter()`` when it was handed over)."""
        self._child(self.await_time, topic, client_id, group).observe((time.perf_counter() - arrived) * 1000)

    def on_process(self, topic: str, client_id: str, group: str, ms: float, ok: bool) -> None:
        self._child(self.process, topic, client_id, group, SUCCESS if ok else FAILURE).observe(ms)

    def on_consumed(self, topic: str, client_id: str, group: str, ok: int, failed: int) -> None:
        if ok:
            self._child(self.consumed, topic, client_id, group, SUCCESS).inc(ok)
        if failed:
            self._child(self.consumed, topic, client_id, group, FAILURE).inc(failed)


_default: ClientMetrics | None = None


def default_metrics() -> ClientMetrics:
    """The process's one ``ClientMetrics`` on prometheus_client's default registry (made on first use)."""
    global _default
    if _default is None:
        _default = ClientMetrics()
    return _default
