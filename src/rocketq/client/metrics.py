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
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from rocketq.client.message import MessageExt

__all__ = ["ClientMetrics", "default_metrics"]

#: rocketmq-clients HistogramBuckets (milliseconds)
SEND_BUCKETS = (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
DELIVERY_BUCKETS = (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
AWAIT_BUCKETS = (1.0, 5.0, 20.0, 100.0, 1000.0, 5000.0, 10000.0)
PROCESS_BUCKETS = (1.0, 5.0, 10.0, 100.0, 1000.0, 10000.0, 60000.0)

SUCCESS, FAILURE = "success", "failure"


class _Histogram:
    """Per label values: bucket counts (``le`` bounds, then +Inf) and the sum. A plain list bump per
    observation: prometheus_client's own Histogram takes a lock and checks exemplars on every ``observe``
    (≈ 3 µs on this machine, most of a metered send's extra cost)."""

    __slots__ = ("bounds", "doc", "labels", "name", "series")

    def __init__(self, name: str, doc: str, labels: list[str], bounds: tuple[float, ...]) -> None:
        self.name, self.doc, self.labels, self.bounds = name, doc, labels, bounds
        self.series: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}

    def observe(self, key: tuple[str, ...], value: float) -> None:
        entry = self.series.get(key)
        if entry is None:
            entry = self.series[key] = ([0] * (len(self.bounds) + 1), [0.0])
        entry[0][bisect_left(self.bounds, value)] += 1
        entry[1][0] += value

    def family(self) -> HistogramMetricFamily:
        fam = HistogramMetricFamily(self.name, self.doc, labels=self.labels)
        for key, (counts, total) in sorted(self.series.items()):
            cumulative, running = [], 0
            for bound, n in zip((*(str(b) for b in self.bounds), "+Inf"), counts, strict=True):
                running += n
                cumulative.append((bound, float(running)))
            fam.add_metric(list(key), cumulative, total[0])
        return fam


class ClientMetrics(Collector):
    """One set of client metrics, registered in ``registry`` (prometheus_client's default when None; a registry
    holds one set: share the object, or pass another registry). See the module docstring."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = REGISTRY if registry is None else registry
        consumer = ["topic", "client_id", "consumer_group"]
        self.send_cost = _Histogram("rocketmq_send_cost_time", "send cost time (ms)",
                                    ["topic", "client_id", "invocation_status"], SEND_BUCKETS)  # fmt: skip
        self.delivery = _Histogram("rocketmq_delivery_latency", "store to arrival in the consumer (ms)", consumer,
                                   DELIVERY_BUCKETS)  # fmt: skip
        self.await_time = _Histogram("rocketmq_await_time", "arrival to the start of consumption (ms)", consumer,
                                     AWAIT_BUCKETS)  # fmt: skip
        self.process = _Histogram("rocketmq_process_time", "listener call time (ms)", [*consumer, "invocation_status"],
                                  PROCESS_BUCKETS)  # fmt: skip
        #: (topic, client id, group, status) → messages consumed
        self.consumed: dict[tuple[str, str, str, str], int] = {}
        self.registry.register(self)

    def describe(self) -> Iterator[Metric]:
        """The names only: lets the registry refuse a second set of the same metrics."""
        for hist in (self.send_cost, self.delivery, self.await_time, self.process):
            yield HistogramMetricFamily(hist.name, hist.doc, labels=hist.labels)
        yield CounterMetricFamily("rocketq_consume_messages", "messages consumed, by outcome", labels=[])

    def collect(self) -> Iterator[Metric]:
        for hist in (self.send_cost, self.delivery, self.await_time, self.process):
            yield hist.family()
        fam = CounterMetricFamily("rocketq_consume_messages", "messages consumed, by outcome",
                                  labels=["topic", "client_id", "consumer_group", "invocation_status"])  # fmt: skip
        for key, n in sorted(self.consumed.items()):
            fam.add_metric(list(key), n)
        yield fam

    # -- producer ---------------------------------------------------------------------------------------------

    def on_send(self, topic: str, client_id: str, began: float, ok: bool) -> None:
        """A send API call ended (``began``: its ``time.perf_counter()``)."""
        self.send_cost.observe((topic, client_id, SUCCESS if ok else FAILURE), (time.perf_counter() - began) * 1000)

    # -- consumers --------------------------------------------------------------------------------------------

    def on_arrived(self, topic: str, client_id: str, group: str, msgs: Sequence[MessageExt]) -> None:
        """Pulled messages reached the consumer: their delivery latency (clamped at 0: clocks differ)."""
        hist, key, now = self.delivery, (topic, client_id, group), time.time() * 1000
        for m in msgs:
            hist.observe(key, max(now - m.store_timestamp, 0.0))

    def on_await(self, topic: str, client_id: str, group: str, arrived: float) -> None:
        """A batch's listener call starts (``arrived``: ``time.perf_counter()`` when it was handed over)."""
        self.await_time.observe((topic, client_id, group), (time.perf_counter() - arrived) * 1000)

    def on_process(self, topic: str, client_id: str, group: str, ms: float, ok: bool) -> None:
        self.process.observe((topic, client_id, group, SUCCESS if ok else FAILURE), ms)

    def on_consumed(self, topic: str, client_id: str, group: str, ok: int, failed: int) -> None:
        table = self.consumed
        for status, n in ((SUCCESS, ok), (FAILURE, failed)):
            if n:
                key = (topic, client_id, group, status)
                table[key] = table.get(key, 0) + n


_default: ClientMetrics | None = None


def default_metrics() -> ClientMetrics:
    """The process's one ``ClientMetrics`` on prometheus_client's default registry (made on first use)."""
    global _default
    if _default is None:
        _default = ClientMetrics()
    return _default
