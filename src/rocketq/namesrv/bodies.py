"""Name-server bodies that only the name server writes: cluster info, topic lists and KV tables.

Routes, the registration body and the data version live in ``rocketq.protocol.route`` (shared with brokers
and clients). These writers follow the same rules (protocol reference §3.9): members in alphabetical order,
``brokerAddrs`` keys quoted and sorted by id, non-ASCII text escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rocketq.protocol.bodies import dumps_ascii
from rocketq.protocol.route import BrokerData

__all__ = ["encode_cluster_info", "encode_kv_table", "encode_topic_list"]


def encode_cluster_info(
    broker_addr_table: Mapping[str, BrokerData], cluster_addr_table: Mapping[str, set[str]]
) -> bytes:
    """GET_BROKER_CLUSTER_INFO body (``ClusterInfo``)."""
    return dumps_ascii(
        {
            "brokerAddrTable": {name: bd.to_json() for name, bd in sorted(broker_addr_table.items())},
            "clusterAddrTable": {c: sorted(names) for c, names in sorted(cluster_addr_table.items())},
        }
    )


def encode_topic_list(topics: list[str], broker_addr: str | None = None) -> bytes:
    """``TopicList``: ``{"brokerAddr":..?, "topicList":[...]}`` (brokerAddr omitted when None)."""
    out: dict[str, Any] = {}
    if broker_addr is not None:
        out["brokerAddr"] = broker_addr
    out["topicList"] = topics
    return dumps_ascii(out)


def encode_kv_table(table: dict[str, str]) -> bytes:
    return dumps_ascii({"table": dict(sorted(table.items()))})
