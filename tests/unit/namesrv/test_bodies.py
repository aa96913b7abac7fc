"""Name-server bodies: exact route/cluster/topic-list bytes and the RegisterBrokerBody in both forms."""

from __future__ import annotations

import contextlib
import json
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.errors import ProtocolError
from rocketq.namesrv.bodies import (
    BrokerData,
    QueueData,
    RegisterBrokerBody,
    TopicConfigSerializeWrapper,
    TopicRouteData,
    decode_data_version,
    encode_cluster_info,
    encode_data_version,
    encode_kv_table,
    encode_topic_list,
)
from rocketq.protocol.bodies import DataVersion, TopicConfig

# ------------------------------------------------------------------------------------------ route data


def test_route_bytes_match_the_reference_example() -> None:
    # protocol reference §3.6, standard form.
    route = TopicRouteData(
        queue_datas=[QueueData("broker-a", 4, 4, 6, 0)],
        broker_datas=[BrokerData("DefaultCluster", "broker-a", {0: "10.0.0.9:10911"})],
    )
    assert route.encode() == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.9:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],'
        b'"filterServerTable":{},'
        b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )


def test_route_with_order_conf_filter_servers_and_numeric_id_order() -> None:
    route = TopicRouteData(
        queue_datas=[QueueData("b", 8, 8, 7, 1)],
        broker_datas=[BrokerData("C", "b", {10: "h:3", 1: "h:2", 0: "h:1"})],
        filter_server_table={"h:1": ["f:1"]},
        order_topic_conf="b:8",
    )
    body = route.encode()
    assert b'"brokerAddrs":{"0":"h:1","1":"h:2","10":"h:3"}' in body
    obj = json.loads(body)
    assert list(obj) == ["brokerDatas", "filterServerTable", "orderTopicConf", "queueDatas"]
    assert obj["orderTopicConf"] == "b:8"
    assert obj["filterServerTable"] == {"h:1": ["f:1"]}
    for key in ("perm", "readQueueNums", "writeQueueNums", "topicSysFlag"):
        assert isinstance(obj["queueDatas"][0][key], int)


def test_route_escapes_non_ascii() -> None:
    route = TopicRouteData([QueueData("brökér", 1, 1, 6)], [BrokerData("C", "brökér", {0: "h:1"})])
    body = route.encode()
    assert body.isascii()
    assert b"br\\u00f6k\\u00e9r" in body
    assert TopicRouteData.decode(body) == route


def test_route_round_trip() -> None:
    route = TopicRouteData(
        [QueueData("a", 4, 4, 6), QueueData("b", 2, 2, 4, 2)],
        [BrokerData("C", "a", {0: "h:1", 1: "h:2"}), BrokerData("C", "b", {0: "h:3"})],
        {"h:1": ["f:1", "f:2"]},
        "a:4;b:2",
    )
    assert TopicRouteData.decode(route.encode()) == route


def test_route_decode_accepts_fastjson_unquoted_keys_and_old_sys_flag_spelling() -> None:
    legacy = (
        b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.9:10911",1:"10.0.0.10:10911"},"brokerName":"a","cluster":"C"}],'
        b'"filterServerTable":{},"queueDatas":[{"brokerName":"a","perm":6,"readQueueNums":4,"topicSynFlag":3,'
        b'"writeQueueNums":4}]}'
    )
    route = TopicRouteData.decode(legacy)
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.9:10911", 1: "10.0.0.10:10911"}
    assert route.queue_datas[0].topic_sys_flag == 3


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"[]",
        b'{"queueDatas":[1]}',
        b'{"brokerDatas":[{"cluster":1}]}',
        b'{"queueDatas":[{"brokerName":"a","perm":"x"}]}',
    ],
)
def test_bad_route_bodies(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        TopicRouteData.decode(body)


# ------------------------------------------------------------------------------------- other bodies


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


def test_data_version() -> None:
    assert encode_data_version(DataVersion(1700000000000, 2)) == b'{"counter":2,"timestamp":1700000000000}'
    assert decode_data_version({"counter": 2, "timestamp": 5, "extra": 1}) == DataVersion(5, 2)
    assert decode_data_version({}) == DataVersion(0, 0)
    for bad in ([], {"counter": "x"}, {"counter": 1.5}, {"timestamp": None}):
        with pytest.raises(ProtocolError):
            decode_data_version(bad)


# ------------------------------------------------------------------------------------ register body


JAVA_REGISTER_BODY = (
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":1700000000000},'
    b'"topicConfigTable":{"T1":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",'
    b'"topicName":"T1","topicSysFlag":0,"writeQueueNums":4},"%RETRY%g":{"order":false,"perm":6,"readQueueNums":1,'
    b'"topicFilterType":"SINGLE_TAG","topicName":"%RETRY%g","topicSysFlag":0,"writeQueueNums":1}}}}'
)


def test_decode_java_register_body() -> None:
    body = RegisterBrokerBody.decode(JAVA_REGISTER_BODY)
    w = body.topic_config_wrapper
    assert w.data_version == DataVersion(1700000000000, 3)
    assert w.topic_config_table["T1"] == TopicConfig("T1", 4, 4, 6)
    assert w.topic_config_table["%RETRY%g"].read_queue_nums == 1
    assert body.filter_server_list == []


def test_register_body_defaults() -> None:
    body = RegisterBrokerBody.decode(b"{}")
    assert body.topic_config_wrapper == TopicConfigSerializeWrapper()
    assert body.filter_server_list == []


def test_legacy_register_body_is_a_bare_wrapper() -> None:
    wrapper_json = json.loads(JAVA_REGISTER_BODY)["topicConfigSerializeWrapper"]
    body = RegisterBrokerBody.decode_legacy(json.dumps(wrapper_json).encode())
    assert set(body.topic_config_wrapper.topic_config_table) == {"T1", "%RETRY%g"}


# The inflated content of a compressed body, assembled by hand from the reference (§3.7).
COMPRESSED_CONTENT = (
    bytes.fromhex("00000027")  # DataVersion JSON length 39
    + b'{"counter":2,"timestamp":1700000000000}'
    + bytes.fromhex("00000002")  # two topics
    + bytes.fromhex("00000013")  # 19
    + b"T1 4 4 6 SINGLE_TAG"
    + bytes.fromhex("00000018")  # 24
    + b"%RETRY%g 1 1 6 MULTI_TAG"
    + bytes.fromhex("00000002")  # filter server list JSON length 2
    + b"[]"
)


def test_compressed_register_body_golden_decode() -> None:
    body = RegisterBrokerBody.decode(zlib.compress(COMPRESSED_CONTENT, 9), compressed=True)
    w = body.topic_config_wrapper
    assert w.data_version == DataVersion(1700000000000, 2)
    assert w.topic_config_table == {
        "T1": TopicConfig("T1", 4, 4, 6, "SINGLE_TAG"),
        "%RETRY%g": TopicConfig("%RETRY%g", 1, 1, 6, "MULTI_TAG"),
    }
    assert body.filter_server_list == []


def test_compressed_register_body_golden_encode() -> None:
    body = RegisterBrokerBody(
        TopicConfigSerializeWrapper(
            DataVersion(1700000000000, 2),
            {
                "T1": TopicConfig("T1", 4, 4, 6, "SINGLE_TAG"),
                "%RETRY%g": TopicConfig("%RETRY%g", 1, 1, 6, "MULTI_TAG"),
            },
        )
    )
    assert zlib.decompress(body.encode(compress=True)) == COMPRESSED_CONTENT


@pytest.mark.parametrize("compress", [False, True])
def test_register_body_round_trip(compress: bool) -> None:
    body = RegisterBrokerBody(
        TopicConfigSerializeWrapper(
            DataVersion(17, 5), {f"T{i}": TopicConfig(f"T{i}", i, i + 1, 6) for i in range(20)}
        ),
        ["10.0.0.1:5000"],
    )
    assert RegisterBrokerBody.decode(body.encode(compress), compress) == body


@pytest.mark.parametrize(
    "content",
    [
        COMPRESSED_CONTENT[:-1],  # truncated filter list
        COMPRESSED_CONTENT[:50],
        bytes.fromhex("FFFFFFFF"),  # negative length
        bytes.fromhex("00000002") + b"{}" + bytes.fromhex("FFFFFFFF"),  # negative topic count
        bytes.fromhex("00000002") + b"{}" + bytes.fromhex("00000001") + bytes.fromhex("00000003") + b"T 1",
        bytes.fromhex("00000002") + b"{}" + bytes.fromhex("00000000") + bytes.fromhex("00000002") + b"{}",
    ],
    ids=["truncated", "truncated-mid", "negative-length", "negative-count", "short-topic-line", "list-not-array"],
)
def test_bad_compressed_content(content: bytes) -> None:
    with pytest.raises(ProtocolError):
        RegisterBrokerBody.decode(zlib.compress(content), compressed=True)


def test_compressed_flag_on_uncompressed_body() -> None:
    with pytest.raises(ProtocolError):
        RegisterBrokerBody.decode(JAVA_REGISTER_BODY, compressed=True)


@given(st.binary(max_size=300), st.booleans())
def test_garbage_register_bodies_raise_only_protocol_error(data: bytes, compressed: bool) -> None:
    with contextlib.suppress(ProtocolError):
        RegisterBrokerBody.decode(data, compressed)
    with contextlib.suppress(ProtocolError):
        RegisterBrokerBody.decode(zlib.compress(data), True)


@given(st.integers(0, len(JAVA_REGISTER_BODY) - 1), st.integers(0, 255))
def test_mutated_register_body_raises_only_protocol_error(pos: int, value: int) -> None:
    data = bytearray(JAVA_REGISTER_BODY)
    data[pos] = value
    with contextlib.suppress(ProtocolError):
        RegisterBrokerBody.decode(bytes(data))
