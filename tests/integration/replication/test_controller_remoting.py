"""The controller's codes end to end over TCP: embedded in a name server (``enableControllerInNamesrv``) with an
injected clock, and standalone (``ControllerServer``); role-change notices reach the brokers' ports; the state
survives a restart."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.codes import ControllerRequestCode as Code
from rocketq.codes import ControllerResponseCode as CRC
from rocketq.codes import ResponseCode
from rocketq.namesrv import NamesrvConfig, NamesrvServer
from rocketq.protocol import RemotingCommand
from rocketq.protocol.controller_headers import BrokerHeartbeatRequestHeader
from rocketq.remoting import RemotingClient
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingDispatcher, RemotingServer
from rocketq.replication.controller.client import ControllerClient, ControllerError
from rocketq.replication.controller.config import ControllerConfig
from rocketq.replication.controller.server import ControllerServer, ControllerServerConfig

WAIT = 5.0  # an upper bound for "eventually", never a pass/fail timing threshold
CLUSTER, GROUP = "C", "broker-a"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeBroker:
    """A port that records the NOTIFY_BROKER_ROLE_CHANGED requests it gets."""

    def __init__(self) -> None:
        self.dispatcher = RemotingDispatcher("fake-broker")
        self.notices: list[RemotingCommand] = []
        self.arrived = asyncio.Event()
        self.dispatcher.register(Code.NOTIFY_BROKER_ROLE_CHANGED, self._on_notice)
        self.server = RemotingServer(self.dispatcher, "127.0.0.1", 0)

    def _on_notice(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        self.notices.append(req)
        self.arrived.set()
        return req.response(ResponseCode.SUCCESS)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server.port}"


@pytest.fixture
async def brokers() -> AsyncIterator[list[FakeBroker]]:
    fakes = [FakeBroker(), FakeBroker()]
    for f in fakes:
        await f.server.start()
    try:
        yield fakes
    finally:
        for f in fakes:
            await f.server.close()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    c = RemotingClient()
    try:
        yield c
    finally:
        await c.close()


def namesrv_config(home: Path, *, controller: bool = True) -> NamesrvConfig:
    return NamesrvConfig(listen_host="127.0.0.1", listen_port=0, home_dir=home, enable_controller_in_namesrv=controller)


async def call(
    client: RemotingClient, addr: str, code: int, ext: dict[str, str] | None = None, body: bytes = b""
) -> RemotingCommand:
    return await client.invoke(addr, RemotingCommand.request(code, ext or {}, body), timeout=WAIT)


async def join(client: RemotingClient, addr: str, broker_addr: str) -> int:
    who = {"clusterName": CLUSTER, "brokerName": GROUP}
    nxt = await call(client, addr, Code.CONTROLLER_GET_NEXT_BROKER_ID, who)
    assert nxt.code == ResponseCode.SUCCESS
    broker_id = int(nxt.ext_fields["nextBrokerId"])
    check = {"appliedBrokerId": str(broker_id), "registerCheckCode": f"{broker_addr};1700000000000"}
    applied = await call(client, addr, Code.CONTROLLER_APPLY_BROKER_ID, {**who, **check})
    assert applied.code == ResponseCode.SUCCESS, applied.remark
    reg = await call(client, addr, Code.CONTROLLER_REGISTER_BROKER,
                     {**who, "brokerId": str(broker_id), "brokerAddress": broker_addr})  # fmt: skip
    assert reg.code == ResponseCode.SUCCESS, reg.remark
    await heartbeat(client, addr, broker_id, broker_addr)
    return broker_id


async def heartbeat(client: RemotingClient, addr: str, broker_id: int, broker_addr: str, max_offset: int = 0) -> None:
    ext = {"clusterName": CLUSTER, "brokerName": GROUP, "brokerAddr": broker_addr, "brokerId": str(broker_id),
           "epoch": "0", "maxOffset": str(max_offset), "heartbeatTimeoutMills": "3000"}  # fmt: skip
    resp = await call(client, addr, Code.BROKER_HEARTBEAT, ext)
    assert resp.code == ResponseCode.SUCCESS


async def replica_info(client: RemotingClient, addr: str) -> tuple[dict[str, str], dict[str, object]]:
    resp = await call(client, addr, Code.CONTROLLER_GET_REPLICA_INFO, {"brokerName": GROUP})
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return resp.ext_fields, json.loads(bytes(resp.body))


async def test_embedded_controller_elects_fences_fails_over_and_survives_a_restart(
    tmp_path: Path, brokers: list[FakeBroker], client: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    home = tmp_path / "namesrv"
    server = NamesrvServer(namesrv_config(home), clock=clock)
    await server.start()
    try:
        addr = server.address
        meta = await call(client, addr, Code.CONTROLLER_GET_METADATA_INFO)
        assert meta.code == ResponseCode.SUCCESS
        assert meta.ext_fields["controllerLeaderAddress"] == addr and meta.ext_fields["isLeader"] == "true"

        a, b = brokers
        assert await join(client, addr, a.addr) == 1
        assert await join(client, addr, b.addr) == 2
        elected = await call(client, addr, Code.CONTROLLER_ELECT_MASTER,
                             {"clusterName": CLUSTER, "brokerName": GROUP, "brokerId": "1"})  # fmt: skip
        assert elected.code == ResponseCode.SUCCESS
        assert {k: elected.ext_fields[k] for k in ("masterBrokerId", "masterAddress", "masterEpoch")} == {
            "masterBrokerId": "1", "masterAddress": a.addr, "masterEpoch": "1"}  # fmt: skip
        alter = {"brokerName": GROUP, "masterBrokerId": "1", "masterEpoch": "1"}
        body = json.dumps({"syncStateSet": [1, 2], "syncStateSetEpoch": 1}).encode()
        altered = await call(client, addr, Code.CONTROLLER_ALTER_SYNC_STATE_SET, alter, body)
        assert altered.code == ResponseCode.SUCCESS and altered.ext_fields["newSyncStateSetEpoch"] == "2"
        header, sync = await replica_info(client, addr)
        assert header["masterBrokerId"] == "1" and sync == {"syncStateSet": [1, 2], "syncStateSetEpoch": 2}

        # broker 1 goes silent: the scan (run by hand, the clock moved) elects 2 and tells both brokers
        for f in brokers:
            f.notices.clear()
            f.arrived.clear()
        clock.now += 5
        await heartbeat(client, addr, 2, b.addr, max_offset=42)
        assert server.controller is not None
        await server.controller.scan_now()
        header, sync = await replica_info(client, addr)
        assert (header["masterBrokerId"], header["masterAddress"], header["masterEpoch"]) == ("2", b.addr, "2")
        assert sync == {"syncStateSet": [2], "syncStateSetEpoch": 3}
        for f in brokers:
            await asyncio.wait_for(f.arrived.wait(), WAIT)
            notice = f.notices[-1]
            assert notice.ext_fields["masterBrokerId"] == "2" and notice.ext_fields["masterEpoch"] == "2"
            assert json.loads(bytes(notice.body))["syncStateSet"] == [2]

        # the old master's stale view is fenced
        stale = await call(client, addr, Code.CONTROLLER_ALTER_SYNC_STATE_SET, alter, body)
        assert stale.code == CRC.CONTROLLER_INVALID_MASTER
        stale = await call(client, addr, Code.CONTROLLER_ALTER_SYNC_STATE_SET,
                           {**alter, "masterBrokerId": "2"}, body)  # fmt: skip
        assert stale.code == CRC.CONTROLLER_FENCED_MASTER_EPOCH

        data = await call(client, addr, Code.CONTROLLER_GET_SYNC_STATE_DATA, body=json.dumps([GROUP, "x"]).encode())
        table = json.loads(bytes(data.body))["replicasInfoTable"]
        assert list(table) == [GROUP] and table[GROUP]["masterBrokerId"] == 2
        assert [r["brokerId"] for r in table[GROUP]["notInSyncReplicas"]] == [1]

        # client mistakes: one answer each, no traceback, the controller keeps serving
        missing = await call(client, addr, Code.CONTROLLER_GET_REPLICA_INFO)
        assert missing.code == ResponseCode.SYSTEM_ERROR and "brokerName" in (missing.remark or "")
        garbage = await call(client, addr, Code.CONTROLLER_ALTER_SYNC_STATE_SET, alter, b"{not json")
        assert garbage.code == ResponseCode.SYSTEM_ERROR
        deep = b"[" * 100_000 + b"]" * 100_000
        for code, ext in ((Code.CONTROLLER_ALTER_SYNC_STATE_SET, alter), (Code.CONTROLLER_GET_SYNC_STATE_DATA, {})):
            for bad_body in (deep, b'{"syncStateSet":["x"]}', b'["a", 1]', b"\xff"):
                answer = await call(client, addr, code, ext, bad_body)
                assert answer.code == ResponseCode.SYSTEM_ERROR, (code, bad_body[:20], answer.remark)
        bad_ids = await call(client, addr, Code.CLEAN_BROKER_DATA, {"brokerName": GROUP, "brokerIdSetToClean": "1;x"})
        assert bad_ids.code == CRC.CONTROLLER_INVALID_REQUEST
        assert not [r for r in caplog.records if r.exc_info], "a client mistake logged a traceback"
        unknown = await call(client, addr, Code.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "nope"})
        assert unknown.code == CRC.CONTROLLER_BROKER_METADATA_NOT_EXIST
    finally:
        await server.close()

    again = NamesrvServer(namesrv_config(home), clock=clock)
    await again.start()
    try:
        header, sync = await replica_info(client, again.address)
        assert (header["masterBrokerId"], header["masterEpoch"]) == ("2", "2")
        assert sync == {"syncStateSet": [2], "syncStateSetEpoch": 3}
    finally:
        await again.close()


async def test_without_the_key_the_name_server_does_not_serve_controller_codes(
    tmp_path: Path, client: RemotingClient
) -> None:
    async with NamesrvServer(namesrv_config(tmp_path, controller=False)) as server:
        resp = await call(client, server.address, Code.CONTROLLER_GET_REPLICA_INFO, {"brokerName": GROUP})
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert not (tmp_path / "controller").exists()


async def test_standalone_controller_serves_the_same_codes(tmp_path: Path, client: RemotingClient) -> None:
    server = ControllerServer(ControllerServerConfig("127.0.0.1", 0), ControllerConfig(controller_store_path=tmp_path))
    await server.start()
    try:
        addr = server.address
        assert await join(client, addr, "127.0.0.1:1") == 1
        first = await call(client, addr, Code.CONTROLLER_ELECT_MASTER,
                           {"clusterName": CLUSTER, "brokerName": GROUP, "brokerId": "1"})  # fmt: skip
        assert first.code == ResponseCode.SUCCESS and first.ext_fields["masterEpoch"] == "1"
        again = await call(client, addr, Code.CONTROLLER_ELECT_MASTER,
                           {"clusterName": CLUSTER, "brokerName": GROUP, "brokerId": "1"})  # fmt: skip
        assert again.code == CRC.CONTROLLER_MASTER_STILL_EXIST and again.ext_fields["masterEpoch"] == "1"
        assert (tmp_path / "controller-state.json").exists()

        conf = await call(client, addr, Code.GET_CONTROLLER_CONFIG)
        assert "enableElectUncleanMaster=false\n" in bytes(conf.body).decode()
        bad = await call(client, addr, Code.UPDATE_CONTROLLER_CONFIG, body=b"enableElectUncleanMaster=maybe\n")
        assert bad.code == ResponseCode.SYSTEM_ERROR and "enableElectUncleanMaster" in (bad.remark or "")
        ok = await call(client, addr, Code.UPDATE_CONTROLLER_CONFIG, body=b"# comment\nenableElectUncleanMaster=true\n")
        assert ok.code == ResponseCode.SUCCESS
        assert server.controller.manager.elect_unclean and server.controller.config.enable_elect_unclean_master
        conf = await call(client, addr, Code.GET_CONTROLLER_CONFIG)
        assert "enableElectUncleanMaster=true\n" in bytes(conf.body).decode()
    finally:
        await server.close()


async def test_the_typed_client_drives_a_failover(tmp_path: Path, client: RemotingClient) -> None:
    clock = Clock()
    async with NamesrvServer(namesrv_config(tmp_path), clock=clock) as server:
        cc = ControllerClient(client, server.address, timeout=WAIT)
        assert await cc.leader_address() == server.address
        for expected_id, address in ((1, "10.0.0.1:10911"), (2, "10.0.0.2:10911")):
            broker_id = await cc.next_broker_id(CLUSTER, GROUP)
            assert broker_id == expected_id
            await cc.apply_broker_id(CLUSTER, GROUP, broker_id, f"{address};1")
            info = await cc.register(CLUSTER, GROUP, broker_id, address)
            assert info.master_id is None  # nobody elected yet
            await cc.heartbeat(BrokerHeartbeatRequestHeader(
                cluster_name=CLUSTER, broker_addr=address, broker_name=GROUP, broker_id=broker_id,
                heartbeat_timeout_mills=3000))  # fmt: skip
        with pytest.raises(ControllerError) as refused:
            await cc.apply_broker_id(CLUSTER, GROUP, 2, "10.9.9.9:1;1")
        assert refused.value.code == CRC.CONTROLLER_BROKER_ID_INVALID and "BROKER_ID_INVALID" in str(refused.value)

        first = await cc.elect(CLUSTER, GROUP, 1)
        assert (first.master_id, first.master_epoch, first.sync_state_set) == (1, 1, frozenset({1}))
        assert await cc.alter_sync_state_set(GROUP, 1, 1, frozenset({1, 2}), 1) == 2
        stays = await cc.elect(CLUSTER, GROUP, 2)
        assert (stays.master_id, stays.master_epoch) == (1, 1)
        switched = await cc.elect(CLUSTER, GROUP, 2, designate=True)
        assert (switched.master_id, switched.master_address, switched.master_epoch) == (2, "10.0.0.2:10911", 2)
        info = await cc.replica_info(GROUP)
        assert (info.master_id, info.sync_state_set, info.sync_state_set_epoch) == (2, frozenset({2}), 3)
        with pytest.raises(ControllerError) as fenced:
            await cc.alter_sync_state_set(GROUP, 2, 1, frozenset({1, 2}), 3)
        assert fenced.value.code == CRC.CONTROLLER_FENCED_MASTER_EPOCH


async def test_a_master_whose_connection_closes_is_replaced_without_waiting_for_its_timeout(tmp_path: Path) -> None:
    clock = Clock()  # never moves: only the closed connection can make the master dead
    async with NamesrvServer(namesrv_config(tmp_path), clock=clock) as server:
        addr = server.address
        master, slave = RemotingClient(), RemotingClient()
        try:
            assert await join(master, addr, "10.0.0.1:10911") == 1
            assert await join(slave, addr, "10.0.0.2:10911") == 2
            cc = ControllerClient(slave, addr, timeout=WAIT)
            assert (await cc.elect(CLUSTER, GROUP, 1)).master_id == 1
            assert await cc.alter_sync_state_set(GROUP, 1, 1, frozenset({1, 2}), 1) == 2
            await master.close()  # the master's process dies: its connection closes
            info = await cc.replica_info(GROUP)
            for _ in range(200):  # bounded: the server sees the close on its next loop turns
                if info.master_id == 2:
                    break
                await asyncio.sleep(0.02)
                info = await cc.replica_info(GROUP)
            assert (info.master_id, info.master_epoch, info.sync_state_set) == (2, 2, frozenset({2}))
            third = RemotingClient()
            try:
                assert await join(third, addr, "10.0.0.3:10911") == 3
                assert await cc.alter_sync_state_set(GROUP, 2, 2, frozenset({2, 3}), 3) == 4
                await server.close()  # closing drops every connection: that is no broker's death
            finally:
                await third.close()
        finally:
            await master.close()
            await slave.close()
    reader = RemotingClient()
    try:
        async with NamesrvServer(namesrv_config(tmp_path), clock=clock) as again:
            info = await ControllerClient(reader, again.address, timeout=WAIT).replica_info(GROUP)
            assert (info.master_id, info.master_epoch, info.sync_state_set) == (2, 2, frozenset({2, 3}))
    finally:
        await reader.close()
