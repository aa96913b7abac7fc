"""``rocketq stats all|broker-consume|item`` (mqadmin statsAll, brokerConsumeStats; the broker's stats items)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rocketq.cli.command import run
from rocketq.cli.output import CommandFailed, emit, fmt_ts, print_json, print_table
from rocketq.client import AdminClient

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers


def register(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    stats = sub.add_parser("stats", help="TPS and counts of topics and groups, consume stats of a broker")
    ssub = stats.add_subparsers(dest="stats_command", metavar="ACTION", required=True)
    p = ssub.add_parser("all", parents=[common], help="per topic and consumer group: backlog, TPS in/out, 24 h counts")
    p.add_argument("-t", "--topic", help="only this topic (default: every non-system topic)")
    p.add_argument("-a", "--active", action="store_true", help="only groups with a consumer online")
    p.set_defaults(func=run(_all))
    p = ssub.add_parser("broker-consume", parents=[common], help="every group's progress on one broker")
    p.add_argument("-b", "--broker", required=True, help="broker address host:port")
    p.add_argument("-o", "--order", action="store_true", help="only ordered consumer groups")
    p.set_defaults(func=run(_broker_consume))
    p = ssub.add_parser("item", parents=[common], help="one stats item of a broker (minute / hour / day)")
    p.add_argument("-b", "--broker", required=True, help="broker address host:port")
    p.add_argument("--name", required=True, help="e.g. TOPIC_PUT_NUMS, GROUP_GET_NUMS, TOPIC_PUT_SIZE")
    p.add_argument("--key", required=True, help="the topic, or topic@group")
    p.set_defaults(func=run(_item))


async def _all(args: argparse.Namespace, admin: AdminClient) -> int:
    rows = await admin.stats_all(args.topic, active_only=args.active)
    if not rows:
        raise CommandFailed("no topic to report" + (f" ({args.topic!r})" if args.topic else ""))
    data = [{"topic": r.topic, "consumerGroup": r.group, "accumulation": r.accumulation, "inTps": r.in_tps,
             "outTps": r.out_tps, "inMsg24Hour": r.in_msg_24h, "outMsg24Hour": r.out_msg_24h}
            for r in rows]  # fmt: skip
    emit(args, data, ["topic", "group", "accumulation", "in tps", "out tps", "in 24 h", "out 24 h"],
         [[r.topic, r.group or "-", r.accumulation, f"{r.in_tps:.2f}", f"{r.out_tps:.2f}", r.in_msg_24h,
           r.out_msg_24h] for r in rows])  # fmt: skip
    return 0


async def _broker_consume(args: argparse.Namespace, admin: AdminClient) -> int:
    s = await admin.broker_consume_stats(args.broker, is_order=args.order)
    data = [{**q.message_queue.to_json(), "group": e.group, "brokerOffset": q.broker_offset,
             "consumerOffset": q.consumer_offset, "diff": q.lag, "lastTimestamp": q.last_timestamp}
            for e in s.entries for q in e.queues]  # fmt: skip
    if args.json:
        print_json({"brokerAddr": s.broker_addr, "totalDiff": s.total_diff, "queues": data})
        return 0
    print_table(["topic", "group", "broker", "queue", "broker offset", "consumer offset", "diff", "last consumed"],
                [[d["topic"], d["group"], d["brokerName"], d["queueId"], d["brokerOffset"], d["consumerOffset"],
                  d["diff"], fmt_ts(d["lastTimestamp"])] for d in data])  # fmt: skip
    print(f"\ntotal diff: {s.total_diff}")
    return 0


async def _item(args: argparse.Namespace, admin: AdminClient) -> int:
    data = await admin.view_broker_stats(args.broker, args.name, args.key)
    rows = [[w, (data.get(k) or {}).get("sum"), (data.get(k) or {}).get("tps"), (data.get(k) or {}).get("avgpt")]
            for w, k in (("minute", "statsMinute"), ("hour", "statsHour"), ("day", "statsDay"))]  # fmt: skip
    emit(args, data, ["window", "sum", "tps", "avg per time"], rows)
    return 0
