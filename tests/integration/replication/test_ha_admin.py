"""Operating replication: GET_BROKER_HA_STATUS (907) from a master and a slave, ``rocketq ha status`` (with the
controller's epochs and in-sync set), ``rocketq cluster list`` with the slave's role and lag, and
``rocketq ha switch`` through the name server's embedded controller.

One cluster (a name server with the embedded controller, a master and its slave) in the module's loop; the
commands run in-process (``rocketq.cli.main.main`` in a thread, as the ``rocketq`` executable would run them).
The brokers run in static 4.9 mode; the controller's view of their group is built by registering the same two
addresses with it, as controller-mode brokers would (ids 1 and 2)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from rocketq.cli.main import main
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol import RemotingCommand
from rocketq.protocol.bodies import loads
from rocketq.remoting import RemotingClient
from rocketq.replication.controller.client import ControllerClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.controller import register_group
from rocketq.testing.waiting import until
from rocketq.testing.wire import Wire

pytestmark = pytest.mark.asyncio(loop_scope="module")

HA = {"haSendHeartbeatInterval": 200, "haReconnectInterval": 100}
WAIT = 20.0  # an upper bound for "eventually" on a busy machine, not a threshold



class Env:
    def __init__(self, cluster: EmbeddedCluster, rc: RemotingClient) -> None:
        self.cluster = cluster
        self.rc = rc
        self.master = cluster.brokers[0]
        self.slave = cluster.brokers[1]
        self.name = self.master.config.brokerName


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    base = tmp_path_factory.mktemp("ha-admin")
    # notifyBrokerRoleChanged=false: these brokers run in 4.9 mode and are not told about the controller's view
    settings = {"enableControllerInNamesrv": "true", "notifyBrokerRoleChanged": "false",
                "controllerStorePath": str(base / "controller")}  # fmt: skip
    rc = RemotingClient()
    async with EmbeddedCluster(base, namesrv_settings=settings, **HA) as cluster:
        await cluster.start_slave()
        e = Env(cluster, rc)
        await until(lambda: e.slave.ha.client.connected and e.master.ha.master.connection_count == 1)
        wire = Wire(rc, cluster.broker_addr)
        for i in range(20):
            assert (await wire.send("HaAdminT", b"m%d" % i, queue_id=i % 4)).code == ResponseCode.SUCCESS
        top = e.master.store.get_max_phy_offset()
        await until(lambda: e.slave.store.get_max_phy_offset() == top and e.master.ha.push2slave_max == top)
        try:
            yield e
        finally:
            await rc.close()


async def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def ha_status(env: Env, addr: str) -> dict[str, Any]:
    resp = await env.rc.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS), timeout=WAIT)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    body = loads(resp.body)
    assert isinstance(body, dict)
    return body


async def test_the_master_and_the_slave_answer_their_ha_runtime_info(env: Env) -> None:
    server = env.master.ha.master._server
    assert server is not None and env.master.config.listenHost == "127.0.0.1"
    assert {s.getsockname()[0] for s in server.sockets} == {"127.0.0.1"}  # the HA port binds listenHost
    top = env.master.store.get_max_phy_offset()
    master = await ha_status(env, env.master.config.broker_addr)
    assert master["master"] is True and master["masterCommitLogMaxOffset"] == top
    (conn,) = master["haConnectionInfo"]
    assert conn["slaveAckOffset"] == top and conn["diff"] == 0 and conn["inSync"] is True
    assert conn["addr"].startswith("127.0.0.1:") and conn["transferFromWhere"] == 0
    assert master["inSyncSlaveNums"] == 1

    slave = await ha_status(env, env.slave.config.broker_addr)
    assert slave["master"] is False and slave["haConnectionInfo"] == []
    client = slave["haClientRuntimeInfo"]
    assert client["masterAddr"] == f"127.0.0.1:{env.master.config.haListenPort}"
    assert client["maxOffset"] == top and client["connected"] is True
    assert client["lastReadTimestamp"] > 0 and client["lastWriteTimestamp"] > 0


async def register_with_controller(env: Env) -> str:
    """The group as the controller sees it: broker 1 (the master's address) leads, broker 2 (the slave's) is in
    the in-sync set; both alive."""
    addr = env.cluster.namesrv_addr
    ctl = ControllerClient(env.rc, addr, timeout=WAIT)
    group = await register_group(ctl, env.master.config.brokerClusterName, env.name,
                                 [env.master.config.broker_addr, env.slave.config.broker_addr])  # fmt: skip
    assert group.master_id == 1 and group.sync_state_set == frozenset({1, 2})
    return addr


async def test_ha_status_shows_roles_offsets_lag_and_the_controller_view(
    env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = env.cluster.namesrv_addr
    controller = await register_with_controller(env)
    top = env.master.store.get_max_phy_offset()
    code, out, err = await cli(capsys, "ha", "status", "-n", ns, "--controller", controller, "--json")
    assert code == 0, err
    rows = {r["brokerId"]: r for r in json.loads(out)}
    assert set(rows) == {0, 1}
    m, s = rows[0], rows[1]
    assert m["brokerRole"] == "ASYNC_MASTER" and m["maxOffset"] == top and "lag" not in m
    assert s["brokerRole"] == "SLAVE" and s["maxOffset"] == top and s["lag"] == 0
    assert m["masterEpoch"] == s["masterEpoch"] == 1 and m["syncStateSet"] == [1, 2]
    assert (m["controllerBrokerId"], s["controllerBrokerId"]) == (1, 2) and m["inSync"] and s["inSync"]
    assert m["syncStateSetEpoch"] == 2

    code, out, err = await cli(capsys, "ha", "status", "-n", ns, "--controller", controller)
    assert code == 0, err
    header, rule, *lines = out.splitlines()
    assert header.split()[:4] == ["broker", "id", "address", "role"] and "in-sync set" in header
    assert set(rule.replace(" ", "")) == {"-"} and len(lines) == 2
    assert "1 slave(s), 1 in sync" in lines[0] and f"following 127.0.0.1:{env.master.config.haListenPort}" in lines[1]
    assert "1,2" in lines[0]

    # the slave falls behind: stop its HA client, write to the master; the lag is the bytes it misses
    await env.slave.ha.client.stop()
    wire = Wire(env.rc, env.cluster.broker_addr)
    assert (await wire.send("HaAdminT", b"x" * 1000)).code == ResponseCode.SUCCESS
    behind = env.master.store.get_max_phy_offset() - env.slave.store.get_max_phy_offset()
    assert behind > 1000
    code, out, err = await cli(capsys, "ha", "status", "-n", ns, "-b", env.slave.config.broker_addr, "--json")
    assert code == 0, err
    (only,) = json.loads(out)
    assert only["brokerRole"] == "SLAVE" and only["haRuntimeInfo"]["haClientRuntimeInfo"]["connected"] is False
    assert "lag" not in only  # its master was not asked
    code, out, err = await cli(capsys, "cluster", "list", "-n", ns, "--json")
    assert code == 0, err
    listed = {r["brokerId"]: r for r in json.loads(out)}
    assert listed[0]["brokerRole"] == "ASYNC_MASTER" and "lag" not in listed[0]
    assert listed[1]["brokerRole"] == "SLAVE" and listed[1]["lag"] == behind
    code, out, err = await cli(capsys, "cluster", "list", "-n", ns)
    assert code == 0, err
    assert out.splitlines()[0].split()[:6] == ["cluster", "broker", "id", "address", "role", "lag"]
    cells = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()[2:]]
    assert [c[4:6] for c in cells] == [["ASYNC_MASTER", "-"], ["SLAVE", str(behind)]]
    env.slave.ha.client.start()
    await until(lambda: env.slave.store.get_max_phy_offset() == env.master.store.get_max_phy_offset())


async def test_ha_switch_elects_the_designated_broker(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    controller = env.cluster.namesrv_addr
    ctl = ControllerClient(env.rc, controller, timeout=WAIT)
    before = await ctl.replica_info(env.name)
    assert before.master_id == 1 and before.sync_state_set == frozenset({1, 2})  # the previous test's setup

    code, out, err = await cli(capsys, "ha", "switch", "--broker-name", env.name, "--broker-id", "2",
                               "--controller", controller, "--json")  # fmt: skip
    assert code == 0, err
    done = json.loads(out)
    assert done["masterBrokerId"] == 2 and done["masterAddress"] == env.slave.config.broker_addr
    assert done["masterEpoch"] == before.master_epoch + 1 and done["changed"] is True
    after = await ctl.replica_info(env.name)
    assert after.master_id == 2 and after.master_epoch == before.master_epoch + 1

    # again: already the master, nothing changes, exit 0 with a note
    code, out, err = await cli(capsys, "ha", "switch", "--broker-name", env.name, "--broker-id", "2",
                               "--controller", controller)  # fmt: skip
    assert code == 0 and "already the master" in err and "Traceback" not in err
    assert (await ctl.replica_info(env.name)).master_epoch == after.master_epoch

    # a broker outside the in-sync set cannot be designated: the controller's code, one line, exit 1
    code, out, err = await cli(capsys, "ha", "switch", "--broker-name", env.name, "--broker-id", "1",
                               "--controller", controller)  # fmt: skip
    assert code == 1 and out == "" and "CONTROLLER_ELECT_MASTER_FAILED (2012)" in err, err
    assert len(err.strip().splitlines()) == 1
    code, out, err = await cli(capsys, "ha", "switch", "--broker-name", "NoSuchGroup", "--broker-id", "1",
                               "--controller", controller)  # fmt: skip
    assert code == 1 and "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED" in err, err


async def test_ha_switch_without_a_controller_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = await cli(capsys, "ha", "switch", "--broker-name", "b", "--broker-id", "1")
    assert code == 2 and out == ""
    assert err.startswith("error: a switch-over needs the 5.x controller") and "static 4.9" in err
    code, out, err = await cli(capsys, "ha", "switch", "--broker-name", "b", "--broker-id", "0",
                               "--controller", "127.0.0.1:1")  # fmt: skip
    assert code == 2 and "--broker-id" in err
