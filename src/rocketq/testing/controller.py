"""Put a broker group into a 5.x controller's state the way controller-mode brokers would (tests of admin tools).

``register_group`` takes broker addresses in order: each gets the controller's next id (1, 2, ...), applies
it, registers and heartbeats (alive for ``alive_ms``); the first elects itself, and the master then puts every
member in the in-sync set. The brokers behind the addresses need not run in controller mode.
"""

from __future__ import annotations

from rocketq.protocol.controller_headers import BrokerHeartbeatRequestHeader
from rocketq.replication.controller.client import ControllerClient, MasterInfo


async def register_group(
    ctl: ControllerClient, cluster: str, broker_name: str, addrs: list[str], *, alive_ms: int = 600_000
) -> MasterInfo:
    ids = []
    for addr in addrs:
        broker_id = await ctl.next_broker_id(cluster, broker_name)
        await ctl.apply_broker_id(cluster, broker_name, broker_id, f"{addr};1")
        await ctl.register(cluster, broker_name, broker_id, addr)
        await ctl.heartbeat(BrokerHeartbeatRequestHeader(
            cluster_name=cluster, broker_addr=addr, broker_name=broker_name, broker_id=broker_id, epoch=0,
            max_offset=0, heartbeat_timeout_mills=alive_ms,
        ))  # fmt: skip
        ids.append(broker_id)
    first = await ctl.elect(cluster, broker_name, ids[0])
    set_epoch = await ctl.alter_sync_state_set(broker_name, ids[0], first.master_epoch, frozenset(ids),
                                               first.sync_state_set_epoch)  # fmt: skip
    return MasterInfo(first.master_id, first.master_address, first.master_epoch, frozenset(ids), set_epoch)
