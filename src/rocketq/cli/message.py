"""``rocketq message by-id|by-key|by-offset|peek|consume-directly|trace`` and the message rows every message
command prints.

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
from rocketq.client.trace import query_trace
from rocketq.protocol.topics import TRACE_TOPIC

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers

MESSAGE_HEADERS = ["msg id", "topic", "broker", "queue", "offset", "stored", "tags", "keys"]


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
    p = msub.add_parser("by-offset", parents=[common], help="the message at one queue offset (queryMsgByOffset)")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-b", "--broker-name", required=True, help="the queue's broker (name, as in topic route)")
    p.add_argument("-q", "--queue", required=True, type=a.non_negative_int, help="queue id")
    p.add_argument("-o", "--offset", required=True, type=a.non_negative_int, help="queue offset")
    a.body_args(p)
    p.set_defaults(func=run(_by_offset))
    text = "hand a stored message to one consumer's listener (mqadmin queryMsgById -g -d)"
    p = msub.add_parser("consume-directly", parents=[common], help=text)
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-c", "--client-id", required=True, help="the consumer's client id (group connections)")
    p.add_argument("-i", "--id", required=True, dest="msg_id", type=a.msg_id,
                   help="offset message id, or client id with -t")  # fmt: skip
    p.add_argument("-t", "--topic", help="topic to search when the id is a client id (UNIQ_KEY)")
    p.set_defaults(func=run(_consume_directly))
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


async def _peek(args: argparse.Namespace, admin: AdminClient) -> int:
    found = await admin.browse_messages(
        args.topic, broker_name=args.broker_name, queue_id=args.queue, from_offset=args.from_offset,
        to_offset=args.to_offset, begin_ms=args.begin, end_ms=args.end, expression=args.subscription,
        max_messages=args.count,
    )  # fmt: skip
    if not found:
        raise CommandFailed(f"no message in the chosen queues of topic {args.topic!r} and range")
    emit_messages(args, found)
    return 0


async def _by_offset(args: argparse.Namespace, admin: AdminClient) -> int:
    m = await admin.message_at_offset(args.topic, args.broker_name, args.queue, args.offset)
    if m is None:
        raise CommandFailed(f"no message at offset {args.offset} of {args.broker_name}:{args.queue} of {args.topic!r}")
    emit_messages(args, [m])
    return 0


async def _consume_directly(args: argparse.Namespace, admin: AdminClient) -> int:
    r = await admin.consume_message_directly(args.group, args.client_id, args.msg_id, args.topic)
    row = [r.get("consumeResult"), r.get("order"), r.get("autoCommit"), r.get("spentTimeMills"), r.get("remark")]
    emit(args, r, ["result", "order", "auto commit", "spent ms", "remark"], [row])
    return 0 if r.get("consumeResult") == "CR_SUCCESS" else 1
