"""``rocketq group list|config|update|delete|status|clone-offset|skip|topics``: subscription groups, a consumer's
running info and offset moves (mqadmin updateSubGroup, deleteSubGroup, getConsumerConfig, consumerStatus,
cloneGroupOffset, skipAccumulatedMessage, queryTopicsByConsumer)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from rocketq.cli import args as a
from rocketq.cli.command import run
from rocketq.cli.output import CommandFailed, emit, fmt_ts, one_line, print_json, print_table
from rocketq.client import AdminClient
from rocketq.client.admin import mq_table
from rocketq.errors import RocketQError

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers

#: SubscriptionGroupConfig's fields, in the order the tables print them
GROUP_FIELDS = [
    "groupName", "consumeEnable", "consumeFromMinEnable", "consumeBroadcastEnable", "retryQueueNums", "retryMaxTimes",
    "brokerId", "whichBrokerWhenConsumeSlowly", "notifyConsumerIdsChangedEnable",
]  # fmt: skip
_GROUP_HEADERS = ["broker", "group", "consume", "from min", "broadcast", "retry queues", "retry max", "broker id",
                  "slow broker", "notify"]  # fmt: skip


def register_actions(gsub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = gsub.add_parser("list", parents=[common], help="every subscription group with its settings, per broker")
    a.target_args(p)
    p.set_defaults(func=run(_list))
    p = gsub.add_parser("config", parents=[common], help="a subscription group's settings on each master")
    p.add_argument("-g", "--group", required=True)
    p.set_defaults(func=run(_config))
    p = gsub.add_parser("update", parents=[common], help="create a subscription group, or overwrite its settings")
    p.add_argument("-g", "--group", required=True)
    a.target_args(p)
    p.add_argument("--consume-enable", action=argparse.BooleanOptionalAction, default=True,
                   help="the group may consume (default yes)")  # fmt: skip
    p.add_argument("--from-min", action=argparse.BooleanOptionalAction, default=True,
                   help="a new group starts at the min offset (consumeFromMinEnable, default yes)")  # fmt: skip
    p.add_argument("--broadcast", action=argparse.BooleanOptionalAction, default=True,
                   help="broadcast consumption allowed (consumeBroadcastEnable, default yes)")  # fmt: skip
    p.add_argument("--retry-queues", type=a.positive_int, default=1, help="retry queue count (default 1)")
    p.add_argument("--retry-max-times", type=a.non_negative_int, default=16, help="max retries (default 16)")
    p.add_argument("--broker-id", type=a.non_negative_int, default=0, help="broker id to consume from (default 0)")
    p.add_argument("--slow-broker-id", type=a.non_negative_int, default=1,
                   help="broker id when consuming slowly (whichBrokerWhenConsumeSlowly, default 1)")  # fmt: skip
    p.add_argument("--notify", action=argparse.BooleanOptionalAction, default=True,
                   help="tell consumers when the group's members change (default yes)")  # fmt: skip
    p.set_defaults(func=run(_update))
    p = gsub.add_parser("delete", parents=[common], help="delete a subscription group from the brokers")
    p.add_argument("-g", "--group", required=True)
    a.target_args(p)
    p.add_argument("--remove-offset", action="store_true", help="forget its consumer offsets too")
    p.set_defaults(func=run(_delete))
    p = gsub.add_parser("status", parents=[common],
                        help="each consumer's running info (subscriptions, queues held, RT/TPS)")  # fmt: skip
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-i", "--client-id", help="only this client, in detail")
    p.add_argument("--jstack", action="store_true", help="ask for the client's thread dump too (with -i)")
    p.set_defaults(func=run(_status))
    p = gsub.add_parser("clone-offset", parents=[common], help="copy a group's offsets of a topic to another group")
    p.add_argument("-s", "--src-group", required=True)
    p.add_argument("-d", "--dest-group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-o", "--offline", action="store_true", help="the destination group is offline")
    p.set_defaults(func=run(_clone))
    p = gsub.add_parser("skip", parents=[common], help="move a group's offsets of a topic to the end (skip backlog)")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.set_defaults(func=run(_skip))
    p = gsub.add_parser("topics", parents=[common], help="the topics a group has consumer offsets on")
    p.add_argument("-g", "--group", required=True)
    p.set_defaults(func=run(_topics))


def _group_row(addr: str, conf: dict[str, Any]) -> list[Any]:
    return [addr] + [conf.get(f) for f in GROUP_FIELDS]


async def _list(args: argparse.Namespace, admin: AdminClient) -> int:
    groups = await admin.subscription_groups(cluster=args.cluster, broker_addr=args.broker)
    if not groups:
        raise CommandFailed("no subscription group on the brokers asked")
    emit(args, [{"brokerAddr": g.broker_addr, **g.config} for g in groups], _GROUP_HEADERS,
         [_group_row(g.broker_addr, g.config) for g in groups])  # fmt: skip
    return 0


async def _config(args: argparse.Namespace, admin: AdminClient) -> int:
    found = [g for g in await admin.subscription_groups() if g.group_name == args.group]
    if not found:
        raise CommandFailed(f"no subscription group {args.group!r} on any master")
    emit(args, [{"brokerAddr": g.broker_addr, **g.config} for g in found], _GROUP_HEADERS,
         [_group_row(g.broker_addr, g.config) for g in found])  # fmt: skip
    return 0


async def _update(args: argparse.Namespace, admin: AdminClient) -> int:
    addrs = await admin.update_subscription_group(
        args.group, cluster=args.cluster, broker_addr=args.broker, consume_enable=args.consume_enable,
        consume_from_min_enable=args.from_min, consume_broadcast_enable=args.broadcast,
        retry_queue_nums=args.retry_queues, retry_max_times=args.retry_max_times, broker_id=args.broker_id,
        which_broker_when_consume_slowly=args.slow_broker_id, notify_consumer_ids_changed_enable=args.notify,
    )  # fmt: skip
    emit(args, [{"brokerAddr": x, "groupName": args.group, "result": "updated"} for x in addrs],
         ["broker", "group", "result"], [[x, args.group, "updated"] for x in addrs])  # fmt: skip
    return 0


async def _delete(args: argparse.Namespace, admin: AdminClient) -> int:
    addrs = await admin.delete_subscription_group(args.group, cluster=args.cluster, broker_addr=args.broker,
                                                  remove_offset=args.remove_offset)  # fmt: skip
    emit(args, [{"brokerAddr": x, "groupName": args.group, "result": "deleted"} for x in addrs],
         ["broker", "group", "result"], [[x, args.group, "deleted"] for x in addrs])  # fmt: skip
    return 0


def _summary(client_id: str, version: int, info: dict[str, Any]) -> dict[str, Any]:
    props = info.get("properties") or {}
    subs = sorted(f"{s.get('topic')}:{s.get('subString')}" for s in info.get("subscriptionSet") or [])
    return {"clientId": client_id, "version": version, "consumeType": props.get("PROP_CONSUME_TYPE", ""),
            "messageModel": props.get("messageModel", ""), "subscriptions": subs,
            "queues": len(mq_table(info.get("mqTable")))}  # fmt: skip


async def _status(args: argparse.Namespace, admin: AdminClient) -> int:
    if args.client_id:
        info = await admin.consumer_running_info(args.group, args.client_id, jstack=args.jstack)
        if args.json:
            print_json(info)
        else:
            _print_running_info(info)
        return 0
    cc = await admin.consumer_connections(args.group)
    data: list[dict[str, Any]] = []
    for c in cc.connections:
        try:
            info = await admin.consumer_running_info(args.group, c.client_id)
        except RocketQError as exc:  # one client that cannot answer (too old, gone) is a row, not the end
            data.append({"clientId": c.client_id, "version": c.version, "error": one_line(exc)})
            continue
        data.append(_summary(c.client_id, c.version, info))
    rows = [[d["clientId"], d["version"], d.get("consumeType", ""), d.get("messageModel", ""), d.get("queues", ""),
             d.get("error") or " ".join(d["subscriptions"])] for d in data]  # fmt: skip
    emit(args, data, ["client id", "version", "type", "model", "queues held", "subscriptions"], rows)
    if not args.json:
        same = len({tuple(d["subscriptions"]) for d in data if "subscriptions" in d}) <= 1
        print(f"\nsubscriptions {'the same on every client' if same else 'DIFFER between clients'}")
    return 0


def _print_running_info(info: dict[str, Any]) -> None:
    """consumerStatus -i's sections: properties, subscriptions, the queues held, RT/TPS per topic."""
    print("# properties")
    print_table(["key", "value"], sorted((info.get("properties") or {}).items()))
    print("\n# subscriptions")
    print_table(["topic", "expression", "type", "version"],
                [[s.get("topic"), s.get("subString"), s.get("expressionType", "TAG"), s.get("subVersion")]
                 for s in info.get("subscriptionSet") or []])  # fmt: skip
    print("\n# queues held")
    print_table(["topic", "broker", "queue", "commit offset", "cached", "cached min", "cached max", "locked",
                 "last pull", "last consume"],
                [[mq.topic, mq.broker_name, mq.queue_id, q.get("commitOffset"), q.get("cachedMsgCount"),
                  q.get("cachedMsgMinOffset"), q.get("cachedMsgMaxOffset"), q.get("locked"),
                  fmt_ts(int(q.get("lastPullTimestamp") or 0)), fmt_ts(int(q.get("lastConsumeTimestamp") or 0))]
                 for mq, q in sorted(mq_table(info.get("mqTable")), key=lambda e: e[0])])  # fmt: skip
    print("\n# RT and TPS")
    print_table(["topic", "pull rt", "pull tps", "consume rt", "consume ok tps", "consume failed tps",
                 "failed (1 h)"],
                [[t, s.get("pullRT"), s.get("pullTPS"), s.get("consumeRT"), s.get("consumeOKTPS"),
                  s.get("consumeFailedTPS"), s.get("consumeFailedMsgs")]
                 for t, s in sorted((info.get("statusTable") or {}).items())])  # fmt: skip
    if info.get("jstack"):
        print("\n# jstack\n" + str(info["jstack"]))


async def _clone(args: argparse.Namespace, admin: AdminClient) -> int:
    addrs = await admin.clone_group_offset(args.src_group, args.dest_group, args.topic, offline=args.offline)
    emit(args, [{"brokerAddr": x, "srcGroup": args.src_group, "destGroup": args.dest_group, "topic": args.topic}
                for x in addrs], ["broker", "from", "to", "topic"],
         [[x, args.src_group, args.dest_group, args.topic] for x in addrs])  # fmt: skip
    return 0


async def _skip(args: argparse.Namespace, admin: AdminClient) -> int:
    offsets = sorted((await admin.skip_accumulation(args.group, args.topic)).items())
    emit(args, [{**mq.to_json(), "offset": off} for mq, off in offsets], ["broker", "queue", "new offset"],
         [[mq.broker_name, mq.queue_id, off] for mq, off in offsets])  # fmt: skip
    return 0


async def _topics(args: argparse.Namespace, admin: AdminClient) -> int:
    topics = await admin.topics_of_group(args.group)
    if not topics:
        raise CommandFailed(f"consumer group {args.group!r} has no consumer offsets on any topic")
    emit(args, [{"topic": t} for t in topics], ["topic"], [[t] for t in topics])
    return 0
