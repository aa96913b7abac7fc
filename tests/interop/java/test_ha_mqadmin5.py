"""Java 5's mqadmin (5.3.3, the reference for the 5.x admin codes) reads rocketq's replication admin answers:
``haStatus`` parses GET_BROKER_HA_STATUS (907) from a rocketq master and slave, and ``electMaster`` switches a
group over through rocketq's embedded controller, as ``rocketq ha switch`` does.

One rocketq cluster (name server with the embedded controller, a master, its slave) in the test's loop; the
three JVMs run side by side as asyncio subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
from pathlib import Path

from rocketq.codes import ResponseCode
from rocketq.remoting import RemotingClient
from rocketq.replication.controller.client import ControllerClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.controller import register_group
from rocketq.testing.java import MQADMIN_MAIN, TOOL_HEAP, classpath, java_env
from rocketq.testing.wire import Wire

WAIT = 120.0  # a JVM start on a busy 2-core machine; an upper bound, not a threshold


async def mqadmin5(home: Path, *args: str) -> tuple[int, str, str]:
    home.mkdir(parents=True, exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        "java", *TOOL_HEAP, f"-Duser.home={home}", "-Drocketmq.client.logRoot=" + str(home / "logs"),
        "-cp", classpath("5"), MQADMIN_MAIN, *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=java_env(), start_new_session=True,
    )  # fmt: skip
    try:
        async with asyncio.timeout(WAIT):
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL)
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def fields(text: str) -> dict[str, str]:
    """``#Key<TAB>value`` lines."""
    return {m[1]: m[2].strip() for m in re.finditer(r"^\s*#(\w[\w()/]*)\t(.*)$", text, re.M)}


async def test_java5_mqadmin_reads_ha_status_and_elects_through_the_controller(tmp_path: Path) -> None:
    settings = {"enableControllerInNamesrv": "true", "notifyBrokerRoleChanged": "false",
                "controllerStorePath": str(tmp_path / "controller")}  # fmt: skip
    rc = RemotingClient()
    try:
        async with EmbeddedCluster(tmp_path / "c", namesrv_settings=settings, haSendHeartbeatInterval=200,
                                   haReconnectInterval=100) as cluster:  # fmt: skip
            master = cluster.broker
            slave = await cluster.start_slave()
            wire = Wire(rc, cluster.broker_addr)
            for i in range(10):
                assert (await wire.send("HaJava5T", b"m%d" % i)).code == ResponseCode.SUCCESS
            top = master.store.get_max_phy_offset()
            async with asyncio.timeout(20):
                while not (slave.store.get_max_phy_offset() == top and master.ha.push2slave_max == top):
                    await asyncio.sleep(0.01)
            ns, name = cluster.namesrv_addr, master.config.brokerName
            cluster_name = master.config.brokerClusterName
            ctl = ControllerClient(rc, ns, timeout=10)
            await register_group(ctl, cluster_name, name, [master.config.broker_addr, slave.config.broker_addr])

            (mc, mout, merr), (sc, sout, serr), (ec, eout, eerr) = await asyncio.gather(
                mqadmin5(tmp_path / "h1", "haStatus", "-n", ns, "-b", master.config.broker_addr),
                mqadmin5(tmp_path / "h2", "haStatus", "-n", ns, "-b", slave.config.broker_addr),
                mqadmin5(tmp_path / "h3", "electMaster", "-a", ns, "-b", "2", "-bn", name, "-c", cluster_name),
            )
            assert mc == 0, merr
            m = fields(mout)
            assert m["MasterAddr"] == master.config.broker_addr and m["MasterCommitLogMaxOffset"] == str(top)
            assert m["SlaveNum"] == "1" and m["InSyncSlaveNum"] == "1", mout
            (row,) = [ln.split() for ln in mout.splitlines() if ln.startswith("127.0.0.1:")]
            assert row[1:3] == [str(top), "0"] and "OK" in row and row[-1] == "0", row

            assert sc == 0, serr
            s = fields(sout)
            assert s["MasterAddr"] == f"127.0.0.1:{master.config.haListenPort}" and s["CommitLogMaxOffset"] == str(top)

            assert ec == 0, eerr
            e = fields(eout)
            assert e["BrokerMasterAddr"] == slave.config.broker_addr and e["MasterEpoch"] == "2", eout
            after = await ctl.replica_info(name)
            assert after.master_id == 2 and after.master_epoch == 2
    finally:
        await rc.close()
