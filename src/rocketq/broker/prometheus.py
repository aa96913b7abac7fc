"""RocketMQ 5.1's broker metrics (names and labels of BrokerMetricsConstant, RemotingMetricsConstant and
DefaultStoreMetricsConstant) for Prometheus, read at scrape time from the broker's one registry
(``BrokerMetrics``), its managers and the store. Only ``rocketmq_rpc_latency`` needs work per request (two
hooks at the gate, installed only while the endpoint is on); ``rocketmq_message_size`` is bucketed by the
store's put counter (one list bump per put).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from rocketq.broker import stats_items as si
from rocketq.broker.config import BrokerConfig
from rocketq.broker.context import BrokerContext
from rocketq.broker.metrics import BrokerMetrics
from rocketq.broker.processors.send import SendProcessor
from rocketq.broker.services.long_polling import PullHoldService
from rocketq.codes import RequestCode
from rocketq.protocol.topics import RETRY_PREFIX, is_system_topic
from rocketq.remoting.metrics_http import RpcLatency, histogram_buckets
from rocketq.replication import HAService
from rocketq.store import MessageStore
from rocketq.store.stats import SIZE_BUCKETS


class BrokerView(Protocol):
    """What the collector reads off the broker (``BrokerController``; a protocol, not an import: no cycle)."""

    config: BrokerConfig
    ctx: BrokerContext
    store: MessageStore
    metrics: BrokerMetrics
    send: SendProcessor
    pull_holds: PullHoldService
    ha: HAService


class BrokerCollector(Collector):
    def __init__(self, broker: BrokerView, rpc: RpcLatency) -> None:
        self._broker = broker
        self._rpc = rpc

    def _base(self) -> dict[str, str]:
        cfg = self._broker.config
        # node_id is the broker name, as in 5.1: Prometheus's own ``instance`` label tells a master from its slaves
        return {"cluster": cfg.brokerClusterName, "node_type": "broker", "node_id": cfg.brokerName}

    def collect(self) -> Iterator[Metric]:
        b = self._broker
        ctx, base = b.ctx, self._base()
        names, values = list(base), list(base.values())
        yield from self._messages(names, values)
        yield from self._clients(names, values)
        yield from self._consumers(names, values)
        # counts of what the broker holds
        for name, doc, n in (
            ("rocketmq_topic_number", "topics", len(ctx.topics.table)),
            ("rocketmq_consumer_group_number", "subscription groups", len(ctx.groups.table)),
        ):
            g = GaugeMetricFamily(name, doc, labels=names)
            g.add_metric(values, n)
            yield g
        g = GaugeMetricFamily("rocketmq_broker_permission", "broker permission (PermName bits)", labels=names)
        g.add_metric(values, b.config.brokerPermission)
        yield g
        g = GaugeMetricFamily("rocketmq_processor_watermark", "requests queued per processor",
                              labels=[*names, "processor"])  # fmt: skip
        g.add_metric([*values, "send"], b.send.queue_size())
        g.add_metric([*values, "pull"], b.pull_holds.held_count())
        yield g
        yield from self._store(names, values)
        yield from self._replication(names, values)
        yield from self._rpc_latency(names, values)

    def _messages(self, names: list[str], values: list[str]) -> Iterator[Metric]:
        store_stats = self._broker.store.stats_service
        labels = [*names, "topic", "message_type", "is_system"]
        msgs = CounterMetricFamily("rocketmq_messages_in_total", "messages stored", labels=labels)
        size = CounterMetricFamily("rocketmq_throughput_in_total", "bytes stored", labels=labels)
        for topic, (n, nbytes) in sorted(store_stats.per_topic.items()):
            row = [*values, topic, "normal", str(is_system_topic(topic)).lower()]
            msgs.add_metric(row, n)
            size.add_metric(row, nbytes)
        yield msgs
        yield size
        hist = HistogramMetricFamily("rocketmq_message_size", "size of stored messages (bytes)", labels=names)
        hist.add_metric(values, histogram_buckets(list(store_stats.size_buckets), SIZE_BUCKETS),
                        float(store_stats.put_bytes))  # fmt: skip
        yield hist
        labels = [*names, "topic", "consumer_group", "is_retry", "is_system"]
        out = CounterMetricFamily("rocketmq_messages_out_total", "messages handed to consumers", labels=labels)
        tput = CounterMetricFamily("rocketmq_throughput_out_total", "bytes handed to consumers", labels=labels)
        items = self._broker.metrics.items
        sizes = dict(items.totals(si.GROUP_GET_SIZE))
        for key, n in sorted(items.totals(si.GROUP_GET_NUMS)):
            topic, _, group = key.partition("@")
            row = [*values, topic, group, *_kind(topic)]
            out.add_metric(row, n)
            tput.add_metric(row, sizes.get(key, 0))
        yield out
        yield tput

    def _clients(self, names: list[str], values: list[str]) -> Iterator[Metric]:
        ctx = self._broker.ctx
        labels = [*names, "language", "version"]
        prod = GaugeMetricFamily("rocketmq_producer_connections", "producer connections", labels=labels)
        counts: defaultdict[tuple[str, str], int] = defaultdict(int)
        for channels in ctx.producers.groups.values():
            for ch in channels.values():
                counts[(ch.language, str(ch.version))] += 1
        for (lang, ver), n in sorted(counts.items()):
            prod.add_metric([*values, lang, ver], n)
        yield prod
        labels = [*names, "consumer_group", "language", "version", "consume_mode"]
        cons = GaugeMetricFamily("rocketmq_consumer_connections", "consumer connections", labels=labels)
        per: defaultdict[tuple[str, str, str, str], int] = defaultdict(int)
        for group, info in ctx.consumers.groups.items():
            mode = "push" if info.consume_type == "CONSUME_PASSIVELY" else "pull"
            for ch in info.channels.values():
                per[(group, ch.language, str(ch.version), mode)] += 1
        for key, n in sorted(per.items()):
            cons.add_metric([*values, *key], n)
        yield cons

    def _consumers(self, names: list[str], values: list[str]) -> Iterator[Metric]:
        """Per (group, topic) with committed offsets: ready (stored beyond the pulled point), lag (beyond the
        committed point), lag latency (age of the oldest unconsumed) and in flight (pulled, not committed)."""
        ctx, store = self._broker.ctx, self._broker.store
        labels = [*names, "topic", "consumer_group", "is_retry", "is_system"]
        ready = GaugeMetricFamily("rocketmq_consumer_ready_messages", "messages ready to consume", labels=labels)
        lag = GaugeMetricFamily("rocketmq_consumer_lag_messages", "messages not yet consumed", labels=labels)
        lat = GaugeMetricFamily("rocketmq_consumer_lag_latency", "age of the oldest unconsumed message (ms)",
                                labels=labels)  # fmt: skip
        inflight = GaugeMetricFamily("rocketmq_consumer_inflight_messages", "pulled, not yet committed",
                                     labels=labels)  # fmt: skip
        now = int(time.time() * 1000)
        for topic, group, committed in sorted(ctx.offsets.items()):
            if ctx.topics.get(topic) is None:
                continue
            behind = oldest = 0
            for qid, off in committed.items():
                top = max(store.get_max_offset_in_queue(topic, qid), 0)
                diff = max(top - max(off, 0), 0)
                behind += diff
                if diff > 0:
                    ts = store.get_message_store_timestamp(topic, qid, max(off, 0))
                    if ts > 0:
                        oldest = max(oldest, now - ts)
            row = [*values, topic, group, *_kind(topic)]
            # rocketq's pull path does not keep a pulled-but-uncommitted position: in flight reads 0, ready = lag
            ready.add_metric(row, behind)
            lag.add_metric(row, behind)
            lat.add_metric(row, oldest)
            inflight.add_metric(row, 0)
        yield from (ready, lag, lat, inflight)

    def _store(self, names: list[str], values: list[str]) -> Iterator[Metric]:
        store = self._broker.store
        labels = [*names, "storage_type", "storage_medium"]
        row = [*values, "local", "disk"]
        cl = store.commit_log
        for name, doc, n in (
            ("rocketmq_storage_size", "commit-log bytes held", cl.get_max_offset() - cl.get_min_offset()),
            ("rocketmq_storage_flush_behind_bytes", "bytes written, not flushed", store.bytes_to_flush()),
            # the dispatch (consume queues, index) runs inside the append: it is never behind
            ("rocketmq_storage_dispatch_behind_bytes", "bytes appended, not dispatched", 0),
        ):
            g = GaugeMetricFamily(name, doc, labels=labels)
            g.add_metric(row, max(n, 0))
            yield g

    def _replication(self, names: list[str], values: list[str]) -> Iterator[Metric]:
        """rocketq's own (5.1 has none on the broker): per connected slave, commit-log bytes it still lacks."""
        b = self._broker
        g = GaugeMetricFamily("rocketmq_replication_lag_bytes", "commit-log bytes a slave still lacks",
                              labels=[*names, "slave"])  # fmt: skip
        top = b.store.get_max_phy_offset()
        for conn in b.ha.master.connections:
            if conn.ack_offset >= 0:
                g.add_metric([*values, str(conn.slave_id if conn.slave_id is not None else conn.peer)],
                             max(top - conn.ack_offset, 0))  # fmt: skip
        yield g

    def _rpc_latency(self, names: list[str], values: list[str]) -> Iterator[Metric]:
        yield self._rpc.family(names, values, long_polling=(int(RequestCode.PULL_MESSAGE),))


def _kind(topic: str) -> tuple[str, str]:
    """The ``is_retry`` and ``is_system`` label values (5.1: a retry topic; TopicValidator.isSystemTopic)."""
    return str(topic.startswith(RETRY_PREFIX)).lower(), str(is_system_topic(topic)).lower()


def broker_registry(broker: BrokerView) -> tuple[CollectorRegistry, RpcLatency]:
    rpc = RpcLatency()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(broker, rpc))
    return registry, rpc
