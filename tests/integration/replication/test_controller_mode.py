"""Two brokers in 5.x controller mode with the controller embedded in the name server, in one event loop: the
first becomes master and the second its slave in the in-sync set; the master stops → the slave is elected,
takes brokerId 0 and the name server's route names it; the old master, restarted with a tail its successor
never had, cuts that tail and follows, ending with the same commit log and consume queues."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketq.broker.config import BrokerConfig
from rocketq.broker.controller import BrokerController
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.route import TopicRouteData
from rocketq.remoting.client import RemotingClient
from rocketq.replication.controller.epoch import EpochFile
from rocketq.replication.status import ha_runtime_info
from rocketq.store.results import GetMessageStatus
from rocketq.testing import EmbeddedCluster
from rocketq.testing.cluster import TEST_BROKER_DEFAULTS
from rocketq.testing.waiting import store_files as files
from rocketq.testing.waiting import until
from rocketq.testing.wire import Wire, records

KEYS = {
    "mappedFileSizeCommitLog": 64 * 1024,
    "mappedFileSizeConsumeQueue": 50 * 20,
    "haSendHeartbeatInterval": 200,
    "haHousekeepingInterval": 5_000,
    "haReconnectInterval": 100,
    "slaveTimeout": 500,
    "enableControllerMode": "true",
    "brokerHeartbeatInterval": 200,
    "syncBrokerMetadataPeriod": 300,
    "checkSyncStateSetPeriod": 200,
    "haMaxTimeSlaveNotCatchup": 30_000,
    "controllerHeartBeatTimeoutMills": 2_000,
}





def config(cluster: EmbeddedCluster, name: str, **more: str) -> BrokerConfig:
    values = {k: str(v) for k, v in {**TEST_BROKER_DEFAULTS, **KEYS}.items()}
    values.update(brokerName="broker-a", storePathRootDir=str(cluster.base_dir / name),
                  namesrvAddr=cluster.namesrv_addr, controllerAddr=cluster.namesrv_addr, **more)  # fmt: skip
    return BrokerConfig.from_mapping(values)


async def send(rc: RemotingClient, broker: BrokerController, n: int, tag: str) -> list[int]:
    wire = Wire(rc, broker.config.broker_addr)
    return [(await wire.send("TCtl", b"%s-%05d" % (tag.encode(), i) * 20, queue_id=i % 2)).code for i in range(n)]


async def route_master(rc: RemotingClient, cluster: EmbeddedCluster) -> str | None:
    resp = await Wire(rc, cluster.namesrv_addr).call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TCtl"})
    if resp.code != ResponseCode.SUCCESS:
        return None
    route = TopicRouteData.decode(resp.body)
    return next((bd.broker_addrs.get(0) for bd in route.broker_datas if bd.broker_name == "broker-a"), None)


async def test_election_failover_and_a_divergent_old_master_rejoining(tmp_path: Path, rc: RemotingClient) -> None:
    async with EmbeddedCluster(tmp_path, brokers=0, namesrv_settings={"enableControllerInNamesrv": "true"}) as cluster:
        a = await cluster.start_broker(0, config(cluster, "a"))
        assert a.replicas is not None and a.role.is_master and a.role.broker_id == 0 and a.replicas.broker_id == 1
        b = await cluster.start_broker(1, config(cluster, "b"))
        assert b.replicas is not None and b.role.is_slave and b.replicas.broker_id == 2
        await until(lambda: b.ha.client.connected)
        await until(lambda: a.ha.sync_state_set == frozenset({1, 2}))  # the slave joined the in-sync set
        info = ha_runtime_info(a.ha, is_slave=False)  # GET_BROKER_HA_STATUS follows the controller's set
        assert info["inSyncSlaveNums"] == 1 and [c["inSync"] for c in info["haConnectionInfo"]] == [True]
        assert set(await send(rc, a, 60, "one")) == {ResponseCode.SUCCESS}  # answered once b holds them
        assert b.store.get_max_phy_offset() == a.store.get_max_phy_offset()
        assert (await send(rc, b, 1, "x")) == [ResponseCode.SERVICE_NOT_AVAILABLE]
        # a held pull is answered with a new message once the slave holds it (not at its arrival, when the
        # message is not visible yet, and not at the hold's timeout)
        end = a.store.get_max_offset_in_queue("TCtl", 0)
        held = asyncio.create_task(Wire(rc, a.config.broker_addr).pull("TCtl", 0, end, sys_flag=6,
                                                     suspend_ms=8_000, timeout=15))
        await until(lambda: a.pull_holds.held_count() == 1)
        assert (await send(rc, a, 1, "held")) == [ResponseCode.SUCCESS]
        answer = await asyncio.wait_for(held, 5)
        assert answer.code == ResponseCode.SUCCESS and [r.body[:4] for r in records(answer)] == [b"held"]

        # cut b off before a notices (a master killed within haMaxTimeSlaveNotCatchup), then a writes a tail b
        # never gets: its sends time out waiting for b, so none of it was acknowledged
        async def no_check() -> None:
            pass

        a.replicas.check_sync_state_set = no_check  # type: ignore[method-assign]
        b.replicas._follow_ready = lambda: None  # type: ignore[method-assign]
        b.ha.client.update_master_address(None)
        agreed = b.store.get_max_phy_offset()
        queued = a.store.get_max_offset_in_queue("TCtl", 0)
        assert set(await send(rc, a, 5, "lost")) == {ResponseCode.FLUSH_SLAVE_TIMEOUT}
        assert a.store.get_max_phy_offset() > agreed
        # stored on a, but b (in the in-sync set) lacks them: consumers of a do not get them
        assert a.store.get_max_offset_in_queue("TCtl", 0) == queued + 3
        assert a.ha.confirm_offset() == agreed
        assert a.store.get_message("TCtl", 0, queued, 32).status is GetMessageStatus.OFFSET_OVERFLOW_ONE
        found = a.store.get_message("TCtl", 0, queued - 2, 32)
        assert found.status is GetMessageStatus.FOUND and found.message_count == 2
        found.release()
        await a.shutdown()  # its controller connection closes: b is elected at once

        await until(lambda: b.role.is_master and b.role.broker_id == 0, timeout=10)
        assert b.role.epoch == 2 and [(e.epoch, e.start_offset) for e in b.replicas.epochs.entries] == [
            (1, 0), (2, agreed)]  # fmt: skip
        await until(lambda: b.registration.last_result is not None)
        assert set(await send(rc, b, 40, "two")) == {ResponseCode.SUCCESS}  # a set of b alone answers at once
        for _ in range(200):
            if await route_master(rc, cluster) == b.config.broker_addr:
                break
            await asyncio.sleep(0.05)
        assert await route_master(rc, cluster) == b.config.broker_addr
        assert cluster.namesrv is not None  # its registration carries the master epoch (fencing a stale master)
        assert cluster.namesrv.route_info.broker_live_table[b.config.broker_addr].data_version.state_version == 2

        # the old master comes back: a slave of epoch 2, its tail cut at b's epoch start, then following b
        a2 = await cluster.start_broker(0, config(cluster, "a"))
        assert a2.replicas is not None and a2.replicas.broker_id == 1
        await until(lambda: a2.role.is_slave and a2.ha.client.connected)
        await until(lambda: a2.store.get_max_phy_offset() == b.store.get_max_phy_offset())
        await until(lambda: b.ha.sync_state_set == frozenset({1, 2}))
        assert [(e.epoch, e.start_offset) for e in EpochFile(tmp_path / "a").load().entries] == [(1, 0), (2, agreed)]
        assert set(await send(rc, b, 10, "three")) == {ResponseCode.SUCCESS}
        await until(lambda: a2.store.get_max_phy_offset() == b.store.get_max_phy_offset())
        for store in (a2.store, b.store):
            store.commit_log.mfq.flush_all()
            store._flush_logics(0)
        for sub in ("commitlog", "consumequeue", "index"):
            assert files(tmp_path / "a", sub) == files(tmp_path / "b", sub), sub

        # the slave goes away: the master drops it from the in-sync set when its connection ends (not at the
        # next periodic check, stopped here with the replica-info poll), so sends are answered at once again
        for task in b.replicas._tasks:
            if task.get_name() in ("replicas-check_sync_state_set", "replicas-sync_replica_info"):
                task.cancel()
        await a2.shutdown()
        await until(lambda: b.ha.sync_state_set == frozenset({2}), timeout=10)
        assert set(await send(rc, b, 5, "four")) == {ResponseCode.SUCCESS}


ACCOUNTS = """
accounts:
  - accessKey: BrokerGroupA
    secretKey: group-secret-1
    admin: true
"""


async def test_brokers_sign_their_controller_and_epoch_requests(tmp_path: Path) -> None:
    """A name server with an account file protects its embedded controller as every write, and brokers with
    ACL protect 1007: the brokers sign both with their account and still elect, follow and join the set."""
    acl = tmp_path / "namesrv_acl.yml"
    acl.write_text(ACCOUNTS)
    broker_acl = tmp_path / "plain_acl.yml"
    broker_acl.write_text(ACCOUNTS)
    settings = {"enableControllerInNamesrv": "true", "aclFile": str(acl)}
    async with EmbeddedCluster(tmp_path, brokers=0, namesrv_settings=settings) as cluster:
        signed = {"accessKey": "BrokerGroupA", "secretKey": "group-secret-1", "aclEnable": "true",
                  "aclFilePath": str(broker_acl)}  # fmt: skip
        a = await cluster.start_broker(0, config(cluster, "a", **signed))
        b = await cluster.start_broker(1, config(cluster, "b", **signed))
        assert a.role.is_master and b.role.is_slave
        await until(lambda: a.ha.sync_state_set == frozenset({1, 2}))
