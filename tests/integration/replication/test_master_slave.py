"""A rocketq master and slave in one event loop: the slave finds its master through the name server, ends
byte-identical (commit log, consume queues, index), resumes from its own end after a restart; SYNC_MASTER
answers after the slave's ack, and without a slave answers Java's statuses without hanging."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rocketq.broker.controller import BrokerController
from rocketq.broker.role import BrokerRole
from rocketq.codes import ResponseCode
from rocketq.remoting.client import RemotingClient
from rocketq.replication.frames import encode_report, encode_transfer_header
from rocketq.testing import EmbeddedCluster
from rocketq.testing.waiting import store_files as files
from rocketq.testing.waiting import until
from rocketq.testing.wire import Wire

# small files (the load rolls several), short HA intervals (nothing waits for real seconds)
HA = {
    "mappedFileSizeCommitLog": 64 * 1024,
    "mappedFileSizeConsumeQueue": 50 * 20,
    "haSendHeartbeatInterval": 200,
    "haHousekeepingInterval": 5_000,
    "haReconnectInterval": 100,
    "haTransferBatchSize": 5_000,
}





async def load(wire: Wire, n: int, topic: str = "THa") -> list[int]:
    codes = []
    for i in range(n):
        props = {"TAGS": f"t{i % 3}", "KEYS": f"k{i} all"}
        resp = await wire.send(topic, b"m%05d" % i * (1 + i % 50), queue_id=i % 4, props=props)
        codes.append(resp.code)
    return codes


def synced(master: BrokerController, slave: BrokerController) -> bool:
    return slave.store.get_max_phy_offset() == master.store.get_max_phy_offset() > 0


async def test_a_slave_ends_byte_identical_and_resumes_from_its_own_end(tmp_path: Path, rc: RemotingClient) -> None:
    async with EmbeddedCluster(tmp_path, **HA) as cluster:
        master = cluster.broker
        slave = await cluster.start_slave()
        assert slave.role.is_slave and slave.config.brokerId == 1
        await until(lambda: slave.ha.client.connected)  # the HA address came from the REGISTER_BROKER answer
        assert slave.ha.client.master_address == f"127.0.0.1:{master.config.haListenPort}"
        wire = Wire(rc, cluster.broker_addr)
        assert set(await load(wire, 400)) == {ResponseCode.SUCCESS}
        assert master.store.get_max_phy_offset() > 2 * 64 * 1024  # three files
        await until(lambda: synced(master, slave))

        # the slave refuses client writes, with Java's code and remark
        refused = await Wire(rc, slave.config.broker_addr).send("THa", b"no")
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert refused.remark is not None and "messages are put to the slave" in refused.remark
        # the slave's store serves the queues it built (pulls need its topic config: SlaveSynchronize, later)
        got = slave.store.get_message("THa", 1, 0, 32)
        try:
            assert got.message_count == 32
        finally:
            got.release()

        # a restarted slave asks for the bytes after its own end, and only those
        slave_cfg = slave.config
        own_end = slave.store.get_max_phy_offset()
        await slave.shutdown()  # (a second shutdown by restart_broker does nothing)
        assert set(await load(wire, 150)) == {ResponseCode.SUCCESS}
        slave = await cluster.restart_broker(1)  # shut down already: the restart starts it again
        assert slave_cfg.storePathRootDir == slave.config.storePathRootDir and slave.role.is_slave
        await until(lambda: synced(master, slave))
        requests = [c.request_offset for c in master.ha.master.connections]
        assert requests == [own_end]
        assert slave.ha.client.connects == 1

    root_m, root_s = tmp_path / "broker-a", tmp_path / "broker-a-s1"
    for sub in ("commitlog", "consumequeue", "index"):
        mine, theirs = files(root_s, sub), files(root_m, sub)
        assert theirs and [name for name, _ in mine] == [name for name, _ in theirs], sub
        assert mine == theirs, f"{sub} differs"


@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])  # SYNC_FLUSH: the flush wait, then the slave's
async def test_sync_master_answers_after_the_slave_has_the_bytes(
    tmp_path: Path, rc: RemotingClient, flush: str
) -> None:
    async with EmbeddedCluster(tmp_path, brokerRole="SYNC_MASTER", slaveTimeout=30_000, flushDiskType=flush,
                               **HA) as cluster:  # fmt: skip
        master = cluster.broker
        slave = await cluster.start_slave()
        await until(lambda: master.ha.master.connection_count == 1 and slave.ha.client.reported >= 0)
        wire = Wire(rc, cluster.broker_addr)
        for i in range(20):
            resp = await wire.send("TSync", b"x" * (100 + i), props={"KEYS": f"s{i}"})
            assert resp.code == ResponseCode.SUCCESS
            # answered only once the slave's commit log holds the message's last byte
            assert slave.store.get_max_phy_offset() >= master.store.get_max_phy_offset()
        sends = [asyncio.create_task(wire.send("TSync", b"y" * 300)) for _ in range(50)]
        answers = await asyncio.gather(*sends)  # many waits, answered by a few acks
        assert {a.code for a in answers} == {ResponseCode.SUCCESS}
        assert slave.store.get_max_phy_offset() == master.store.get_max_phy_offset()


async def test_sync_master_without_a_slave_answers_java_statuses(tmp_path: Path, rc: RemotingClient) -> None:
    async with EmbeddedCluster(tmp_path, brokerRole="SYNC_MASTER", slaveTimeout=300, **HA) as cluster:
        master = cluster.broker
        wire = Wire(rc, cluster.broker_addr)
        # no slave connected: SLAVE_NOT_AVAILABLE at once; the message is stored on the master
        resp = await wire.send("TNoSlave", b"a")
        assert resp.code == ResponseCode.SLAVE_NOT_AVAILABLE
        assert "msgId" in resp.ext_fields and master.store.get_max_offset_in_queue("TNoSlave", 0) == 1

        # a connected slave that never acknowledges: FLUSH_SLAVE_TIMEOUT after slaveTimeout, nothing hangs
        reader, writer = await asyncio.open_connection("127.0.0.1", master.config.haListenPort)
        try:
            writer.write(encode_report(master.store.get_max_phy_offset()))
            await writer.drain()
            await until(lambda: master.ha.master.connection_count == 1)
            async with asyncio.timeout(10):
                answers = await asyncio.gather(*(wire.send("TNoSlave", b"b") for _ in range(5)))
            assert {a.code for a in answers} == {ResponseCode.FLUSH_SLAVE_TIMEOUT}
            assert all("msgId" in a.ext_fields for a in answers)  # stored on the master: the answer says where
            # the silent slave got the bytes pushed (a header of 12 bytes, then the records)
            pushed = await asyncio.wait_for(reader.read(12), 5)
            assert int.from_bytes(pushed[:8], "big") == master.ha.master.connections.copy().pop().request_offset

            # the fall-behind rule: a slave lagging by haSlaveFallbehindMax or more counts as unavailable
            master.ha.config = master.ha.config.__class__(slave_fallbehind_max=1)
            resp = await wire.send("TNoSlave", b"c")
            assert resp.code == ResponseCode.SLAVE_NOT_AVAILABLE
        finally:
            writer.close()
        await until(lambda: master.ha.master.connection_count == 0)
        resp = await wire.send("TNoSlave", b"d")
        assert resp.code == ResponseCode.SLAVE_NOT_AVAILABLE


async def test_a_slave_turned_master_stops_following_and_takes_sends(tmp_path: Path, rc: RemotingClient) -> None:
    async with EmbeddedCluster(tmp_path, **HA) as cluster:
        master = cluster.broker
        slave = await cluster.start_slave()
        wire = Wire(rc, cluster.broker_addr)
        assert set(await load(wire, 50)) == {ResponseCode.SUCCESS}
        await until(lambda: synced(master, slave))
        copied = slave.store.get_max_offset_in_queue("THa", 1)
        assert copied > 0

        slave.role.change(BrokerRole.ASYNC_MASTER, epoch=1, broker_id=0)  # what a failover does
        await until(lambda: not slave.ha.client.connected and master.ha.master.connection_count == 0)
        assert slave.ha.client.master_address is None
        assert set(await load(wire, 10)) == {ResponseCode.SUCCESS}  # the old master's new bytes stay there
        own = Wire(rc, slave.config.broker_addr)
        resp = await own.send("THa", b"on the new master", queue_id=1)
        assert resp.code == ResponseCode.SUCCESS
        assert int(resp.ext_fields["queueOffset"]) == copied  # its queues go on from the replicated ones


async def test_foreign_bytes_on_the_ha_port_leave_no_traceback(
    tmp_path: Path, rc: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    async with EmbeddedCluster(tmp_path, brokerRole="SYNC_MASTER", slaveTimeout=200, **HA) as cluster:
        master = cluster.broker
        port = master.config.haListenPort
        for junk in (b"GET / HTTP/1.1\r\n\r\n", (-5).to_bytes(8, "big", signed=True) * 3, b"\xff" * 8 + b"\x01" * 16):
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(junk)
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.close()
        await until(lambda: master.ha.master.connection_count == 0)
        # a slave whose master sends nonsense reconnects instead of failing
        slave_cfg = cluster.slave_config(haMasterAddress="127.0.0.1:1")  # nobody listens there
        slave = await cluster.start_broker(len(cluster.brokers), slave_cfg)
        server = await asyncio.start_server(
            lambda r, w: w.write(b"\x00" * 8 + b"\xff\xff\xff\xff"), "127.0.0.1", 0  # a negative body size
        )
        try:
            slave.ha.client.update_master_address(f"127.0.0.1:{server.sockets[0].getsockname()[1]}")
            await until(lambda: slave.ha.client.connects >= 2)
        finally:
            server.close()
        resp = await Wire(rc, cluster.broker_addr).send("TJunk", b"still serving")
        assert resp.code == ResponseCode.SLAVE_NOT_AVAILABLE
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


async def test_keep_alives_and_housekeeping_close_on_both_sides(tmp_path: Path) -> None:
    quick = {**HA, "haSendHeartbeatInterval": 100, "haHousekeepingInterval": 600}
    async with EmbeddedCluster(tmp_path, **quick) as cluster:
        master = cluster.broker
        # the master sends an empty frame at its own end when idle, and closes a slave silent for 600 ms
        reader, writer = await asyncio.open_connection("127.0.0.1", master.config.haListenPort)
        try:
            writer.write(encode_report(0))
            await writer.drain()
            header = await asyncio.wait_for(reader.readexactly(12), 10)
            assert header == encode_transfer_header(0, 0)
            await asyncio.wait_for(reader.read(), 10)  # EOF: closed for silence (only keep-alives came)
            assert master.ha.master.connection_count == 0
        finally:
            writer.close()

        # a slave keeps reporting while idle, and leaves a master that never sends anything
        reports: list[bytes] = []
        seen = asyncio.Event()

        async def mute_master(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(64):
                    reports.append(data)
                    if len(b"".join(reports)) >= 16:
                        seen.set()
            finally:
                w.close()

        server = await asyncio.start_server(mute_master, "127.0.0.1", 0)
        try:
            addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
            slave = await cluster.start_broker(1, cluster.slave_config(haMasterAddress=addr, **quick))
            await asyncio.wait_for(seen.wait(), 10)  # the first report at once, then keep-alives
            assert set(b"".join(reports)[:16]) == {0}  # an empty slave reports 0
            await until(lambda: slave.ha.client.connects >= 2)  # gave up on the mute master, connected again
        finally:
            server.close()
