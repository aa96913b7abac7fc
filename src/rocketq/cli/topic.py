"""``rocketq topic create|update|delete|list|route|status``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from rocketq.cli import args as a
from rocketq.cli import topic_extra
from rocketq.cli.command import run
from rocketq.cli.output import CommandFailed, emit, fmt_ts
from rocketq.client import AdminClient
from rocketq.client.errors import NoRouteError
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers

PERMS = (2, 4, 6)  # write, read, both (PermName's bits; inherit and priority are not a topic's to set here)
_HEADERS = ["broker", "topic", "read", "write", "perm", "order"]


def register(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    topic = sub.add_parser("topic", help="create, update, delete, list and inspect topics")
    tsub = topic.add_subparsers(dest="topic_command", metavar="ACTION", required=True)

    p = tsub.add_parser("create", parents=[common], help="create a topic (or overwrite its settings)")
    p.add_argument("-t", "--topic", required=True)
    a.target_args(p)
    p.add_argument("-r", "--read-queues", type=a.positive_int, default=8, help="read queue count (default 8)")
    p.add_argument("-w", "--write-queues", type=a.positive_int, default=8, help="write queue count (default 8)")
    p.add_argument("-p", "--perm", type=int, choices=PERMS, default=6, help="2 write, 4 read, 6 both (default 6)")
    p.add_argument("-o", "--order", action="store_true", help="mark the topic as ordered")
    p.set_defaults(func=run(_create))

    p = tsub.add_parser("update", parents=[common], help="change some settings of an existing topic")
    p.add_argument("-t", "--topic", required=True)
    a.target_args(p)
    p.add_argument("-r", "--read-queues", type=a.positive_int, help="read queue count (default: unchanged)")
    p.add_argument("-w", "--write-queues", type=a.positive_int, help="write queue count (default: unchanged)")
    p.add_argument("-p", "--perm", type=int, choices=PERMS, help="2 write, 4 read, 6 both (default: unchanged)")
    p.add_argument("-o", "--order", action=argparse.BooleanOptionalAction, help="ordered or not (default: unchanged)")
    p.set_defaults(func=run(_update))

    p = tsub.add_parser("delete", parents=[common], help="delete a topic from brokers and name servers")
    p.add_argument("-t", "--topic", required=True)
    a.target_args(p)
    p.set_defaults(func=run(_delete))
    p = tsub.add_parser("list", parents=[common], help="list every topic the name server knows")
    p.set_defaults(func=run(_list))
    p = tsub.add_parser("route", parents=[common], help="show a topic's route")
    p.add_argument("-t", "--topic", required=True)
    p.set_defaults(func=run(_route))
    p = tsub.add_parser("status", parents=[common], help="min / max offset of every queue of a topic")
    p.add_argument("-t", "--topic", required=True)
    p.set_defaults(func=run(_status))
    topic_extra.register_actions(tsub, common)


def _row(addr: str, tc: dict[str, Any]) -> dict[str, Any]:
    keys = ("topic", "readQueueNums", "writeQueueNums", "perm", "order")
    return {"brokerAddr": addr, **{k: tc[k] for k in keys}}


def _emit_rows(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    emit(args, rows, _HEADERS, [[r["brokerAddr"], r["topic"], r["readQueueNums"], r["writeQueueNums"], r["perm"],
                                 "yes" if r["order"] else "no"] for r in rows])  # fmt: skip


async def _create(args: argparse.Namespace, admin: AdminClient) -> int:
    addrs = await admin.create_topic(
        args.topic, cluster=args.cluster, broker_addr=args.broker, read_queue_nums=args.read_queues,
        write_queue_nums=args.write_queues, perm=args.perm, order=args.order,
    )  # fmt: skip
    tc = {"topic": args.topic, "readQueueNums": args.read_queues, "writeQueueNums": args.write_queues,
          "perm": args.perm, "order": args.order}  # fmt: skip
    _emit_rows(args, [_row(addr, tc) for addr in addrs])
    return 0


async def targets(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    """The brokers -b / -c name; without either, the masters of the only cluster there is."""
    if args.broker:
        return [args.broker]
    if args.cluster:
        return await admin.master_addrs(args.cluster)
    clusters = sorted((await admin.cluster_info()).get("clusterAddrTable") or {})
    if len(clusters) != 1:
        raise CommandFailed(f"{len(clusters)} clusters are registered ({', '.join(clusters) or 'none'}): "
                            "name one with -c, or a broker with -b")  # fmt: skip
    return await admin.master_addrs(clusters[0])


async def broker_topic_configs(admin: AdminClient, addr: str) -> dict[str, Any]:
    """GET_ALL_TOPIC_CONFIG: the broker's topic configs by name (Java TopicConfig JSON)."""
    return await admin.topic_configs(addr)


async def _update(args: argparse.Namespace, admin: AdminClient) -> int:
    # Java's updateTopic is "create with defaults": a forgotten -r/-w set 8. Here only what is given changes,
    # from each broker's own current config; the topic must already be there.
    addrs = await targets(admin, args)
    current: dict[str, dict[str, Any]] = {}
    for addr in addrs:
        tc = (await broker_topic_configs(admin, addr)).get(args.topic)
        if tc is None:
            raise CommandFailed(f"topic {args.topic!r} does not exist on broker {addr}: create it with "
                                "'rocketq topic create'")  # fmt: skip
        current[addr] = tc
    rows = []
    for addr, tc in current.items():
        new = {
            "topic": args.topic,
            "readQueueNums": args.read_queues if args.read_queues is not None else int(tc.get("readQueueNums", 8)),
            "writeQueueNums": args.write_queues if args.write_queues is not None else int(tc.get("writeQueueNums", 8)),
            "perm": args.perm if args.perm is not None else int(tc.get("perm", 6)),
            "order": args.order if args.order is not None else bool(tc.get("order", False)),
        }
        await admin.create_topic(
            args.topic, broker_addr=addr, read_queue_nums=new["readQueueNums"], write_queue_nums=new["writeQueueNums"],
            perm=new["perm"], order=new["order"], topic_filter_type=str(tc.get("topicFilterType", "SINGLE_TAG")),
            topic_sys_flag=int(tc.get("topicSysFlag", 0)),
        )  # fmt: skip
        rows.append(_row(addr, new))
    _emit_rows(args, rows)
    return 0


async def _exists_on(admin: AdminClient, addr: str, topic: str) -> bool:
    try:
        await admin.instance.api.broker_json(addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic}, admin.timeout)
    except BrokerError as exc:
        if exc.code == ResponseCode.TOPIC_NOT_EXIST:
            return False
        raise
    return True


async def _delete(args: argparse.Namespace, admin: AdminClient) -> int:
    addrs = await targets(admin, args)
    try:
        await admin.topic_route(args.topic)
        known = True
    except NoRouteError:
        known = False
    if not known and not [addr for addr in addrs if await _exists_on(admin, addr, args.topic)]:
        raise CommandFailed(f"topic {args.topic!r} does not exist (not in the name server, not on "
                            f"{', '.join(addrs)}): nothing deleted")  # fmt: skip
    await admin.delete_topic(args.topic, cluster=args.cluster, broker_addr=args.broker)
    namesrvs = admin.config.namesrv_list()
    rows = [[args.topic, f"broker {x}"] for x in addrs] + [[args.topic, f"name server {x}"] for x in namesrvs]
    emit(args, {"topic": args.topic, "brokerAddrs": addrs, "namesrvAddrs": namesrvs}, ["topic", "deleted from"], rows)
    return 0


async def _list(args: argparse.Namespace, admin: AdminClient) -> int:
    topics = await admin.topic_list()
    if not topics:
        raise CommandFailed(f"the name server {admin.config.namesrv_addr} knows no topic (is a broker registered?)")
    emit(args, [{"topic": t} for t in topics], ["topic"], [[t] for t in topics])
    return 0


async def _route(args: argparse.Namespace, admin: AdminClient) -> int:
    route = await admin.topic_route(args.topic)
    rows = []
    for q in sorted(route.queue_datas, key=lambda q: q.broker_name):
        bd = route.broker(q.broker_name)
        addrs = " ".join(f"{k}={v}" for k, v in sorted(bd.broker_addrs.items())) if bd else ""
        rows.append([bd.cluster if bd else "", q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, addrs])
    emit(args, route.to_json(), ["cluster", "broker", "read", "write", "perm", "addresses (id=addr)"], rows)
    return 0


async def _status(args: argparse.Namespace, admin: AdminClient) -> int:
    status = await admin.topic_status(args.topic)
    data = [{**s.message_queue.to_json(), "minOffset": s.min_offset, "maxOffset": s.max_offset,
             "lastUpdateTimestamp": s.last_update_timestamp} for s in status]  # fmt: skip
    rows = [[s.message_queue.broker_name, s.message_queue.queue_id, s.min_offset, s.max_offset,
             fmt_ts(s.last_update_timestamp)] for s in status]  # fmt: skip
    emit(args, data, ["broker", "queue", "min offset", "max offset", "last updated"], rows)
    return 0
