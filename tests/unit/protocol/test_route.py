"""Routes and the registration body: the name server's exact bytes, the client's lenient reader, both body forms."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import DataVersion, TopicConfig
from rocketq.protocol.route import (
    BrokerData,
    QueueData,
    RegisterBrokerBody,
    TopicConfigSerializeWrapper,
    TopicRouteData,
    decode_data_version,
    encode_data_version,
)

# ------------------------------------------------------------------------------------------ route data


def test_route_bytes_match_the_reference_example() -> None:
    # protocol reference §3.6, standard form.
    route = TopicRouteData(
        queue_datas=(QueueData("broker-a", 4, 4, 6, 0),),
        broker_datas=(BrokerData("DefaultCluster", "broker-a", {0: "10.0.0.9:10911"}),),
    )
    assert route.encode() == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.9:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],'
        b'"filterServerTable":{},'
        b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )


def test_route_with_order_conf_filter_servers_and_numeric_id_order() -> None:
    route = TopicRouteData(
        queue_datas=(QueueData("b", 8, 8, 7, 1),),
        broker_datas=(BrokerData("C", "b", {10: "h:3", 1: "h:2", 0: "h:1"}),),
        filter_server_table={"h:1": ("f:1",)},
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
    route = TopicRouteData((QueueData("brökér", 1, 1, 6),), (BrokerData("C", "brökér", {0: "h:1"}),))
    body = route.encode()
    assert body.isascii()
    assert b"br\\u00f6k\\u00e9r" in body
    assert TopicRouteData.decode(body) == route


def test_route_round_trip() -> None:
    route = TopicRouteData(
        (QueueData("a", 4, 4, 6), QueueData("b", 2, 2, 4, 2)),
        (BrokerData("C", "a", {0: "h:1", 1: "h:2"}), BrokerData("C", "b", {0: "h:3"})),
        filter_server_table={"h:1": ("f:1", "f:2")},
        order_topic_conf="a:4;b:2",
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


def test_route_values_are_frozen() -> None:
    route = TopicRouteData((QueueData("a", 4, 4, 6),), (BrokerData("C", "a", {0: "h:1"}),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        route.queue_datas[0].perm = 0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        route.broker_datas[0].broker_addrs = {}  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        route.order_topic_conf = "a:1"  # type: ignore[misc]


def test_route_helpers() -> None:
    bd = BrokerData("C", "a", {1: "h:2", 0: "h:1"})
    assert bd.master_addr == "h:1" and bd.select_broker_addr() == "h:1"
    slaves_only = BrokerData("C", "a", {1: "h:2"})
    assert slaves_only.master_addr is None and slaves_only.select_broker_addr() == "h:2"
    assert QueueData("a", 1, 1, 6).writable and QueueData("a", 1, 1, 6).readable
    assert not QueueData("a", 1, 1, 4).writable and not QueueData("a", 1, 1, 2).readable
    route = TopicRouteData((QueueData("a", 1, 1, 6),), (bd,))
    assert route.broker("a") is bd and route.broker("b") is None


def test_lenient_reader_coerces_and_defaults() -> None:
    # The client's reader: a missing cluster reads as "", numbers as text are numbers, "" order conf is none.
    body = (b'{"brokerDatas":[{"brokerAddrs":{"0":"h:1"},"brokerName":"a"}],"orderTopicConf":"","extra":1,'
            b'"queueDatas":[{"brokerName":"a","perm":"6","readQueueNums":4,"writeQueueNums":"4"}]}')  # fmt: skip
    route = TopicRouteData.decode(body)
    assert route == TopicRouteData((QueueData("a", 4, 4, 6),), (BrokerData("", "a", {0: "h:1"}),))
    assert route.order_topic_conf is None and route.filter_server_table == {}


def test_route_json_round_trip_with_a_fastjson_object_key_elsewhere() -> None:
    route = TopicRouteData((QueueData("a", 4, 4, 6),), (BrokerData("C", "a", {0: "h:1"}),))
    assert TopicRouteData.from_json(route.to_json()) == route
    # fastjson's dialect beyond bare int keys is read too (an object key in an unknown member)
    body = route.encode()[:-1] + b',"x":{{"a":1}:2}}'
    assert TopicRouteData.decode(body) == route


@given(st.integers(0, 200), st.integers(0, 255))
def test_mutated_route_body_raises_only_protocol_error(pos: int, value: int) -> None:
    body = bytearray(
        TopicRouteData(
            (QueueData("a", 4, 4, 6),), (BrokerData("C", "a", {0: "h:1", 1: "h:2"}),),
            filter_server_table={"h:1": ("f:1",)}, order_topic_conf="a:4",
        ).encode()
    )  # fmt: skip
    body[pos % len(body)] = value
    with contextlib.suppress(ProtocolError):
        TopicRouteData.decode(bytes(body))


# ------------------------------------------------------------------------------------------ data version


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
    assert body.filter_server_list == ()


def test_register_body_defaults() -> None:
    body = RegisterBrokerBody.decode(b"{}")
    assert body.topic_config_wrapper == TopicConfigSerializeWrapper()
    assert body.filter_server_list == ()


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
    assert body.filter_server_list == ()


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
        ("10.0.0.1:5000",),
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
