"""``rocketq message by-id|by-key|peek|trace`` and the message rows every message command prints.

``peek`` reads a topic's queues from/to an offset or a time without a consumer group's offsets (mqadmin's
``printMsg`` / ``printMsgByQueue``): PULL_MESSAGE with the subscription in the request, no commit flag.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from rocketq.cli import args as a
from rocketq.cli.command import run
from rocketq.cli.output import CommandFailed, body_text, emit, fmt_ts
from rocketq.client import AdminClient, MessageExt
from rocketq.client.lowlevel import to_subscribe_info
from rocketq.client.message import PullStatus
from rocketq.client.subscription import build_subscription_data
from rocketq.client.trace import query_trace
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.headers import PULL_FLAG_SUBSCRIPTION, PullMessageRequestHeader
from rocketq.protocol.message import iter_records
from rocketq.protocol.topics import TRACE_TOPIC

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers

#: the group peek pulls as (Java MixAll.TOOLS_CONSUMER_GROUP, which mqadmin's printMsg uses); nothing is committed
TOOLS_GROUP = "TOOLS_CONSUMER"
MESSAGE_HEADERS = ["msg id", "topic", "broker", "queue", "offset", "stored", "tags", "keys"]
_PULL_BATCH = 32


def register(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    message = sub.add_parser("message", help="look messages up by id or key, or read a range of a topic")
    msub = message.add_subparsers(dest="message_command", metavar="ACTION", required=True)
    p = msub.add_parser("by-id", parents=[common], help="by broker (offset) message id, or client id with -t")
    p.add_argument("-i", "--id", required=True, dest="msg_id", type=a.msg_id)
    p.add_argument("-t", "--topic", help="topic to search when the id is a client id (UNIQ_KEY)")
    a.body_args(p)
    p.set_defaults(func=run(_by_id))
    p = msub.add_parser("by-key", parents=[common], help="by message key")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-k", "--key", required=True)
    p.add_argument("--max", type=a.positive_int, default=64, help="at most this many per broker (default 64)")
    a.body_args(p)
    p.set_defaults(func=run(_by_key))
    text = "read messages of a topic's queues without committing anything (mqadmin printMsg)"
    p = msub.add_parser("peek", parents=[common], help=text)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-b", "--broker-name", help="only the queues of this broker (name, as in topic route)")
    p.add_argument("-q", "--queue", type=a.non_negative_int, help="only this queue id")
    p.add_argument("--from-offset", type=a.non_negative_int, help="first queue offset to read (default: the min)")
    p.add_argument("--to-offset", type=a.non_negative_int, help="stop before this queue offset (default: the max)")
    p.add_argument("--begin", type=a.timestamp, help="start at the first message stored at or after this time")
    p.add_argument("--end", type=a.timestamp, help="stop at the first message stored at or after this time")
    p.add_argument("-s", "--subscription", default="*", help="tag expression (default *)")
    p.add_argument("--count", type=a.positive_int, default=100, help="at most this many messages (default 100)")
    a.body_args(p)
    p.set_defaults(func=run(_peek))
    p = msub.add_parser("trace", parents=[common], help="a message's trace records (mqadmin queryMsgTraceById)")
    p.add_argument("-i", "--id", required=True, dest="msg_id", help="the message id (client id, UNIQ_KEY)")
    p.add_argument("--trace-topic", default=TRACE_TOPIC, help=f"the trace topic (default {TRACE_TOPIC})")
    p.set_defaults(func=run(_trace))


def message_row(m: MessageExt, with_body: bool) -> tuple[dict[str, Any], list[Any]]:
    """One message as a JSON object (camelCase, as Java's MessageExt) and as a table row."""
    d = {
        "msgId": m.msg_id, "offsetMsgId": m.offset_msg_id, "topic": m.topic, "brokerName": m.broker_name,
        "queueId": m.queue_id, "queueOffset": m.queue_offset, "tags": m.tags, "keys": m.keys,
        "reconsumeTimes": m.reconsume_times, "bornTimestamp": m.born_timestamp, "storeTimestamp": m.store_timestamp,
        "bornHost": f"{m.born_host[0]}:{m.born_host[1]}", "storeHost": f"{m.store_host[0]}:{m.store_host[1]}",
        "properties": m.properties, "bodyLength": len(m.body),
    }  # fmt: skip
    if with_body:
        d["body"] = body_text(m.body)
    row = [m.msg_id, m.topic, m.broker_name, m.queue_id, m.queue_offset, fmt_ts(m.store_timestamp), m.tags or "",
           " ".join(m.keys)] + ([d["body"]] if with_body else [])  # fmt: skip
    return d, row


def emit_messages(args: argparse.Namespace, msgs: list[MessageExt]) -> None:
    pairs = [message_row(m, args.print_body) for m in msgs]
    emit(args, [d for d, _ in pairs], MESSAGE_HEADERS + (["body"] if args.print_body else []), [r for _, r in pairs])


async def _by_id(args: argparse.Namespace, admin: AdminClient) -> int:
    msgs = await admin.query_message_by_id(args.msg_id, args.topic)
    if not msgs:
        raise CommandFailed(f"no message with id {args.msg_id} in topic {args.topic!r}")
    emit_messages(args, msgs)
    return 0


async def _by_key(args: argparse.Namespace, admin: AdminClient) -> int:
    msgs = await admin.query_message_by_key(args.topic, args.key, max_num=args.max)
    if not msgs:
        raise CommandFailed(f"no message with key {args.key!r} in topic {args.topic!r}")
    emit_messages(args, msgs)
    return 0


TRACE_HEADERS = ["type", "time", "group", "topic", "region", "store host", "cost ms", "success", "retry", "detail"]


def _trace_row(r: dict[str, str]) -> list[Any]:
    ts = r.get("timestamp", "")
    when = fmt_ts(int(ts)) if ts.isdigit() else ts
    kind = r["type"]
    detail = {"SubBefore": r.get("requestId"), "SubAfter": f"request {r.get('requestId')} code {r.get('contextCode')}",
              "EndTransaction": f"{r.get('transactionState')} check={r.get('fromTransactionCheck')}"}.get(kind, "")
    return [kind, when, r.get("groupName", ""), r.get("topic", ""), r.get("regionId", ""), r.get("storeHost", ""),
            r.get("costTime", ""), r.get("success", ""), r.get("retryTimes", ""), detail or ""]  # fmt: skip


async def _trace(args: argparse.Namespace, admin: AdminClient) -> int:
    records = await query_trace(admin, args.msg_id, args.trace_topic)
    if not records:
        raise CommandFailed(f"no trace of message {args.msg_id} in topic {args.trace_topic!r}")
    emit(args, records, TRACE_HEADERS, [_trace_row(r) for r in records])
    return 0


async def peek_queues(args: argparse.Namespace, admin: AdminClient) -> list[tuple[MessageQueue, str]]:
    """The chosen readable queues of the topic, each with the address to read it from."""
    route = await admin.topic_route(args.topic)
    queues = sorted(to_subscribe_info(args.topic, route))
    chosen = [q for q in queues if args.broker_name in (None, q.broker_name) and args.queue in (None, q.queue_id)]
    if not chosen:
        have = ", ".join(f"{q.broker_name}:{q.queue_id}" for q in queues) or "none readable"
        raise CommandFailed(f"topic {args.topic!r} has no such queue (queues: {have})")
    out = []
    for q in chosen:
        bd = route.broker(q.broker_name)
        addr = bd.select_broker_addr() if bd else None
        if addr is None:
            raise CommandFailed(f"broker {q.broker_name!r} has no address in the route: {q} can not be read")
        out.append((q, addr))
    return out


async def _peek(args: argparse.Namespace, admin: AdminClient) -> int:
    api = admin.instance.api
    sub = build_subscription_data(args.topic, args.subscription)
    tags = set(sub.tags_set)
    found: list[MessageExt] = []
    for mq, addr in await peek_queues(args, admin):
        if len(found) >= args.count:
            break
        lo, hi = await api.get_min_offset(addr, mq, admin.timeout), await api.get_max_offset(addr, mq, admin.timeout)
        start = args.from_offset if args.from_offset is not None else lo
        if args.begin is not None:
            start = max(start, await api.search_offset(addr, mq, args.begin, admin.timeout))
        stop = min(hi, args.to_offset) if args.to_offset is not None else hi
        if args.end is not None:
            stop = min(stop, await api.search_offset(addr, mq, args.end, admin.timeout))
        offset = max(start, lo)
        while offset < stop and len(found) < args.count:
            header = PullMessageRequestHeader(
                consumer_group=TOOLS_GROUP, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset,
                max_msg_nums=min(_PULL_BATCH, stop - offset), sys_flag=PULL_FLAG_SUBSCRIPTION, commit_offset=0,
                suspend_timeout_millis=0, subscription=sub.sub_string, sub_version=0,
                expression_type=sub.expression_type,
            )  # fmt: skip
            raw = await api.pull_message(addr, header, mq.broker_name, admin.timeout)
            if raw.status is PullStatus.FOUND:
                for rec in iter_records(raw.body):
                    m = MessageExt.from_record(rec, mq.broker_name)
                    if offset <= m.queue_offset < stop and (not tags or m.tags in tags):
                        found.append(m)
            nxt = raw.header.next_begin_offset
            if nxt <= offset:  # the broker moved us nowhere (an illegal offset answered with itself): stop
                break
            offset = nxt
    del found[args.count :]
    if not found:
        raise CommandFailed(f"no message in the chosen queues of topic {args.topic!r} and range")
    emit_messages(args, found)
    return 0
