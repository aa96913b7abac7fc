"""Name-server processors driven through a dispatcher with a fake connection (no sockets)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.kv_config import KVConfigManager
from rocketq.namesrv.processors import NamesrvProcessor
from rocketq.namesrv.route_info import RouteInfoManager
from rocketq.namesrv.server import NamesrvServer
from rocketq.protocol import RemotingCommand, decode_frame, encode
from rocketq.protocol.bodies import DataVersion, TopicConfig
from rocketq.protocol.route import RegisterBrokerBody, TopicConfigSerializeWrapper, TopicRouteData
from rocketq.remoting import RemotingDispatcher

ROUTE_MISS = (
    "No topic route info in name server for the topic: {}"
    "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
)


class FakeConnection:
    def __init__(self, remote: str = "10.0.0.1:40000") -> None:
        self.remote = remote
        self.written: list[RemotingCommand] = []

    def write(self, cmd: RemotingCommand) -> None:
        self.written.append(cmd)


class Env:
    def __init__(self, tmp_path: Path, **config: Any) -> None:
        self.config = NamesrvConfig(listen_host="127.0.0.1", listen_port=0, home_dir=tmp_path, **config)
        self.route_info = RouteInfoManager()
        self.kv = KVConfigManager(self.config.resolved_kv_config_path)
        self.updated = 0
        self.processor = NamesrvProcessor(self.route_info, self.kv, self.config, on_config_updated=self._updated)
        self.dispatcher = RemotingDispatcher("namesrv")
        self.processor.register(self.dispatcher)

    def _updated(self) -> None:
        self.updated += 1

    def call(
        self,
        code: int,
        ext: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        version: int = 409,
        conn: FakeConnection | None = None,
    ) -> RemotingCommand:
        conn = conn or FakeConnection()
        req = RemotingCommand(code=code, opaque=11, ext_fields=ext or {}, body=body, version=version)
        self.dispatcher.dispatch(conn, req)  # type: ignore[arg-type]
        (resp,) = conn.written
        # What goes on the wire: a JSON header whose extFields values are all strings.
        frame = encode(resp)
        header_len = int.from_bytes(frame[4:8], "big") & 0xFFFFFF
        header = json.loads(frame[8 : 8 + header_len])
        assert all(isinstance(v, str) for v in header["extFields"].values())
        wire = decode_frame(frame[4:])
        assert wire.opaque == 11 and wire.is_response
        return wire

    def register(
        self,
        *,
        name: str = "broker-a",
        addr: str = "10.0.0.1:10911",
        broker_id: int = 0,
        cluster: str = "DefaultCluster",
        counter: int = 1,
        topics: dict[str, tuple[int, int, int]] | None = None,
        compressed: bool = False,
        crc: int | None = None,
        conn: FakeConnection | None = None,
    ) -> RemotingCommand:
        wrapper = TopicConfigSerializeWrapper(
            DataVersion(1700000000000, counter),
            {t: TopicConfig(t, r, w, p) for t, (r, w, p) in (topics or {"T1": (4, 4, 6)}).items()},
        )
        body = RegisterBrokerBody(wrapper).encode(compressed)
        ext = {
            "brokerName": name,
            "brokerAddr": addr,
            "clusterName": cluster,
            "haServerAddr": addr.replace("10911", "10912"),
            "brokerId": str(broker_id),
            "compressed": "true" if compressed else "false",
            "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF if crc is None else crc),
        }
        return self.call(RequestCode.REGISTER_BROKER, ext, body, conn=conn)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


# ------------------------------------------------------------------------------------------ routes


def test_register_then_route(env: Env) -> None:
    resp = env.register()
    assert resp.code == ResponseCode.SUCCESS
    assert resp.ext_fields == {}  # master: no masterAddr / haServerAddr
    assert bytes(resp.body) == b""  # no ORDER_TOPIC_CONFIG namespace yet
    route = env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T1"})
    assert route.code == ResponseCode.SUCCESS and route.remark is None
    assert bytes(route.body) == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],'
        b'"filterServerTable":{},'
        b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )


@pytest.mark.parametrize("version", [63, 333, 401, 409])
def test_route_body_is_the_same_for_every_client_version(env: Env, version: int) -> None:
    env.register()
    route = env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T1"}, version=version)
    assert b'"brokerAddrs":{"0":"10.0.0.1:10911"}' in bytes(route.body)


def test_route_miss(env: Env) -> None:
    resp = env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "nope"})
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark == ROUTE_MISS.format("nope")


def test_route_without_topic_header_is_system_error(env: Env) -> None:
    resp = env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {})
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "topic" in (resp.remark or "")


def test_compressed_registration(env: Env) -> None:
    assert env.register(compressed=True, topics={"TC": (2, 2, 6)}).code == ResponseCode.SUCCESS
    route = TopicRouteData.decode(env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TC"}).body)
    assert route.queue_datas[0].write_queue_nums == 2


def test_crc_mismatch(env: Env) -> None:
    resp = env.register(crc=12345)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    assert env.route_info.broker_live_table == {}


def test_crc_zero_is_unchecked(env: Env) -> None:
    assert env.register(crc=0).code == ResponseCode.SUCCESS


def test_undecodable_register_body(env: Env) -> None:
    ext = {"brokerName": "b", "brokerAddr": "h:1", "clusterName": "C", "haServerAddr": "h:2", "brokerId": "0"}
    resp = env.call(RequestCode.REGISTER_BROKER, ext, b"{not json")
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert (resp.remark or "").startswith("Failed to decode RegisterBrokerBody")
    resp = env.call(RequestCode.REGISTER_BROKER, {**ext, "compressed": "true"}, b"not zlib")
    assert resp.code == ResponseCode.SYSTEM_ERROR


def test_register_without_body_registers_the_broker_only(env: Env) -> None:
    ext = {"brokerName": "b", "brokerAddr": "h:1", "clusterName": "C", "haServerAddr": "h:2", "brokerId": "0"}
    assert env.call(RequestCode.REGISTER_BROKER, ext).code == ResponseCode.SUCCESS
    assert env.route_info.broker_live_table["h:1"].data_version == DataVersion(0, 0)
    assert env.route_info.cluster_addr_table == {"C": {"b"}}


def test_register_from_an_old_broker_sends_a_bare_wrapper(env: Env) -> None:
    wrapper = TopicConfigSerializeWrapper(DataVersion(1, 1), {"OLD": TopicConfig("OLD", 1, 1, 6)})
    ext = {"brokerName": "b", "brokerAddr": "h:1", "clusterName": "C", "haServerAddr": "h:2", "brokerId": "0"}
    body = json.dumps(wrapper.to_json()).encode()
    assert env.call(RequestCode.REGISTER_BROKER, ext, body, version=36).code == ResponseCode.SUCCESS
    assert env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "OLD"}).code == ResponseCode.SUCCESS


def test_slave_registration_returns_master_and_ha_addresses(env: Env) -> None:
    env.register()
    resp = env.register(addr="10.0.0.2:10911", broker_id=1)
    assert resp.ext_fields == {"masterAddr": "10.0.0.1:10911", "haServerAddr": "10.0.0.1:10912"}


def test_register_response_carries_order_topic_config(env: Env) -> None:
    env.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T1", "value": "broker-a:4"})
    resp = env.register()
    assert json.loads(resp.body) == {"table": {"T1": "broker-a:4"}}


def test_order_topic_conf_in_route_when_enabled(tmp_path: Path) -> None:
    env = Env(tmp_path, order_message_enable=True)
    env.register()
    env.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T1", "value": "broker-a:4"})
    route = env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T1"})
    assert json.loads(route.body)["orderTopicConf"] == "broker-a:4"
    plain = Env(tmp_path / "plain")
    plain.register()
    plain.kv.put("ORDER_TOPIC_CONFIG", "T1", "broker-a:4")
    assert "orderTopicConf" not in json.loads(plain.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T1"}).body)


def test_unregister(env: Env) -> None:
    env.register()
    ext = {"brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911", "clusterName": "DefaultCluster", "brokerId": "0"}
    assert env.call(RequestCode.UNREGISTER_BROKER, ext).code == ResponseCode.SUCCESS
    assert env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T1"}).code == ResponseCode.TOPIC_NOT_EXIST


def test_query_data_version(env: Env) -> None:
    env.register(counter=5)
    ext = {"brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911", "clusterName": "DefaultCluster", "brokerId": "0"}
    same = env.call(RequestCode.QUERY_DATA_VERSION, ext, b'{"counter":5,"timestamp":1700000000000}')
    assert same.code == ResponseCode.SUCCESS
    assert same.ext_fields == {"changed": "false"}
    assert json.loads(same.body) == {"counter": 5, "timestamp": 1700000000000}
    newer = env.call(RequestCode.QUERY_DATA_VERSION, ext, b'{"counter":6,"timestamp":1700000000000}')
    assert newer.ext_fields == {"changed": "true"}
    unknown = env.call(RequestCode.QUERY_DATA_VERSION, {**ext, "brokerAddr": "x:1"}, b'{"counter":1,"timestamp":1}')
    assert unknown.ext_fields == {"changed": "true"} and bytes(unknown.body) == b""
    assert env.call(RequestCode.QUERY_DATA_VERSION, ext, b"").code == ResponseCode.SYSTEM_ERROR


def test_cluster_info(env: Env) -> None:
    env.register()
    env.register(name="broker-b", addr="10.0.0.2:10911", cluster="C2")
    resp = env.call(RequestCode.GET_BROKER_CLUSTER_INFO)
    info = json.loads(resp.body)
    assert info["clusterAddrTable"] == {"C2": ["broker-b"], "DefaultCluster": ["broker-a"]}
    assert info["brokerAddrTable"]["broker-a"] == {
        "brokerAddrs": {"0": "10.0.0.1:10911"},
        "brokerName": "broker-a",
        "cluster": "DefaultCluster",
    }


def test_topic_lists(env: Env) -> None:
    env.register(topics={"T1": (4, 4, 6), "T2": (4, 4, 6)})
    env.register(name="broker-b", addr="10.0.0.2:10911", cluster="C2", topics={"T3": (1, 1, 6)})
    all_topics = json.loads(env.call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body)
    assert sorted(all_topics["topicList"]) == ["T1", "T2", "T3"]
    by_cluster = json.loads(env.call(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "C2"}).body)
    assert by_cluster == {"topicList": ["T3"]}
    system = json.loads(env.call(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS).body)
    assert sorted(system["topicList"]) == ["C2", "DefaultCluster", "broker-a", "broker-b"]
    assert system["brokerAddr"] in ("10.0.0.1:10911", "10.0.0.2:10911")
    for code in (
        RequestCode.GET_UNIT_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    ):
        assert json.loads(env.call(code).body) == {"topicList": []}


def test_delete_topic(env: Env) -> None:
    env.register(topics={"T1": (4, 4, 6), "T2": (4, 4, 6)})
    assert env.call(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T1"}).code == ResponseCode.SUCCESS
    assert env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T1"}).code == ResponseCode.TOPIC_NOT_EXIST
    env.call(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T2", "clusterName": "other"})
    assert env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T2"}).code == ResponseCode.SUCCESS
    env.call(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T2", "clusterName": "DefaultCluster"})
    assert env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T2"}).code == ResponseCode.TOPIC_NOT_EXIST


def test_wipe_and_add_write_perm(env: Env) -> None:
    env.register(topics={"T1": (4, 4, 6), "T2": (4, 4, 6)})
    wipe = env.call(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert wipe.ext_fields == {"wipeTopicCount": "2"}
    assert json.loads(env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T1"}).body)["queueDatas"][0]["perm"] == 4
    add = env.call(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert add.ext_fields == {"addTopicCount": "2"}
    assert json.loads(env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T1"}).body)["queueDatas"][0]["perm"] == 6


# ---------------------------------------------------------------------------------------------- KV


def test_kv_config_codes(env: Env) -> None:
    put = env.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"})
    assert put.code == ResponseCode.SUCCESS
    get = env.call(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"})
    assert (get.code, get.ext_fields) == (ResponseCode.SUCCESS, {"value": "v"})
    listing = env.call(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"})
    assert json.loads(listing.body) == {"table": {"k": "v"}}
    assert env.call(RequestCode.DELETE_KV_CONFIG, {"namespace": "ns", "key": "k"}).code == ResponseCode.SUCCESS
    miss = env.call(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"})
    assert (miss.code, miss.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: ns Key: k")
    ns_miss = env.call(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "zz"})
    assert (ns_miss.code, ns_miss.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: zz")
    assert env.config.resolved_kv_config_path.exists()


def test_put_kv_without_namespace_or_key(env: Env) -> None:
    resp = env.call(RequestCode.PUT_KV_CONFIG, {"key": "k", "value": "v"})
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "namespace or key is null")


def test_put_kv_without_value_reads_back_as_missing(env: Env) -> None:
    env.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"})
    env.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k"})
    assert env.call(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}).code == ResponseCode.QUERY_NOT_FOUND


def test_put_kv_past_the_byte_bound_is_refused_naming_the_key(env: Env) -> None:
    env.kv.max_bytes = 8
    assert env.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"}).code == 0
    resp = env.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k2", "value": "x" * 100})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "kvConfigMaxBytes=8" in (resp.remark or "")
    assert env.call(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k2"}).code == ResponseCode.QUERY_NOT_FOUND


def test_kv_config_max_bytes_is_live_and_bounded(tmp_path: Path) -> None:
    server = NamesrvServer(NamesrvConfig(listen_host="127.0.0.1", listen_port=0, home_dir=tmp_path))

    def call(code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
        conn = FakeConnection()
        server.dispatcher.dispatch(conn, RemotingCommand(code=code, opaque=1, ext_fields=ext or {}, body=body))  # type: ignore[arg-type]
        (resp,) = conn.written
        return resp

    assert call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"kvConfigMaxBytes=4\n").code == ResponseCode.SUCCESS
    assert call(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"}).code == 0
    full = call(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k2", "value": "v"})
    assert full.code == ResponseCode.SYSTEM_ERROR
    bad = call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"kvConfigMaxBytes=-1\n")
    assert bad.code == ResponseCode.SYSTEM_ERROR and "kvConfigMaxBytes" in (bad.remark or "")
    assert server.kv_config.max_bytes == 4


# ------------------------------------------------------------------------------------------ config


def test_get_and_update_namesrv_config(env: Env) -> None:
    text = bytes(env.call(RequestCode.GET_NAMESRV_CONFIG).body).decode()
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["orderMessageEnable"] == "false"
    assert props["brokerChannelExpiredTime"] == "120000"
    assert props["scanNotActiveBrokerInterval"] == "10000"
    assert props["listenPort"] == "0"
    body = b"orderMessageEnable=true\nbrokerChannelExpiredTime=500000\nunknownKey=1\n"
    assert env.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=body).code == ResponseCode.SUCCESS
    assert env.config.order_message_enable is True
    assert env.config.broker_expiry == 500.0
    assert env.updated == 1


@pytest.mark.parametrize("key", ["kvConfigPath", "configStorePath", "configBlackList", "rocketmqHome"])
def test_update_namesrv_config_black_list(env: Env, key: str) -> None:
    resp = env.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=f"{key}=/tmp/x\norderMessageEnable=true".encode())
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    assert env.config.order_message_enable is False


def test_update_namesrv_config_bad_value_changes_nothing(env: Env) -> None:
    body = b"orderMessageEnable=true\nbrokerChannelExpiredTime=-5"
    resp = env.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=body)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert env.config.order_message_enable is False and env.config.broker_expiry == 120.0
    assert env.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"\xff").code == ResponseCode.SYSTEM_ERROR
    assert env.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"scanNotActiveBrokerInterval=x").code == 1


# ------------------------------------------------------------------------------------------- misc


def test_unknown_code_is_request_code_not_supported(env: Env) -> None:
    resp = env.call(RequestCode.SEND_MESSAGE)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 10 not supported"


def test_served_codes(env: Env) -> None:
    required = {100, 101, 102, 103, 104, 105, 106, 205, 206, 216, 219, 224, 304, 322, 327, 318, 319}
    assert set(env.processor.handlers()) >= required
