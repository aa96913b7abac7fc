"""Replication status of the brokers, one row per broker (``rocketq ha status`` and the console's Replication
page show the same rows): HA runtime info (GET_BROKER_HA_STATUS) and role of each, a slave's lag in bytes behind
its group's master, and with a 5.x controller the master epoch and in-sync set (CONTROLLER_GET_SYNC_STATE_DATA).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from rocketq.client.ha import ReplicaGroup
from rocketq.errors import BrokerError, RemotingError

if TYPE_CHECKING:
    from rocketq.client.admin import AdminClient, BrokerInfo


async def probe(admin: AdminClient, b: BrokerInfo) -> dict[str, Any]:
    """One broker's row data: its HA runtime info and its role, or the error that stopped the asking."""
    try:
        info, runtime = await asyncio.gather(admin.broker_ha_status(b.addr), admin.broker_runtime_info(b.addr))
    except (RemotingError, BrokerError) as exc:
        return {"error": str(exc)}
    return {"info": info, "role": runtime.get("brokerRole") or ("SLAVE" if not info.get("master") else "MASTER")}


def max_offset(info: dict[str, Any]) -> int:
    if info.get("master"):
        return int(info.get("masterCommitLogMaxOffset") or 0)
    return int((info.get("haClientRuntimeInfo") or {}).get("maxOffset") or 0)


def connection_text(info: dict[str, Any]) -> str:
    if info.get("master"):
        conns = info.get("haConnectionInfo") or []
        return f"{len(conns)} slave(s), {int(info.get('inSyncSlaveNums') or 0)} in sync"
    client = info.get("haClientRuntimeInfo") or {}
    master = client.get("masterAddr")
    if not master:
        return "no master address"
    return f"following {master}" if client.get("connected", True) else f"not connected to {master}"


def group_rows(brokers: list[BrokerInfo], probes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One JSON object per broker; a slave's ``lag`` is its group's master's max offset minus its own."""
    masters: dict[str, int] = {}
    for b, p in zip(brokers, probes, strict=True):
        if "info" in p and p["info"].get("master"):
            masters[b.broker_name] = max(masters.get(b.broker_name, 0), max_offset(p["info"]))
    out = []
    for b, p in zip(brokers, probes, strict=True):
        row: dict[str, Any] = {"clusterName": b.cluster, "brokerName": b.broker_name, "brokerId": b.broker_id,
                               "brokerAddr": b.addr}  # fmt: skip
        if "error" in p:
            row["error"] = p["error"]
        else:
            info = p["info"]
            row.update(brokerRole=p["role"], maxOffset=max_offset(info), haRuntimeInfo=info)
            if not info.get("master") and b.broker_name in masters:
                row["lag"] = max(0, masters[b.broker_name] - row["maxOffset"])
        out.append(row)
    return out


def add_controller_view(rows: list[dict[str, Any]], groups: dict[str, ReplicaGroup]) -> None:
    for row in rows:
        g = groups.get(row["brokerName"])
        if g is None:
            continue
        row.update(masterEpoch=g.master_epoch, syncStateSetEpoch=g.sync_state_set_epoch, syncStateSet=g.in_sync_ids)
        mine = next((r for r in g.replicas if r.address == row["brokerAddr"]), None)
        if mine is not None:
            row.update(controllerBrokerId=mine.broker_id, inSync=mine.in_sync, alive=mine.alive)


async def replication_rows(
    admin: AdminClient, brokers: list[BrokerInfo], controller: str | None = None
) -> list[dict[str, Any]]:
    """The status row of each broker (asked concurrently), with the controller's view when one is given."""
    probes = list(await asyncio.gather(*(probe(admin, b) for b in brokers)))
    rows = group_rows(brokers, probes)
    if controller:
        names = sorted({b.broker_name for b in brokers})
        add_controller_view(rows, await admin.controller_sync_state(controller, names))
    return rows
