"""``rocketq cluster list`` and ``rocketq broker-status``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rocketq.cli import args as a
from rocketq.cli.command import run
from rocketq.cli.output import CommandFailed, emit, print_table
from rocketq.client import AdminClient
from rocketq.client.admin import BrokerInfo

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers


def register(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    cluster = sub.add_parser("cluster", help="clusters and their brokers")
    csub = cluster.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    p = csub.add_parser("list", parents=[common], help="brokers of every cluster with a few runtime numbers")
    p.add_argument("-c", "--cluster", help="only this cluster")
    p.set_defaults(func=run(_cluster_list))
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


async def _cluster_list(args: argparse.Namespace, admin: AdminClient) -> int:
    brokers = await registered_brokers(admin, args.cluster, runtime=True)
    data = [{"clusterName": b.cluster, "brokerName": b.broker_name, "brokerId": b.broker_id, "brokerAddr": b.addr,
             "runtime": b.runtime} for b in brokers]  # fmt: skip
    rows = [[b.cluster, b.broker_name, b.broker_id, b.addr, b.runtime.get("brokerVersionDesc", ""),
             b.runtime.get("putTps", ""), b.runtime.get("getTransferedTps", ""),
             b.runtime.get("error", "")] for b in brokers]  # fmt: skip
    emit(args, data, ["cluster", "broker", "id", "address", "version", "put tps", "get tps", "error"], rows)
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
