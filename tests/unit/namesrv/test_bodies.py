"""Name-server-only bodies: exact cluster-info, topic-list and KV-table bytes."""

from __future__ import annotations

from rocketq.namesrv.bodies import encode_cluster_info, encode_kv_table, encode_topic_list
from rocketq.protocol.route import BrokerData


def test_cluster_info_bytes() -> None:
    body = encode_cluster_info(
        {"b": BrokerData("C1", "b", {0: "h:2"}), "a": BrokerData("C1", "a", {1: "h:1b", 0: "h:1"})},
        {"C1": {"b", "a"}},
    )
    assert body == (
        b'{"brokerAddrTable":{"a":{"brokerAddrs":{"0":"h:1","1":"h:1b"},"brokerName":"a","cluster":"C1"},'
        b'"b":{"brokerAddrs":{"0":"h:2"},"brokerName":"b","cluster":"C1"}},"clusterAddrTable":{"C1":["a","b"]}}'
    )


def test_topic_list_bytes() -> None:
    assert encode_topic_list(["T1", "T2"]) == b'{"topicList":["T1","T2"]}'
    assert encode_topic_list([], "h:1") == b'{"brokerAddr":"h:1","topicList":[]}'


def test_kv_table_bytes() -> None:
    assert encode_kv_table({"b": "2", "a": "1"}) == b'{"table":{"a":"1","b":"2"}}'
