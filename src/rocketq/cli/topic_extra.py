"""``rocketq topic clusters|consumers|allocate|order-conf|cq`` (mqadmin topicClusterList, allocateMQ,
updateOrderConf, queryCq, and who consumes a topic)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rocketq.cli import args as a
from rocketq.cli.command import run
from rocketq.cli.output import CommandFailed, UsageError, emit, print_json, print_table
from rocketq.client import AdminClient
from rocketq.client.admin.config import ORDER_TOPIC_CONFIG

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers


def register_actions(tsub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = tsub.add_parser("clusters", parents=[common], help="the clusters serving a topic (mqadmin topicClusterList)")
    p.add_argument("-t", "--topic", required=True)
    p.set_defaults(func=run(_clusters))
    p = tsub.add_parser("consumers", parents=[common], help="the consumer groups subscribed to a topic or holding "
                                                           "offsets on it")  # fmt: skip
    p.add_argument("-t", "--topic", required=True)
    p.set_defaults(func=run(_consumers))
    text = "how the averaging strategy shares a topic's queues among client ids (allocateMQ)"
    p = tsub.add_parser("allocate", parents=[common], help=text)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-i", "--client-ids", required=True, help="comma-separated client ids (or IPs), in order")
    p.set_defaults(func=run(_allocate))
    text = "an ordered topic's broker list in the name server's KV (mqadmin updateOrderConf)"
    p = tsub.add_parser("order-conf", parents=[common], help=text)
    p.add_argument("-t", "--topic", required=True)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--set", metavar="CONF", help="brokerName:queueNums;... (without --set/--delete: show it)")
    g.add_argument("--delete", action="store_true", help="remove it")
    p.set_defaults(func=run(_order_conf))
    p = tsub.add_parser("cq", parents=[common], help="raw units of one consume queue (mqadmin queryCq)")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-q", "--queue", required=True, type=a.non_negative_int, help="queue id")
    p.add_argument("-i", "--index", required=True, type=a.non_negative_int, help="first unit (queue offset)")
    p.add_argument("--count", type=a.positive_int, default=10, help="units to read (default 10)")
    p.add_argument("-b", "--broker", help="broker address (default: the first broker of the route)")
    p.add_argument("-g", "--group", help="also show this group's subscription of the topic")
    p.set_defaults(func=run(_cq))


async def _clusters(args: argparse.Namespace, admin: AdminClient) -> int:
    clusters = await admin.topic_clusters(args.topic)
    if not clusters:
        raise CommandFailed(f"no cluster serves topic {args.topic!r}")
    emit(args, [{"clusterName": c} for c in clusters], ["cluster"], [[c] for c in clusters])
    return 0


async def _consumers(args: argparse.Namespace, admin: AdminClient) -> int:
    groups = await admin.groups_consuming(args.topic)
    if not groups:
        raise CommandFailed(f"no consumer group consumes topic {args.topic!r}")
    emit(args, [{"group": g} for g in groups], ["group"], [[g] for g in groups])
    return 0


async def _allocate(args: argparse.Namespace, admin: AdminClient) -> int:
    ids = [i.strip() for i in args.client_ids.split(",") if i.strip()]
    if not ids:
        raise UsageError("-i needs at least one client id")
    shares = await admin.allocate_mq(args.topic, ids)
    rows = [[cid, " ".join(f"{q.broker_name}:{q.queue_id}" for q in qs) or "-"] for cid, qs in shares.items()]
    data = {"result": {cid: [q.to_json() for q in qs] for cid, qs in shares.items()}}  # Java's RebalanceResult
    emit(args, data, ["client id", "queues"], rows)
    return 0


async def _order_conf(args: argparse.Namespace, admin: AdminClient) -> int:
    if args.set is not None or args.delete:
        addrs = await admin.update_order_conf(args.topic, None if args.delete else args.set)
        result = "deleted" if args.delete else "updated"
        emit(args, [{"namesrvAddr": x, "topic": args.topic, "result": result} for x in addrs],
             ["name server", "topic", "result"], [[x, args.topic, result] for x in addrs])  # fmt: skip
        return 0
    conf = await admin.get_kv_config(ORDER_TOPIC_CONFIG, args.topic)
    if conf is None:
        raise CommandFailed(f"topic {args.topic!r} has no order conf")
    emit(args, {"topic": args.topic, "orderConf": conf}, ["topic", "order conf"], [[args.topic, conf]])
    return 0


async def _cq(args: argparse.Namespace, admin: AdminClient) -> int:
    body = await admin.query_consume_queue(args.topic, args.queue, args.index, args.count, group=args.group,
                                           broker_addr=args.broker)  # fmt: skip
    if args.json:
        print_json(body)
        return 0
    units = body.get("queueData") or []
    if not units:
        raise CommandFailed(f"no unit at index {args.index} of queue {args.queue} of {args.topic!r} (min index "
                            f"{body.get('minQueueIndex')}, max index {body.get('maxQueueIndex')})")  # fmt: skip
    print(f"min index {body.get('minQueueIndex')}  max index {body.get('maxQueueIndex')}")
    if body.get("subscriptionData"):
        print(f"subscription {body['subscriptionData']}")
    elif args.group:
        print(f"subscription: {body.get('filterData')}")
    print_table(["index", "commit-log offset", "size", "tags code"],
                [[args.index + i, u.get("physicOffset"), u.get("physicSize"), u.get("tagsCode")]
                 for i, u in enumerate(units)])  # fmt: skip
    return 0
