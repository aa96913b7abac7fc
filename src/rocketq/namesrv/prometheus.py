"""The name server's /metrics: ``rocketmq_rpc_latency`` (RocketMQ 5's remoting metric, measured at the gate) and
rocketq's own route-table gauges (RocketMQ 5.1's name server exports no metrics of its own)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rocketq.namesrv.route_info import RouteStatistics
from rocketq.remoting.metrics_http import RpcLatency


class NamesrvCollector(Collector):
    def __init__(self, address: Callable[[], str], routes: Callable[[], RouteStatistics], rpc: RpcLatency) -> None:
        self._address, self._routes, self._rpc = address, routes, rpc

    def collect(self) -> Iterator[Metric]:
        names, values = ["node_type", "node_id"], ["namesrv", self._address()]
        stats = self._routes()
        for name, doc, n in (
            ("rocketq_namesrv_topics", "topics in the route table", stats.topics),
            ("rocketq_namesrv_brokers", "brokers (master and slave addresses) registered", stats.brokers),
            ("rocketq_namesrv_live_brokers", "brokers whose heartbeat has not expired", stats.live_brokers),
            ("rocketq_namesrv_clusters", "clusters", stats.clusters),
        ):
            g = GaugeMetricFamily(name, doc, labels=names)
            g.add_metric(values, n)
            yield g
        yield self._rpc.family(names, values)


def namesrv_registry(address: Callable[[], str], routes: Callable[[], RouteStatistics]) -> tuple[
    CollectorRegistry, RpcLatency
]:  # fmt: skip
    rpc = RpcLatency()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NamesrvCollector(address, routes, rpc))
    return registry, rpc
