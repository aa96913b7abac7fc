"""``rocketq send`` and ``rocketq consume``.

``consume`` reads as a member of a consumer group (a lite pull consumer) and commits nothing unless told:
with ``--commit`` it commits, when it stops, the offsets of the messages it printed (never of messages it
polled and did not print), so the group's next reader starts right after them.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocketq.cli import args as a
from rocketq.cli.command import client_config, run
from rocketq.cli.message import MESSAGE_HEADERS, message_row
from rocketq.cli.output import CommandFailed, StreamTable, UsageError, emit, print_json
from rocketq.client import (
    AdminClient,
    ConsumeFromWhere,
    LitePullConsumer,
    Message,
    MessageSelector,
    Producer,
    RemoteBrokerOffsetStore,
)
from rocketq.protocol.bodies import MessageQueue

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers

DEFAULT_GROUP = "rocketq-cli-consumer"


class _WritesNothing(RemoteBrokerOffsetStore):
    """Reads the group's committed offsets, never writes one (``consume`` without ``--commit``): neither the
    periodic persist nor shutdown nor a rebalance may move or create the group's offsets."""

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        return None

    async def persist(self, mq: MessageQueue) -> None:
        return None

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool = True) -> None:
        return None


def register(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("send", parents=[common], help="send test messages")
    p.add_argument("-t", "--topic", required=True)
    body = p.add_mutually_exclusive_group()
    body.add_argument("-b", "--body", default="Hello RocketMQ", help="message body text")
    body.add_argument("--body-file", type=Path, help="read the body from a file ('-' for stdin)")
    p.add_argument("--tags")
    p.add_argument("--keys", help="space-separated keys")
    p.add_argument("--property", action="append", default=[], type=a.key_value, metavar="K=V",
                   help="user property (repeatable)")  # fmt: skip
    p.add_argument("--delay-level", type=a.non_negative_int, default=0)
    p.add_argument("--count", type=a.positive_int, default=1, help="send this many copies (default 1)")
    p.add_argument("--group", default="rocketq-cli-producer", help="producer group")
    p.add_argument("--sharding-key", help="send orderly: the queue is chosen by the hash of this key")
    p.set_defaults(func=run(_send))

    text = "print messages of a topic as a consumer group member (commits only with --commit)"
    p = sub.add_parser("consume", parents=[common], help=text)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-g", "--group", help=f"consumer group (default {DEFAULT_GROUP}; required with --commit)")
    p.add_argument("--commit", action="store_true",
                   help="commit the offsets of the printed messages when done (default: commit nothing)")  # fmt: skip
    p.add_argument("-s", "--subscription", default="*", help="tag expression (default *)")
    p.add_argument("--sql", help="SQL92 filter instead of a tag expression")
    p.add_argument("--from", dest="start", choices=["first", "last", "timestamp"], default="first",
                   help="where a group with no committed offset starts (default first)")  # fmt: skip
    p.add_argument("--timestamp", type=a.timestamp, help="with --from timestamp: the time to start from")
    p.add_argument("--count", type=a.non_negative_int, default=0, help="stop after this many messages (0: no limit)")
    p.add_argument("--idle-timeout", type=float, default=10.0,
                   help="stop after this many seconds without a message (0: never; default 10)")  # fmt: skip
    a.body_args(p)
    p.set_defaults(func=run(_consume))


async def _send(args: argparse.Namespace, admin: AdminClient) -> int:
    if args.body_file is not None:
        try:
            body = sys.stdin.buffer.read() if str(args.body_file) == "-" else args.body_file.read_bytes()
        except OSError as exc:
            raise CommandFailed(f"can not read --body-file {args.body_file}: {exc.strerror or exc}") from None
    else:
        body = args.body.encode()
    props = dict(args.property)
    results = []
    async with Producer(args.group, config=client_config(args), send_msg_timeout=args.timeout) as p:
        for _ in range(args.count):
            msg = Message(args.topic, body, tags=args.tags, keys=args.keys, properties=props,
                          delay_level=args.delay_level)  # fmt: skip
            if args.sharding_key is not None:
                results.append(await p.send_orderly(msg, args.sharding_key))
            else:
                results.append(await p.send(msg))
    data = [{"sendStatus": r.status.value, "msgId": r.msg_id, "offsetMsgId": r.offset_msg_id,
             **r.message_queue.to_json(), "queueOffset": r.queue_offset} for r in results]  # fmt: skip
    rows = [[r.status.value, r.msg_id, r.offset_msg_id, r.message_queue.broker_name, r.message_queue.queue_id,
             r.queue_offset] for r in results]  # fmt: skip
    emit(args, data, ["status", "msg id", "offset msg id", "broker", "queue", "queue offset"], rows)
    return 0


async def _consume(args: argparse.Namespace, admin: AdminClient) -> int:
    if args.commit and not args.group:
        raise UsageError("--commit needs -g GROUP: name the consumer group whose offsets should move")
    if args.start == "timestamp" and args.timestamp is None:
        raise UsageError("--from timestamp needs --timestamp TIME")
    route = await admin.topic_route(args.topic)  # a topic that does not exist is said so, not "0 messages"
    group = args.group or DEFAULT_GROUP
    where = {
        "first": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        "last": ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        "timestamp": ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
    }[args.start]
    consumer = LitePullConsumer(group, config=client_config(args), consume_from_where=where,
                                consume_timestamp=args.timestamp, rebalance_interval=2.0,
                                auto_commit=False)  # fmt: skip
    consumer.subscribe(args.topic, MessageSelector.by_sql(args.sql) if args.sql else args.subscription)
    table = None
    if not args.json:
        brokers = max((len(q.broker_name) for q in route.queue_datas), default=6)
        widths = [32, len(args.topic), brokers, 5, 6, 19, 4, 4] + ([4] if args.print_body else [])
        table = StreamTable(MESSAGE_HEADERS + (["body"] if args.print_body else []), widths)
    data: list[dict[str, Any]] = []
    printed: dict[MessageQueue, int] = {}  # next offset after the last printed message, per queue
    seen = 0
    interrupted = False
    async with consumer:
        if not args.commit:
            # swapped as soon as start returns: the first write would be the periodic persist, seconds later
            store = consumer.offset_store
            assert isinstance(store, RemoteBrokerOffsetStore)
            consumer.offset_store = _WritesNothing(store.instance, store.group)
        idle_since = time.monotonic()
        try:
            while args.count <= 0 or seen < args.count:
                msgs = await consumer.poll(1.0)
                if not msgs:
                    if args.idle_timeout and time.monotonic() - idle_since > args.idle_timeout:
                        break
                    continue
                idle_since = time.monotonic()
                if args.count > 0:
                    msgs = msgs[: args.count - seen]  # the rest of the poll is neither printed nor committed
                for m in msgs:
                    d, row = message_row(m, args.print_body)
                    if table is not None:
                        table.rows([row])
                    else:
                        data.append(d)
                    printed[m.message_queue] = max(printed.get(m.message_queue, 0), m.queue_offset + 1)
                seen += len(msgs)
                sys.stdout.flush()
        except asyncio.CancelledError:
            # Ctrl-C (asyncio.run cancels this task): stop like at the end of the run, so the printed
            # messages are committed (--commit) and the --json document is printed, then exit 130.
            task = asyncio.current_task()
            if task is None or task.uncancel() > 0:
                raise
            interrupted = True
        if args.commit and printed:
            await consumer.commit(printed)
    if args.json:
        print_json(data)
    note = f"committed for group {group}" if args.commit else "offsets not committed (--commit commits them)"
    print(f"consumed {seen} message(s); {note}", file=sys.stderr)
    return 130 if interrupted else 0
