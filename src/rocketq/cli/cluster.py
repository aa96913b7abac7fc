"""``rocketq cluster list`` and ``rocketq broker-status``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rocketq.cli import args as a
from rocketq.cli import cluster_extra
from rocketq.cli.command import run
from rocketq.cli.output import CommandFailed, emit, print_table
from rocketq.client import AdminClient
from rocketq.client.admin import BrokerInfo
from rocketq.protocol.route import MASTER_ID

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers


def register(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    cluster = sub.add_parser("cluster", help="clusters and their brokers")
    csub = cluster.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    p = csub.add_parser("list", parents=[common], help="brokers of every cluster with a few runtime numbers")
    p.add_argument("-c", "--cluster", help="only this cluster")
    p.set_defaults(func=run(_cluster_list))
    cluster_extra.register_actions(csub, common)
    p = sub.add_parser("broker-status", parents=[common], help="a broker's runtime info table")
    a.target_args(p)
    p.set_defaults(func=run(_broker_status))


async def registered_brokers(admin: AdminClient, cluster: str | None, *, runtime: bool = False) -> list[BrokerInfo]:
    """The brokers the name server knows (of ``cluster``); none is an error that says so."""
    brokers = await admin.brokers(cluster, runtime=runtime)
    if brokers:
        return brokers
    if cluster is None:
        raise CommandFailed(f"no broker is registered with the name server {admin.config.namesrv_addr}")
    known = sorted({b.cluster for b in await admin.brokers()})
    raise CommandFailed(f"no broker of cluster {cluster!r} is registered (clusters: {', '.join(known) or 'none'})")


def _commit_log_max(runtime: dict[str, str]) -> int | None:
    try:
        return int(runtime["commitLogMaxOffset"])
    except (KeyError, ValueError):
        return None


def slave_lags(brokers: list[BrokerInfo]) -> dict[str, int]:
    """A slave's lag in bytes (by address): its group's master's commit-log max offset minus its own, from the
    runtime tables (a slave whose master is not registered, or either table missing, has none)."""
    masters = {b.broker_name: m for b in brokers if b.broker_id == MASTER_ID and (m := _commit_log_max(b.runtime))
               is not None}  # fmt: skip
    lags = {}
    for b in brokers:
        own = _commit_log_max(b.runtime)
        if b.broker_id != MASTER_ID and own is not None and b.broker_name in masters:
            lags[b.addr] = max(0, masters[b.broker_name] - own)
    return lags


async def _cluster_list(args: argparse.Namespace, admin: AdminClient) -> int:
    brokers = await registered_brokers(admin, args.cluster, runtime=True)
    lags = slave_lags(brokers)
    data = []
    for b in brokers:
        row = {"clusterName": b.cluster, "brokerName": b.broker_name, "brokerId": b.broker_id, "brokerAddr": b.addr,
               "brokerRole": b.runtime.get("brokerRole"), "runtime": b.runtime}  # fmt: skip
        if b.addr in lags:
            row["lag"] = lags[b.addr]
        data.append(row)
    rows = [[b.cluster, b.broker_name, b.broker_id, b.addr, b.runtime.get("brokerRole", "-"),
             lags.get(b.addr, "-"), b.runtime.get("brokerVersionDesc", ""), b.runtime.get("putTps", ""),
             b.runtime.get("getTransferedTps", ""), b.runtime.get("error", "")] for b in brokers]  # fmt: skip
    emit(args, data, ["cluster", "broker", "id", "address", "role", "lag", "version", "put tps", "get tps", "error"],
         rows)  # fmt: skip
    return 0


async def _broker_status(args: argparse.Namespace, admin: AdminClient) -> int:
    addrs = [args.broker] if args.broker else [b.addr for b in await registered_brokers(admin, args.cluster)]
    tables = {addr: await admin.broker_runtime_info(addr) for addr in addrs}
    if args.json:
        emit(args, [{"brokerAddr": addr, "table": t} for addr, t in tables.items()], [], [])
        return 0
    for n, (addr, table) in enumerate(tables.items()):
        if n:
            print()
        print(f"# {addr}")
        print_table(["key", "value"], sorted(table.items()))
    return 0
