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
from rocketq.broker.metrics import FINISH_BUCKETS, BrokerMetrics
from rocketq.broker.processors.send import SendProcessor
from rocketq.broker.services.long_polling import PullHoldService
from rocketq.codes import RequestCode
from rocketq.protocol.topics import RETRY_PREFIX, is_system_topic
from rocketq.protocol.version import version_desc
from rocketq.remoting.busy_poll import BusyPoller
from rocketq.remoting.metrics_http import RpcLatency, histogram_buckets
from rocketq.replication import HAService
from rocketq.store import MessageStore
from rocketq.store.stats import SIZE_BUCKETS

#: 5.1's BrokerMetricsManager.isSystemGroup: groups whose lower-cased name starts with MixAll.CID_RMQ_SYS_PREFIX
SYS_GROUP_PREFIX = "cid_rmq_sys_"


class BrokerView(Protocol):
    """What the collector reads off the broker (``BrokerController``; a protocol, not an import: no cycle)."""

    config: BrokerConfig
    ctx: BrokerContext
    store: MessageStore
    metrics: BrokerMetrics
    send: SendProcessor
    pull_holds: PullHoldService
    ha: HAService
    busy_poller: BusyPoller | None


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
        yield from self._dlq_and_transactions(names, values)
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
        if b.busy_poller is not None:  # what polling before sleeping costs (busyPollMaxMicros): spun CPU seconds
            doc = "seconds the event loop spun with nothing to do, polling for the next request (busyPollMaxMicros)"
            c = CounterMetricFamily("rocketmq_busy_poll_idle_seconds", doc, labels=names)
            c.add_metric(values, b.busy_poller.idle_seconds)
            yield c
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
            row = [*values, topic, group, *_kind(topic, group)]
            out.add_metric(row, n)
            tput.add_metric(row, sizes.get(key, 0))
        yield out
        yield tput

    def _clients(self, names: list[str], values: list[str]) -> Iterator[Metric]:
        """5.1's labels: language and version lower-cased (``python``, ``v4_9_8``), ``protocol_type``; a
        consumer's group, ``consume_mode`` (pull/push) and ``is_system`` (a CID_RMQ_SYS_ group)."""
        ctx = self._broker.ctx
        labels = [*names, "language", "version", "protocol_type"]
        prod = GaugeMetricFamily("rocketmq_producer_connections", "producer connections", labels=labels)
        counts: defaultdict[tuple[str, str], int] = defaultdict(int)
        for channels in ctx.producers.groups.values():
            for ch in channels.values():
                counts[(ch.language.lower(), version_desc(ch.version).lower())] += 1
        for (lang, ver), n in sorted(counts.items()):
            prod.add_metric([*values, lang, ver, "remoting"], n)
        yield prod
        labels = [*names, "consumer_group", "language", "version", "consume_mode", "protocol_type", "is_system"]
        cons = GaugeMetricFamily("rocketmq_consumer_connections", "consumer connections", labels=labels)
        per: defaultdict[tuple[str, str, str, str], int] = defaultdict(int)
        for group, info in ctx.consumers.groups.items():
            mode = "push" if info.consume_type == "CONSUME_PASSIVELY" else "pull"
            for ch in info.channels.values():
                per[(group, ch.language.lower(), version_desc(ch.version).lower(), mode)] += 1
        for (group, lang, ver, mode), n in sorted(per.items()):
            system = str(group.lower().startswith(SYS_GROUP_PREFIX)).lower()
            cons.add_metric([*values, group, lang, ver, mode, "remoting", system], n)
        yield cons

    def _consumers(self, names: list[str], values: list[str]) -> Iterator[Metric]:
        """Per (group, topic) with committed offsets, as 5.1's ConsumerLagCalculator: lag (beyond the committed
        point) and its latency (age of the oldest unconsumed), in flight (pulled, not committed), ready (stored,
        not pulled) and queueing latency (age of the oldest not pulled). The pulled point is the last pull's
        next offset (``offsets.pulled``); a queue not pulled since start counts from its committed offset."""
        ctx, store = self._broker.ctx, self._broker.store
        labels = [*names, "topic", "consumer_group", "is_retry", "is_system"]
        ready = GaugeMetricFamily("rocketmq_consumer_ready_messages", "messages ready to consume", labels=labels)
        lag = GaugeMetricFamily("rocketmq_consumer_lag_messages", "messages not yet consumed", labels=labels)
        lat = GaugeMetricFamily("rocketmq_consumer_lag_latency", "age of the oldest unconsumed message (ms)",
                                labels=labels)  # fmt: skip
        inflight = GaugeMetricFamily("rocketmq_consumer_inflight_messages", "pulled, not yet committed",
                                     labels=labels)  # fmt: skip
        queueing = GaugeMetricFamily("rocketmq_consumer_queueing_latency", "age of the oldest message not yet "
                                     "pulled (ms)", labels=labels)  # fmt: skip
        now = int(time.time() * 1000)
        for topic, group, committed in sorted(ctx.offsets.items()):
            if ctx.topics.get(topic) is None:
                continue
            pulled_at = ctx.offsets.pulled_of(group, topic)
            behind = flying = waiting = oldest = oldest_unpulled = 0
            for qid, off in committed.items():
                top = max(store.get_max_offset_in_queue(topic, qid), 0)
                done = min(max(off, 0), top)
                pulled = min(max(pulled_at.get(qid, done), done), top)
                behind += top - done
                flying += pulled - done
                waiting += top - pulled
                if top > done:
                    oldest = max(oldest, _age(store, topic, qid, done, now))
                if top > pulled:
                    oldest_unpulled = max(oldest_unpulled, _age(store, topic, qid, pulled, now))
            row = [*values, topic, group, *_kind(topic, group)]
            ready.add_metric(row, waiting)
            lag.add_metric(row, behind)
            lat.add_metric(row, oldest)
            inflight.add_metric(row, flying)
            queueing.add_metric(row, oldest_unpulled)
        yield from (ready, lag, lat, inflight, queueing)

    def _dlq_and_transactions(self, names: list[str], values: list[str]) -> Iterator[Metric]:
        """5.1's DLQ counter and 5.2's transaction metrics, counted by the send-back and END_TRANSACTION paths."""
        m = self._broker.metrics
        dlq = CounterMetricFamily("rocketmq_send_to_dlq_messages_total", "messages sent to a dead-letter queue",
                                  labels=[*names, "consumer_group", "topic", "is_system"])  # fmt: skip
        for (group, topic), n in sorted(m.dlq.items()):
            dlq.add_metric([*values, group, topic, _kind(topic, group)[1]], n)
        yield dlq
        labels = [*names, "topic"]
        for name, doc, table in (
            ("rocketmq_commit_messages_total", "transactional messages committed", m.tx_commits),
            ("rocketmq_rollback_messages_total", "transactional messages rolled back", m.tx_rollbacks),
        ):
            c = CounterMetricFamily(name, doc, labels=labels)
            for topic, n in sorted(table.items()):
                c.add_metric([*values, topic], n)
            yield c
        hist = HistogramMetricFamily("rocketmq_finish_message_latency", "seconds from a half message's birth to its "
                                     "commit", labels=labels)  # fmt: skip
        for topic, (buckets, total) in sorted(m.tx_finish.items()):
            hist.add_metric([*values, topic], histogram_buckets(list(buckets), FINISH_BUCKETS), float(total[0]))
        yield hist
        g = GaugeMetricFamily("rocketmq_half_messages", "half messages not yet committed or rolled back",
                              labels=labels)  # fmt: skip
        for topic, n in sorted(m.tx_half.items()):
            g.add_metric([*values, topic], n)
        yield g

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


def _age(store: MessageStore, topic: str, qid: int, offset: int, now: int) -> int:
    """ms since the message at ``offset`` was stored (0: not found)."""
    ts = store.get_message_store_timestamp(topic, qid, offset)
    return now - ts if ts > 0 else 0


def _kind(topic: str, group: str) -> tuple[str, str]:
    """The ``is_retry`` and ``is_system`` label values of a (topic, group) row: 5.1 counts a system topic
    (TopicValidator.isSystemTopic) or a system group (a CID_RMQ_SYS_ name) as system."""
    system = is_system_topic(topic) or group.lower().startswith(SYS_GROUP_PREFIX)
    return str(topic.startswith(RETRY_PREFIX)).lower(), str(system).lower()


def broker_registry(broker: BrokerView) -> tuple[CollectorRegistry, RpcLatency]:
    rpc = RpcLatency()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(broker, rpc))
    return registry, rpc
