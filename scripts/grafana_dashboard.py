"""Write deploy/grafana/dashboards/rocketq.json: the Grafana dashboard of the broker's and the name server's
metrics (docs/metrics.md). The JSON is generated so that its 30-odd panels share one layout and one set of
filters; edit this file, not the JSON, then run

    python scripts/grafana_dashboard.py          # rewrites the JSON
    python scripts/grafana_dashboard.py --check  # exit 1 when the JSON is not what this script writes

tests/deploy/test_deploy.py checks that every metric the queries name is on a live rocketq's /metrics page.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "dashboards" / "rocketq.json"
DS = {"type": "prometheus", "uid": "${datasource}"}
#: the filters of every broker query: the dashboard's cluster and broker variables
BROKER = 'cluster=~"$cluster", node_id=~"$broker"'
NAMESRV = 'node_type="namesrv"'
RATE = "[$__rate_interval]"

Panel = dict[str, Any]


def target(expr: str, legend: str = "", ref: str = "A") -> dict[str, Any]:
    return {"datasource": DS, "expr": expr, "legendFormat": legend or "__auto", "refId": ref}


def timeseries(title: str, unit: str, *targets: dict[str, Any], desc: str = "", stack: bool = False) -> Panel:
    custom: dict[str, Any] = {"fillOpacity": 10, "showPoints": "never", "lineWidth": 1}
    if stack:
        custom["stacking"] = {"mode": "normal", "group": "A"}
    return {
        "type": "timeseries", "title": title, "description": desc, "datasource": DS, "targets": list(targets),
        "fieldConfig": {"defaults": {"unit": unit, "custom": custom}, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
                    "tooltip": {"mode": "multi", "sort": "desc"}},
    }  # fmt: skip


def stat(title: str, expr: str, desc: str = "", unit: str = "none", mappings: list[Any] | None = None) -> Panel:
    return {
        "type": "stat", "title": title, "description": desc, "datasource": DS, "targets": [target(expr)],
        "fieldConfig": {"defaults": {"unit": unit, "mappings": mappings or []}, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": "value", "graphMode": "area", "textMode": "auto"},
    }  # fmt: skip


def table(title: str, expr: str, desc: str = "") -> Panel:
    """An instant table of a gauge's current values, one row per label set."""
    t = target(expr) | {"instant": True, "format": "table"}
    return {
        "type": "table", "title": title, "description": desc, "datasource": DS, "targets": [t],
        "fieldConfig": {"defaults": {}, "overrides": []},
        "transformations": [{"id": "organize", "options": {"excludeByName": {"Time": True}}}],
        "options": {"showHeader": True},
    }  # fmt: skip


def quantiles(metric: str, by: str, selector: str, unit: str, title: str, desc: str) -> Panel:
    """p50 and p99 of a histogram, per ``by``."""
    rate = f"sum by (le{', ' + by if by else ''}) (rate({metric}_bucket{{{selector}}}{RATE}))"
    label = f"{{{{{by}}}}} " if by else ""
    return timeseries(
        title, unit,
        target(f"histogram_quantile(0.5, {rate})", f"{label}p50", "A"),
        target(f"histogram_quantile(0.99, {rate})", f"{label}p99", "B"),
        desc=desc,
    )  # fmt: skip


PERMISSIONS = [{"type": "value", "options": {
    "6": {"text": "read + write", "color": "green"}, "4": {"text": "read only", "color": "orange"},
    "2": {"text": "write only", "color": "orange"}, "0": {"text": "none", "color": "red"},
}}]  # fmt: skip

SECTIONS: list[tuple[str, list[tuple[int, Panel]]]] = [
    ("Overview", [
        (4, stat("Topics", f'sum(rocketmq_topic_number{{{BROKER}}})', "topics the brokers hold")),
        (4, stat("Consumer groups", f'sum(rocketmq_consumer_group_number{{{BROKER}}})', "subscription groups")),
        (4, stat("Broker permission", f'min(rocketmq_broker_permission{{{BROKER}}})',
                 "brokerPermission: 6 read and write, 4 read only (wipeWritePerm), 2 write only",
                 mappings=PERMISSIONS)),
        (4, stat("Producer connections", f'sum(rocketmq_producer_connections{{{BROKER}}})')),
        (4, stat("Consumer connections", f'sum(rocketmq_consumer_connections{{{BROKER}}})')),
        (4, stat("Live brokers (name servers)", f'max(rocketq_namesrv_live_brokers{{{NAMESRV}}})',
                 "brokers whose heartbeat has not expired, as the name servers see them")),
    ]),
    ("Messages", [
        (12, timeseries("Messages in / s per topic", "short", target(
            f'sum by (topic) (rate(rocketmq_messages_in_total{{{BROKER}, topic=~"$topic"}}{RATE}))', "{{topic}}"),
            desc="messages stored per second (rocketmq_messages_in_total)", stack=True)),
        (12, timeseries("Messages out / s per topic and group", "short", target(
            f'sum by (topic, consumer_group) (rate(rocketmq_messages_out_total{{{BROKER}, topic=~"$topic", '
            f'consumer_group=~"$group"}}{RATE}))', "{{topic}} → {{consumer_group}}"),
            desc="messages pulled by consumers per second (rocketmq_messages_out_total)", stack=True)),
        (12, timeseries("Bytes in / s per topic", "Bps", target(
            f'sum by (topic) (rate(rocketmq_throughput_in_total{{{BROKER}, topic=~"$topic"}}{RATE}))', "{{topic}}"),
            desc="bytes stored per second, whole records (rocketmq_throughput_in_total)", stack=True)),
        (12, timeseries("Bytes out / s per topic and group", "Bps", target(
            f'sum by (topic, consumer_group) (rate(rocketmq_throughput_out_total{{{BROKER}, topic=~"$topic", '
            f'consumer_group=~"$group"}}{RATE}))', "{{topic}} → {{consumer_group}}"),
            desc="bytes pulled by consumers per second (rocketmq_throughput_out_total)", stack=True)),
        (12, quantiles("rocketmq_message_size", "", BROKER, "bytes", "Message size",
                       "p50 / p99 of stored message sizes (rocketmq_message_size; buckets 1 KiB … 4 MiB)")),
        (12, timeseries("Messages in / s per broker", "short", target(
            f'sum by (node_id) (rate(rocketmq_messages_in_total{{{BROKER}}}{RATE}))', "{{node_id}}"),
            desc="messages stored per second, per broker")),
    ]),
    ("Consumers", [
        (12, timeseries("Consumer lag (messages)", "short", target(
            f'sum by (consumer_group, topic) (rocketmq_consumer_lag_messages{{{BROKER}, topic=~"$topic", '
            f'consumer_group=~"$group"}})', "{{consumer_group}} @ {{topic}}"),
            desc="Σ (queue max offset − committed offset) per group and topic, as `rocketq group progress`")),
        (12, timeseries("Consumer lag latency", "ms", target(
            f'max by (consumer_group, topic) (rocketmq_consumer_lag_latency{{{BROKER}, topic=~"$topic", '
            f'consumer_group=~"$group"}})', "{{consumer_group}} @ {{topic}}"),
            desc="age of the oldest message a group has not consumed (0: none)")),
        (8, timeseries("Ready messages", "short", target(
            f'sum by (consumer_group, topic) (rocketmq_consumer_ready_messages{{{BROKER}, topic=~"$topic", '
            f'consumer_group=~"$group"}})', "{{consumer_group}} @ {{topic}}"),
            desc="stored, not yet pulled by the group")),
        (8, timeseries("In-flight messages", "short", target(
            f'sum by (consumer_group, topic) (rocketmq_consumer_inflight_messages{{{BROKER}, topic=~"$topic", '
            f'consumer_group=~"$group"}})', "{{consumer_group}} @ {{topic}}"),
            desc="pulled, offset not yet committed")),
        (8, timeseries("Queueing latency", "ms", target(
            f'max by (consumer_group, topic) (rocketmq_consumer_queueing_latency{{{BROKER}, topic=~"$topic", '
            f'consumer_group=~"$group"}})', "{{consumer_group}} @ {{topic}}"),
            desc="age of the oldest message the group has not pulled yet (0: none)")),
        (12, timeseries("Consumer connections per group", "short", target(
            f'sum by (consumer_group, consume_mode) (rocketmq_consumer_connections{{{BROKER}, '
            f'consumer_group=~"$group"}})', "{{consumer_group}} ({{consume_mode}})"),
            desc="consumers heartbeating to the brokers")),
        (12, table("Producer connections by client", f'sum by (language, version) '
                   f'(rocketmq_producer_connections{{{BROKER}}})', "producers heartbeating, by client language "
                   "and version")),
    ]),
    ("Dead letters and transactions", [
        (12, timeseries("Sent to the DLQ / s", "short", target(
            f'sum by (consumer_group, topic) (rate(rocketmq_send_to_dlq_messages_total{{{BROKER}, '
            f'consumer_group=~"$group"}}{RATE}))', "{{consumer_group}} @ {{topic}}"),
            desc="messages that ran out of retries and went to %DLQ%<group> (rocketmq_send_to_dlq_messages_total)")),
        (12, timeseries("Transactions ended / s", "short",
            target(f'sum by (topic) (rate(rocketmq_commit_messages_total{{{BROKER}, topic=~"$topic"}}{RATE}))',
                   "commit {{topic}}", "A"),
            target(f'sum by (topic) (rate(rocketmq_rollback_messages_total{{{BROKER}, topic=~"$topic"}}{RATE}))',
                   "rollback {{topic}}", "B"),
            desc="half messages committed and rolled back per second")),
        (12, quantiles("rocketmq_finish_message_latency", "topic", f'{BROKER}, topic=~"$topic"', "s",
                       "Transaction finish latency", "from a half message's birth to its commit")),
        (12, timeseries("Half messages", "short", target(
            f'sum by (topic) (rocketmq_half_messages{{{BROKER}, topic=~"$topic"}})', "{{topic}}"),
            desc="transactional messages waiting for their commit or rollback")),
    ]),
    ("Requests", [
        (12, timeseries("Broker requests / s by code", "reqps", target(
            f'sum by (request_code, response_code) (rate(rocketmq_rpc_latency_count{{{BROKER}}}{RATE}))',
            "request {{request_code}} → {{response_code}}"),
            desc="answers per second per request code and response code (RequestCode / ResponseCode numbers)")),
        (12, quantiles("rocketmq_rpc_latency", "request_code", f'{BROKER}, is_long_polling="false"', "ms",
                       "Broker request latency",
                       "from dispatch to answer, per request code; long-polling pulls excluded")),
        (12, timeseries("Processor watermark", "short", target(
            f'sum by (processor) (rocketmq_processor_watermark{{{BROKER}}})', "{{processor}}"),
            desc="send requests queued; pulls held for long polling")),
        (12, quantiles("rocketmq_rpc_latency", "", f'{BROKER}, is_long_polling="true"', "ms",
                       "Pull latency (long polling)", "pulls, whose answer may wait for a message up to the "
                       "consumer's suspend time: high values are idle consumers, not a slow broker")),
        (12, timeseries("Busy polling (share of a core)", "percentunit", target(
            f'sum by (node_id) (rate(rocketmq_busy_poll_idle_seconds_total{{{BROKER}}}{RATE}))', "{{node_id}}"),
            desc="CPU the broker's loop spends spinning for the next request instead of sleeping "
                 "(busyPollMaxMicros; 0 turns it off)")),
    ]),
    ("Storage", [
        (8, timeseries("Commit log size", "bytes", target(
            f'sum by (node_id) (rocketmq_storage_size{{{BROKER}}})', "{{node_id}}"),
            desc="commit-log bytes held (max − min offset)")),
        (8, timeseries("Flush behind", "bytes", target(
            f'max by (node_id) (rocketmq_storage_flush_behind_bytes{{{BROKER}}})', "{{node_id}}"),
            desc="written, not yet flushed to disk")),
        (8, timeseries("Dispatch behind", "bytes", target(
            f'max by (node_id) (rocketmq_storage_dispatch_behind_bytes{{{BROKER}}})', "{{node_id}}"),
            desc="commit log not yet dispatched to consume queues (0 on rocketq: dispatch is inside the append)")),
    ]),
    ("Replication", [
        (24, timeseries("Replication lag per slave", "bytes", target(
            f'max by (node_id, slave) (rocketmq_replication_lag_bytes{{{BROKER}}})', "{{node_id}} → slave {{slave}}"),
            desc="commit-log bytes a connected slave has not acknowledged (empty without slaves)")),
    ]),
    ("Name servers", [
        (6, stat("Topics in routes", f'max(rocketq_namesrv_topics{{{NAMESRV}}})')),
        (6, stat("Brokers registered", f'max(rocketq_namesrv_brokers{{{NAMESRV}}})')),
        (6, stat("Clusters", f'max(rocketq_namesrv_clusters{{{NAMESRV}}})')),
        (6, stat("Live brokers", f'min(rocketq_namesrv_live_brokers{{{NAMESRV}}})',
                 "the fewest any name server sees: a name server that lost brokers shows here")),
        (12, timeseries("Name server requests / s by code", "reqps", target(
            f'sum by (node_id, request_code) (rate(rocketmq_rpc_latency_count{{{NAMESRV}}}{RATE}))',
            "{{node_id}} {{request_code}}"), desc="route look-ups (105), registrations (103), …")),
        (12, quantiles("rocketmq_rpc_latency", "request_code", NAMESRV, "ms", "Name server request latency",
                       "from dispatch to answer, per request code")),
    ]),
]  # fmt: skip


def variable(name: str, label: str, query: str, multi: bool = True) -> dict[str, Any]:
    return {
        "name": name, "label": label, "type": "query", "datasource": DS, "refresh": 2, "sort": 1,
        "query": {"query": query, "refId": name}, "definition": query,
        "multi": multi, "includeAll": True, "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
    }  # fmt: skip


def dashboard() -> dict[str, Any]:
    panels: list[Panel] = []
    y, ident = 0, 1
    for title, row in SECTIONS:
        panels.append({"type": "row", "title": title, "collapsed": False, "id": ident, "panels": [],
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}})  # fmt: skip
        ident, y, x, line = ident + 1, y + 1, 0, 0
        for width, panel in row:
            height = 4 if panel["type"] == "stat" else 8
            if x + width > 24:  # a new line, below the tallest panel of this one
                x, y, line = 0, y + line, 0
            panels.append(panel | {"id": ident, "gridPos": {"h": height, "w": width, "x": x, "y": y}})
            ident, x, line = ident + 1, x + width, max(line, height)
        y += line
    templating = [
        {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
         "current": {}, "hide": 0, "refresh": 1},
        variable("cluster", "Cluster", "label_values(rocketmq_broker_permission, cluster)"),
        variable("broker", "Broker", 'label_values(rocketmq_broker_permission{cluster=~"$cluster"}, node_id)'),
        variable("topic", "Topic", f"label_values(rocketmq_messages_in_total{{{BROKER}}}, topic)"),
        variable("group", "Consumer group",
                 f"label_values(rocketmq_consumer_lag_messages{{{BROKER}}}, consumer_group)"),
    ]  # fmt: skip
    return {
        "uid": "rocketq-overview", "title": "rocketq", "tags": ["rocketq", "rocketmq"],
        "description": "rocketq brokers and name servers (RocketMQ 5.1 metric names; docs/metrics.md)",
        "editable": True, "graphTooltip": 1, "refresh": "30s", "schemaVersion": 39, "version": 1,
        "time": {"from": "now-1h", "to": "now"}, "timezone": "",
        "templating": {"list": templating}, "annotations": {"list": []}, "links": [], "panels": panels,
    }  # fmt: skip


def render() -> str:
    return json.dumps(dashboard(), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    text = render()
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run python scripts/grafana_dashboard.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
