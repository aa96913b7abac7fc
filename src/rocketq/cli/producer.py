"""``rocketq producer connections|list`` (mqadmin producerConnection, producer)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rocketq.cli.command import run
from rocketq.cli.output import CommandFailed, emit, fmt_ts
from rocketq.client import AdminClient

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers


def register(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    producer = sub.add_parser("producer", help="producers connected to the brokers")
    psub = producer.add_subparsers(dest="producer_command", metavar="ACTION", required=True)
    p = psub.add_parser("connections", parents=[common], help="the clients of one producer group")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", help="ask the brokers of this topic (default: every master)")
    p.set_defaults(func=run(_connections))
    p = psub.add_parser("list", parents=[common], help="every producer group and its clients, per broker")
    p.add_argument("-b", "--broker", help="one broker address host:port (default: every master)")
    p.set_defaults(func=run(_list))


async def _connections(args: argparse.Namespace, admin: AdminClient) -> int:
    conns = await admin.producer_connections(args.group, args.topic)
    if not conns:
        raise CommandFailed(f"no producer of group {args.group!r} is connected")
    data = [{"clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language, "version": c.version}
            for c in conns]  # fmt: skip
    emit(args, data, ["client id", "address", "language", "version"],
         [[c.client_id, c.client_addr, c.language, c.version] for c in conns])  # fmt: skip
    return 0


async def _list(args: argparse.Namespace, admin: AdminClient) -> int:
    by_broker = await admin.all_producers(args.broker)
    data = [{"brokerAddr": addr, "producerGroup": group, **p}
            for addr, groups in by_broker.items() for group, ps in groups.items() for p in ps]  # fmt: skip
    if not data:
        raise CommandFailed("no producer is connected to the brokers asked")
    rows = [[d["brokerAddr"], d["producerGroup"], d.get("clientId"), d.get("remoteIP"), d.get("language"),
             d.get("version"), fmt_ts(int(d.get("lastUpdateTimestamp") or 0))] for d in data]  # fmt: skip
    emit(args, data, ["broker", "group", "client id", "address", "language", "version", "last heartbeat"], rows)
    return 0
