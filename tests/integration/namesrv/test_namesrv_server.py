"""A real NamesrvServer on 127.0.0.1 (ephemeral port), driven over TCP with RemotingClient."""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import RemotingClosedError
from rocketq.namesrv import NamesrvConfig, NamesrvServer
from rocketq.protocol import SERIALIZE_ROCKETMQ, RemotingCommand
from rocketq.protocol.bodies import DataVersion, TopicConfig
from rocketq.protocol.route import RegisterBrokerBody, TopicConfigSerializeWrapper
from rocketq.remoting import RemotingClient

WAIT = 5.0  # an upper bound for "eventually", never a pass/fail timing threshold


def config(home: Path, **overrides: float) -> NamesrvConfig:
    return NamesrvConfig(listen_host="127.0.0.1", listen_port=0, home_dir=home, **overrides)  # type: ignore[arg-type]


@pytest.fixture
async def namesrv(tmp_path: Path) -> AsyncIterator[NamesrvServer]:
    server = NamesrvServer(config(tmp_path / "namesrv", scan_interval=0.1, broker_expiry=0.5))
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    c = RemotingClient()
    try:
        yield c
    finally:
        await c.close()


async def register_broker(
    client: RemotingClient,
    addr: str,
    *,
    name: str = "broker-a",
    broker_addr: str = "127.0.0.1:10911",
    broker_id: int = 0,
    cluster: str = "DefaultCluster",
    topics: dict[str, tuple[int, int, int]] | None = None,
    counter: int = 1,
    compressed: bool = False,
) -> RemotingCommand:
    wrapper = TopicConfigSerializeWrapper(
        DataVersion(1700000000000, counter),
        {t: TopicConfig(t, r, w, p) for t, (r, w, p) in (topics or {"T1": (4, 4, 6)}).items()},
    )
    body = RegisterBrokerBody(wrapper).encode(compressed)
    ext = {
        "brokerName": name,
        "brokerAddr": broker_addr,
        "clusterName": cluster,
        "haServerAddr": "127.0.0.1:10912",
        "brokerId": str(broker_id),
        "compressed": "true" if compressed else "false",
        "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF),
    }
    req = RemotingCommand.request(RequestCode.REGISTER_BROKER, ext, body, language="JAVA")
    return await client.invoke(addr, req, timeout=WAIT)


async def route(client: RemotingClient, addr: str, topic: str, **kw: object) -> RemotingCommand:
    req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    for k, v in kw.items():
        setattr(req, k, v)
    return await client.invoke(addr, req, timeout=WAIT)


async def wait_until_no_route(client: RemotingClient, addr: str, topic: str) -> None:
    async with asyncio.timeout(WAIT):
        while True:
            try:
                if (await route(client, addr, topic)).code == ResponseCode.TOPIC_NOT_EXIST:
                    return
            except RemotingClosedError:
                pass  # expiring a broker closes its channel, which here is this client's connection: reconnect
            await asyncio.sleep(0.02)


# ------------------------------------------------------------------------------------------ routes


async def test_registered_broker_route_has_the_exact_body_shape(namesrv: NamesrvServer, client: RemotingClient) -> None:
    addr = namesrv.address
    reg = await register_broker(client, addr, topics={"T1": (4, 4, 6)})
    assert reg.code == ResponseCode.SUCCESS
    resp = await route(client, addr, "T1")
    assert resp.code == ResponseCode.SUCCESS
    raw = bytes(resp.body)
    assert b'"brokerAddrs":{"0":' in raw
    assert json.loads(raw) == {
        "brokerDatas": [
            {"brokerAddrs": {"0": "127.0.0.1:10911"}, "brokerName": "broker-a", "cluster": "DefaultCluster"}
        ],
        "filterServerTable": {},
        "queueDatas": [
            {"brokerName": "broker-a", "perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}
        ],
    }


async def test_cpp_client_gets_the_same_json_route(namesrv: NamesrvServer, client: RemotingClient) -> None:
    await register_broker(client, namesrv.address)
    resp = await route(client, namesrv.address, "T1", language="CPP", version=63)
    assert resp.serialize_type == 0
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911"}' in bytes(resp.body)


async def test_rocketmq_serialized_request_gets_a_rocketmq_response(
    namesrv: NamesrvServer, client: RemotingClient
) -> None:
    await register_broker(client, namesrv.address)
    resp = await route(client, namesrv.address, "T1", serialize_type=SERIALIZE_ROCKETMQ, language="JAVA")
    assert resp.serialize_type == SERIALIZE_ROCKETMQ
    assert resp.code == ResponseCode.SUCCESS
    assert b'"brokerAddrs":{"0":' in bytes(resp.body)


async def test_route_miss(namesrv: NamesrvServer, client: RemotingClient) -> None:
    resp = await route(client, namesrv.address, "Nope")
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert (resp.remark or "").startswith("No topic route info in name server for the topic: Nope")


async def test_compressed_registration(namesrv: NamesrvServer, client: RemotingClient) -> None:
    reg = await register_broker(client, namesrv.address, topics={"TZ": (2, 2, 6)}, compressed=True)
    assert reg.code == ResponseCode.SUCCESS
    body = json.loads((await route(client, namesrv.address, "TZ")).body)
    assert body["queueDatas"][0]["writeQueueNums"] == 2


async def test_slave_learns_master(namesrv: NamesrvServer, client: RemotingClient) -> None:
    await register_broker(client, namesrv.address)
    slave = await register_broker(client, namesrv.address, broker_addr="127.0.0.1:20911", broker_id=1)
    assert slave.ext_fields == {"masterAddr": "127.0.0.1:10911", "haServerAddr": "127.0.0.1:10912"}


async def test_unknown_code(namesrv: NamesrvServer, client: RemotingClient) -> None:
    resp = await client.invoke(namesrv.address, RemotingCommand.request(RequestCode.PULL_MESSAGE), timeout=WAIT)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 11 not supported"


# --------------------------------------------------------------------------------------- liveness


async def test_broker_expires_after_missed_heartbeats(namesrv: NamesrvServer) -> None:
    broker = RemotingClient()  # the "broker": registers once, then stays silent
    observer = RemotingClient()
    try:
        await register_broker(broker, namesrv.address)
        assert (await route(observer, namesrv.address, "T1")).code == ResponseCode.SUCCESS
        conn = await broker.connection(namesrv.address)
        await wait_until_no_route(observer, namesrv.address, "T1")
        assert namesrv.route_info.broker_live_table == {}
        assert namesrv.route_info.cluster_addr_table == {}
        # Java closes the expired broker's channel too.
        async with asyncio.timeout(WAIT):
            await conn.wait_closed()
    finally:
        await broker.close()
        await observer.close()


async def test_broker_removed_when_its_connection_closes(tmp_path: Path) -> None:
    # Long expiry: only the closed connection can explain the removal.
    async with NamesrvServer(config(tmp_path, scan_interval=60, broker_expiry=600)) as server:
        broker = RemotingClient()
        observer = RemotingClient()
        try:
            await register_broker(broker, server.address)
            await register_broker(broker, server.address, name="broker-b", broker_addr="127.0.0.1:30911")
            assert (await route(observer, server.address, "T1")).code == ResponseCode.SUCCESS
            await broker.close()
            await wait_until_no_route(observer, server.address, "T1")
            assert server.route_info.broker_addr_table == {}
        finally:
            await observer.close()


async def test_query_data_version_refreshes_liveness(namesrv: NamesrvServer, client: RemotingClient) -> None:
    await register_broker(client, namesrv.address, counter=9)
    ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster", "brokerId": "0"}
    req = RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, ext, b'{"counter":9,"timestamp":1700000000000}')
    resp = await client.invoke(namesrv.address, req, timeout=WAIT)
    assert resp.ext_fields == {"changed": "false"}
    assert json.loads(resp.body) == {"counter": 9, "timestamp": 1700000000000}


# ------------------------------------------------------------------------------------- KV, cluster, admin


async def test_kv_config_survives_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    client = RemotingClient()
    try:
        async with NamesrvServer(config(home)) as first:
            put = RemotingCommand.request(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v1"})
            assert (await client.invoke(first.address, put, timeout=WAIT)).code == ResponseCode.SUCCESS
        assert (home / "kvConfig.json").exists()
        async with NamesrvServer(config(home)) as second:
            get = RemotingCommand.request(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"})
            resp = await client.invoke(second.address, get, timeout=WAIT)
            assert (resp.code, resp.ext_fields) == (ResponseCode.SUCCESS, {"value": "v1"})
            lst = RemotingCommand.request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"})
            assert json.loads((await client.invoke(second.address, lst, timeout=WAIT)).body) == {"table": {"k": "v1"}}
    finally:
        await client.close()


async def test_cluster_info(namesrv: NamesrvServer, client: RemotingClient) -> None:
    await register_broker(client, namesrv.address)
    await register_broker(client, namesrv.address, name="broker-b", broker_addr="127.0.0.1:30911", cluster="C2")
    resp = await client.invoke(namesrv.address, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), WAIT)
    assert resp.code == ResponseCode.SUCCESS
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911"}' in bytes(resp.body)
    info = json.loads(resp.body)
    assert info["clusterAddrTable"] == {"C2": ["broker-b"], "DefaultCluster": ["broker-a"]}
    assert set(info["brokerAddrTable"]) == {"broker-a", "broker-b"}


async def test_delete_topic(namesrv: NamesrvServer, client: RemotingClient) -> None:
    await register_broker(client, namesrv.address, topics={"T1": (4, 4, 6), "T2": (4, 4, 6)})
    delete = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T1"})
    assert (await client.invoke(namesrv.address, delete, timeout=WAIT)).code == ResponseCode.SUCCESS
    assert (await route(client, namesrv.address, "T1")).code == ResponseCode.TOPIC_NOT_EXIST
    assert (await route(client, namesrv.address, "T2")).code == ResponseCode.SUCCESS
    all_topics = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    assert json.loads((await client.invoke(namesrv.address, all_topics, timeout=WAIT)).body) == {"topicList": ["T2"]}


async def test_update_config_over_the_wire_changes_expiry(tmp_path: Path) -> None:
    async with NamesrvServer(config(tmp_path, scan_interval=0.05, broker_expiry=600)) as server:
        client = RemotingClient()
        try:
            await register_broker(client, server.address)
            update = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"brokerChannelExpiredTime=300000")
            assert (await client.invoke(server.address, update, timeout=WAIT)).code == ResponseCode.SUCCESS
            assert server.route_info.broker_expiry == 300.0
            # the port it listens on, not the 0 it was asked to bind (mqadmin getNamesrvConfig shows it)
            get = RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG)
            text = bytes((await client.invoke(server.address, get, timeout=WAIT)).body).decode()
            assert f"listenPort={server.port}\n" in text and server.port > 0
            assert "brokerChannelExpiredTime=300000\n" in text
        finally:
            await client.close()


@pytest.mark.parametrize(
    ("body", "key"),
    [(b"brokerChannelExpiredTime=100", "brokerChannelExpiredTime"),
     (b"serverChannelMaxIdleTimeSeconds=1", "serverChannelMaxIdleTimeSeconds"),
     (b"scanNotActiveBrokerInterval=0", "scanNotActiveBrokerInterval"),
     (b"brokerChannelExpiredTime=1e300", "brokerChannelExpiredTime"),
     (b"brokerChannelExpiredTime=" + str(2**70).encode(), "brokerChannelExpiredTime"),
     (b"orderMessageEnable=yes", "orderMessageEnable")],
)  # fmt: skip
async def test_update_config_cannot_unregister_live_brokers(tmp_path: Path, body: bytes, key: str) -> None:
    """An expiry or idle time below a broker's registration period would drop every live broker within
    seconds: refused naming the key, nothing changed, and the registered broker keeps its route."""
    async with NamesrvServer(config(tmp_path, scan_interval=0.05, broker_expiry=600)) as server:
        client = RemotingClient()
        try:
            await register_broker(client, server.address)
            update_body = b"orderMessageEnable=true\n" + body
            update = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=update_body)
            resp = await client.invoke(server.address, update, timeout=WAIT)
            assert resp.code == ResponseCode.SYSTEM_ERROR and repr(key) in (resp.remark or ""), resp.remark
            cfg = server.config
            assert (cfg.broker_expiry, cfg.scan_interval, cfg.idle_timeout) == (600, 0.05, 120)
            assert server.config.order_message_enable is False and server.route_info.broker_expiry == 600
            await asyncio.sleep(0.3)  # several scans: the broker is still there
            assert (await route(client, server.address, "T1")).code == ResponseCode.SUCCESS
        finally:
            await client.close()


async def test_two_servers_side_by_side_and_clean_close(tmp_path: Path) -> None:
    a = NamesrvServer(config(tmp_path / "a"))
    b = NamesrvServer(config(tmp_path / "b"))
    port_a = await a.start()
    port_b = await b.start()
    try:
        assert port_a != port_b
    finally:
        await a.close()
        await b.close()
    await a.close()  # idempotent
    client = RemotingClient()
    try:
        with pytest.raises(Exception, match="cannot connect"):
            await client.invoke(f"127.0.0.1:{port_a}", RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
    finally:
        await client.close()


@pytest.mark.parametrize(("field", "value"), [("brokerId", str(2**63)), ("bodyCrc32", str(2**31)),
                                              ("brokerId", "1e300")])  # fmt: skip
async def test_register_broker_with_an_integer_wider_than_java_is_refused(
    namesrv: NamesrvServer, client: RemotingClient, field: str, value: str
) -> None:
    """The name server reads its headers with Java's widths too: refused naming the field, nothing registered."""
    wrapper = TopicConfigSerializeWrapper(DataVersion(1700000000000, 1), {"TWide": TopicConfig("TWide", 4, 4, 6)})
    body = RegisterBrokerBody(wrapper).encode(False)
    crc = str(zlib.crc32(body) & 0x7FFFFFFF)
    ext = {"brokerName": "broker-w", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster",
           "brokerId": "0", "compressed": "false", "bodyCrc32": crc, field: value}  # fmt: skip
    req = RemotingCommand.request(RequestCode.REGISTER_BROKER, ext, body, language="JAVA")
    resp = await client.invoke(namesrv.address, req, timeout=WAIT)
    assert resp.code == ResponseCode.SYSTEM_ERROR and repr(field) in (resp.remark or ""), resp.remark
    assert (await route(client, namesrv.address, "TWide")).code == ResponseCode.TOPIC_NOT_EXIST
    cluster_info = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
    info = await client.invoke(namesrv.address, cluster_info, timeout=WAIT)
    assert "broker-w" not in bytes(info.body).decode()


async def test_register_broker_with_a_queue_count_wider_than_java_is_refused(
    namesrv: NamesrvServer, client: RemotingClient
) -> None:
    """A registered topic's queue counts are Java ints: 2^40 queues (every client would build a queue object
    per id) are refused naming the field, and nothing of the registration is kept."""
    resp = await register_broker(client, namesrv.address, name="broker-q", topics={"TQueues": (2**40, 4, 6)})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "readQueueNums" in (resp.remark or ""), resp.remark
    assert (await route(client, namesrv.address, "TQueues")).code == ResponseCode.TOPIC_NOT_EXIST
