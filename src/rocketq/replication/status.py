"""A broker's HA runtime info as Java 5's ``HARuntimeInfo`` (GET_BROKER_HA_STATUS, 907; ``mqadmin haStatus``).

A master lists its HA connections (the slave's socket address, its last acked offset, the gap to the master's
max offset, whether it is in sync, where the transfer started); a slave names its master's HA address and its
own max offset. Field names are Java's; ``connected`` (slave: an HA connection is up) is rocketq's addition,
and ``transferredByteInSecond`` / ``masterFlushOffset`` are not measured here, so they are left out (Java's
reader defaults them to 0).
"""

from __future__ import annotations

from typing import Any

from rocketq.replication.service import HAService


def ha_runtime_info(ha: HAService, *, is_slave: bool) -> dict[str, Any]:
    store = ha.store
    if is_slave:
        client = ha.client
        return {
            "master": False,
            "masterCommitLogMaxOffset": 0,
            "inSyncSlaveNums": 0,
            "haConnectionInfo": [],
            "haClientRuntimeInfo": {
                "masterAddr": client.master_address,
                "maxOffset": store.get_max_phy_offset(),
                "lastReadTimestamp": client.last_read_ms,
                "lastWriteTimestamp": client.last_write_ms,
                "connected": client.connected,
            },
        }
    top = store.get_max_phy_offset()
    conns = []
    for conn in sorted(ha.master.connections, key=lambda c: c.peer):
        if ha.controller_mode and conn.slave_id is not None:  # the controller's in-sync set decides
            in_sync = conn.slave_id in ha.sync_state_set
        else:
            in_sync = ha.is_in_sync(top, conn.ack_offset)
        conns.append({
            "addr": conn.peer,
            "slaveAckOffset": conn.ack_offset,
            "diff": top - conn.ack_offset,
            "inSync": in_sync,
            "transferFromWhere": conn.transfer_from,
        })  # fmt: skip
    return {
        "master": True,
        "masterCommitLogMaxOffset": top,
        "inSyncSlaveNums": sum(1 for c in conns if c["inSync"]),
        "haConnectionInfo": conns,
        "haClientRuntimeInfo": {"masterAddr": None, "maxOffset": 0, "lastReadTimestamp": 0, "lastWriteTimestamp": 0},
    }
