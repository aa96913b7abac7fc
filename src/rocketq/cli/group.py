"""``rocketq group progress|pop|connections|reset-offset|resend-dlq`` (and cli/group_admin.py's actions)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rocketq.cli import args as a
from rocketq.cli import group_admin
from rocketq.cli.command import run
from rocketq.cli.output import CommandFailed, UsageError, emit, fmt_ts
from rocketq.client import AdminClient
from rocketq.client.admin import QueueProgress

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers


def register(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    group = sub.add_parser("group", help="consumer groups: progress, offsets, settings, running info")
    gsub = group.add_subparsers(dest="group_command", metavar="ACTION", required=True)
    p = gsub.add_parser("progress", parents=[common],
                        help="consume progress and lag per queue (without -g: every group at a glance)")  # fmt: skip
    p.add_argument("-g", "--group", help="the group (without it: one line per group the name servers know)")
    p.add_argument("-t", "--topic", help="only this topic (with -g)")
    p.set_defaults(func=run(_progress))
    p = gsub.add_parser("pop", parents=[common],
                        help="POP groups (message-level balancing): messages in flight, invisible, ready")  # fmt: skip
    p.add_argument("-g", "--group", help="only this group")
    p.set_defaults(func=run(_pop))
    p = gsub.add_parser("connections", parents=[common], help="clients connected for a consumer group")
    p.add_argument("-g", "--group", required=True)
    p.set_defaults(func=run(_connections))
    p = gsub.add_parser("reset-offset", parents=[common], help="move a group's offsets to a point in time")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("--timestamp", required=True, type=a.timestamp,
                   help="epoch ms, yyyyMMddHHmmss[SSS] (local time), ISO 8601, or 'now'")  # fmt: skip
    p.set_defaults(func=run(_reset_offset))
    p = gsub.add_parser("resend-dlq", parents=[common], help="send a dead letter back to its group")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-i", "--msg-id", required=True, type=a.msg_id,
                   help="client message id (UNIQ_KEY) or offset message id")  # fmt: skip
    p.set_defaults(func=run(_resend_dlq))
    group_admin.register_actions(gsub, common)


async def committed_progress(admin: AdminClient, group: str, topic: str | None) -> list[QueueProgress]:
    """The group's progress on the topics it has committed offsets for (only ``topic``'s when given).

    Asked without a topic, as Java's mqadmin consumerProgress: a broker answers for a named topic even when the
    group never consumed it (offset 0 everywhere), which would make a misspelt group look like one far behind.
    """
    progress = [p for p in await admin.consume_progress(group) if topic is None or p.message_queue.topic == topic]
    if not progress:
        where = f" on topic {topic!r}" if topic else ""
        raise CommandFailed(f"consumer group {group!r} has no committed offsets{where}: it has not consumed "
                            "there yet, or the name is misspelt")  # fmt: skip
    return progress


async def _progress(args: argparse.Namespace, admin: AdminClient) -> int:
    if args.group is None:
        if args.topic is not None:
            raise UsageError("-t needs -g: without a group, progress lists every group")
        return await _every_group(args, admin)
    progress = await committed_progress(admin, args.group, args.topic)
    data = [{**p.message_queue.to_json(), "brokerOffset": p.broker_offset, "consumerOffset": p.consumer_offset,
             "lag": p.lag, "lastTimestamp": p.last_timestamp} for p in progress]  # fmt: skip
    rows = [[p.message_queue.topic, p.message_queue.broker_name, p.message_queue.queue_id, p.broker_offset,
             p.consumer_offset, p.lag, fmt_ts(p.last_timestamp)] for p in progress]  # fmt: skip
    emit(args, data, ["topic", "broker", "queue", "broker offset", "consumer offset", "lag", "last consumed"], rows)
    if not args.json:
        print(f"\ntotal lag: {sum(p.lag for p in progress)}")
    return 0


async def _every_group(args: argparse.Namespace, admin: AdminClient) -> int:
    """One line per group, as mqadmin consumerProgress without ``-g``: groups found by their retry topics."""
    summaries = [await admin.group_summary(g) for g in await admin.consumer_groups()]
    data = [{"group": s.group, "count": s.count, "version": s.min_version, "consumeType": s.consume_type,
             "messageModel": s.message_model, "consumeTps": s.consume_tps, "diffTotal": s.diff_total}
            for s in summaries]  # fmt: skip
    rows = [[s.group, s.count, "" if s.min_version is None else s.min_version, s.consume_type, s.message_model,
             f"{s.consume_tps:.1f}", s.diff_total] for s in summaries]  # fmt: skip
    emit(args, data, ["group", "clients", "min version", "type", "model", "consume tps", "lag"], rows)
    return 0


async def _pop(args: argparse.Namespace, admin: AdminClient) -> int:
    rows = await admin.pop_inflight(args.group)
    if args.group and not rows:
        raise CommandFailed(f"consumer group {args.group!r} has not popped on any broker since it started")
    data = [{"group": r.group, "topic": r.topic, "broker": r.broker_addr, "inflight": r.inflight,
             "invisible": r.invisible, "ready": r.ready} for r in rows]  # fmt: skip
    table = [[r.group, r.topic, r.broker_addr, r.inflight, r.invisible, r.ready] for r in rows]
    emit(args, data, ["group", "topic", "broker", "in flight", "invisible", "ready"], table)
    return 0


async def _connections(args: argparse.Namespace, admin: AdminClient) -> int:
    cc = await admin.consumer_connections(args.group)
    data = {
        "connectionSet": [{"clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language,
                           "version": c.version} for c in cc.connections],
        "consumeType": cc.consume_type, "messageModel": cc.message_model, "consumeFromWhere": cc.consume_from_where,
        "subscriptions": cc.subscriptions,
    }  # fmt: skip
    rows = [[c.client_id, c.client_addr, c.language, c.version] for c in cc.connections]
    emit(args, data, ["client id", "address", "language", "version"], rows)
    if not args.json:
        print(f"\n{cc.consume_type} {cc.message_model} {cc.consume_from_where}")
        for topic, sub in sorted(cc.subscriptions.items()):
            print(f"  {topic}: {sub}")
    return 0


async def _reset_offset(args: argparse.Namespace, admin: AdminClient) -> int:
    # A group without offsets on the topic would have them created (Java's broker refuses: "consumer group
    # not exist"): a misspelt group must not start existing.
    before = {p.message_queue: p.consumer_offset for p in await committed_progress(admin, args.group, args.topic)}
    offsets = sorted((await admin.reset_offset_by_timestamp(args.group, args.topic, args.timestamp)).items())
    data = [{**mq.to_json(), "previousOffset": before.get(mq, -1), "offset": off} for mq, off in offsets]
    rows = [[mq.broker_name, mq.queue_id, before.get(mq, "-"), off] for mq, off in offsets]
    emit(args, data, ["broker", "queue", "previous offset", "new offset"], rows)
    return 0


async def _resend_dlq(args: argparse.Namespace, admin: AdminClient) -> int:
    r = await admin.resend_dead_letter(args.group, args.msg_id)
    mq = r.message_queue
    data = {"sendStatus": r.status.value, "msgId": r.msg_id, "offsetMsgId": r.offset_msg_id, **mq.to_json(),
            "queueOffset": r.queue_offset}  # fmt: skip
    row = [r.status.value, r.msg_id, r.offset_msg_id, mq.topic, mq.broker_name, mq.queue_id, r.queue_offset]
    emit(args, data, ["status", "msg id", "offset msg id", "topic", "broker", "queue", "queue offset"], [row])
    return 0
