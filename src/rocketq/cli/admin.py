"""Admin and try-it-by-hand subcommands, in the spirit of ``mqadmin``::

    rocketq topic create|update|delete|list|route|status
    rocketq group progress|connections|reset-offset|resend-dlq
    rocketq cluster list
    rocketq broker-status
    rocketq message by-id|by-key
    rocketq send / rocketq consume

Every command takes ``-n/--namesrv`` (default ``$NAMESRV_ADDR``) and prints a table, or JSON with ``--json``.
Exit codes: 0 success, 1 a request failed (message on stderr), 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from rocketq.client import (
    AdminClient,
    ClientConfig,
    ConsumeFromWhere,
    LitePullConsumer,
    Message,
    MessageExt,
    MessageSelector,
    Producer,
)
from rocketq.errors import RocketQError

if TYPE_CHECKING:  # _SubParsersAction is only subscriptable for type checkers on Python 3.11
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
AsyncCommand = Callable[[argparse.Namespace, AdminClient], Coroutine[Any, Any, Any]]


def register(subparsers: Subparsers) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-n", "--namesrv", default=os.environ.get("NAMESRV_ADDR"),
                        help="name server address(es), 'host:port;host:port' (default $NAMESRV_ADDR)")  # fmt: skip
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    common.add_argument("--timeout", type=float, default=5.0, help="request timeout in seconds (default 5)")

    # topic ------------------------------------------------------------------------------------------------
    topic = subparsers.add_parser("topic", help="create, update, delete, list and inspect topics")
    tsub = topic.add_subparsers(dest="topic_command", metavar="ACTION", required=True)
    for name, text in (("create", "create a topic"), ("update", "update a topic's queues / permission")):
        p = tsub.add_parser(name, parents=[common], help=text)
        p.add_argument("-t", "--topic", required=True)
        _target_args(p)
        p.add_argument("-r", "--read-queues", type=int, default=8, help="read queue count (default 8)")
        p.add_argument("-w", "--write-queues", type=int, default=8, help="write queue count (default 8)")
        p.add_argument("-p", "--perm", type=int, default=6, help="permission: 2 write, 4 read, 6 both (default 6)")
        p.add_argument("-o", "--order", action="store_true", help="mark the topic as ordered")
        p.set_defaults(func=_run(_topic_create))
    p = tsub.add_parser("delete", parents=[common], help="delete a topic from brokers and name servers")
    p.add_argument("-t", "--topic", required=True)
    _target_args(p)
    p.set_defaults(func=_run(_topic_delete))
    p = tsub.add_parser("list", parents=[common], help="list every topic the name server knows")
    p.set_defaults(func=_run(_topic_list))
    p = tsub.add_parser("route", parents=[common], help="show a topic's route")
    p.add_argument("-t", "--topic", required=True)
    p.set_defaults(func=_run(_topic_route))
    p = tsub.add_parser("status", parents=[common], help="min / max offset of every queue of a topic")
    p.add_argument("-t", "--topic", required=True)
    p.set_defaults(func=_run(_topic_status))

    # group ------------------------------------------------------------------------------------------------
    group = subparsers.add_parser("group", help="consumer group progress, connections, offset reset")
    gsub = group.add_subparsers(dest="group_command", metavar="ACTION", required=True)
    p = gsub.add_parser("progress", parents=[common], help="consume progress and lag per queue")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", help="only this topic")
    p.set_defaults(func=_run(_group_progress))
    p = gsub.add_parser("connections", parents=[common], help="clients connected for a consumer group")
    p.add_argument("-g", "--group", required=True)
    p.set_defaults(func=_run(_group_connections))
    p = gsub.add_parser("reset-offset", parents=[common], help="move a group's offsets to a point in time")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("--timestamp", required=True,
                   help="epoch ms, yyyyMMddHHmmss[SSS] (local time), ISO 8601, or 'now'")  # fmt: skip
    p.set_defaults(func=_run(_group_reset_offset))
    p = gsub.add_parser("resend-dlq", parents=[common], help="send a dead letter back to its group")
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-i", "--msg-id", required=True, help="client message id (UNIQ_KEY) or offset message id")
    p.set_defaults(func=_run(_group_resend_dlq))

    # cluster / broker -------------------------------------------------------------------------------------
    cluster = subparsers.add_parser("cluster", help="clusters and their brokers")
    csub = cluster.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    p = csub.add_parser("list", parents=[common], help="brokers of every cluster with a few runtime numbers")
    p.add_argument("-c", "--cluster", help="only this cluster")
    p.set_defaults(func=_run(_cluster_list))
    p = subparsers.add_parser("broker-status", parents=[common], help="a broker's runtime info table")
    _target_args(p)
    p.set_defaults(func=_run(_broker_status))

    # messages ---------------------------------------------------------------------------------------------
    message = subparsers.add_parser("message", help="look messages up by id or key")
    msub = message.add_subparsers(dest="message_command", metavar="ACTION", required=True)
    p = msub.add_parser("by-id", parents=[common], help="by broker (offset) message id, or client id with -t")
    p.add_argument("-i", "--id", required=True, dest="msg_id")
    p.add_argument("-t", "--topic", help="topic to search when the id is a client id (UNIQ_KEY)")
    _body_args(p)
    p.set_defaults(func=_run(_message_by_id))
    p = msub.add_parser("by-key", parents=[common], help="by message key")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-k", "--key", required=True)
    p.add_argument("--max", type=int, default=64, help="at most this many per broker (default 64)")
    _body_args(p)
    p.set_defaults(func=_run(_message_by_key))

    # send / consume ---------------------------------------------------------------------------------------
    p = subparsers.add_parser("send", parents=[common], help="send test messages")
    p.add_argument("-t", "--topic", required=True)
    body = p.add_mutually_exclusive_group()
    body.add_argument("-b", "--body", default="Hello RocketMQ", help="message body text")
    body.add_argument("--body-file", type=Path, help="read the body from a file ('-' for stdin)")
    p.add_argument("--tags")
    p.add_argument("--keys", help="space-separated keys")
    p.add_argument("--property", action="append", default=[], metavar="K=V", help="user property (repeatable)")
    p.add_argument("--delay-level", type=int, default=0)
    p.add_argument("--count", type=int, default=1, help="send this many copies (default 1)")
    p.add_argument("--group", default="rocketq-cli-producer", help="producer group")
    p.add_argument("--sharding-key", help="send orderly: the queue is chosen by the hash of this key")
    p.set_defaults(func=_run(_send))
    p = subparsers.add_parser("consume", parents=[common], help="print messages of a topic (lite pull consumer)")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-g", "--group", default="rocketq-cli-consumer")
    p.add_argument("-s", "--subscription", default="*", help="tag expression (default *)")
    p.add_argument("--sql", help="SQL92 filter instead of a tag expression")
    p.add_argument("--from", dest="start", choices=["first", "last", "timestamp"], default="first",
                   help="where a group with no committed offset starts (default first)")  # fmt: skip
    p.add_argument("--timestamp", help="with --from timestamp: the time to start from")
    p.add_argument("--count", type=int, default=0, help="stop after this many messages (0: no limit)")
    p.add_argument("--idle-timeout", type=float, default=10.0,
                   help="stop after this many seconds without a message (0: never; default 10)")  # fmt: skip
    _body_args(p)
    p.set_defaults(func=_run(_consume))


def _target_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("-c", "--cluster", help="every master of this cluster")
    g.add_argument("-b", "--broker", help="one broker address host:port")


def _body_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--print-body", action="store_true", help="include the body (UTF-8, or hex) in the output")


# ----------------------------------------------------------------------------------------------- plumbing


def _run(fn: AsyncCommand) -> Callable[[argparse.Namespace], int]:
    def command(args: argparse.Namespace) -> int:
        if not args.namesrv:
            print("error: no name server: pass -n host:port or set NAMESRV_ADDR", file=sys.stderr)
            return 2
        if getattr(args, "log_level", "INFO") == "INFO":
            logging.getLogger("rocketq").setLevel(logging.WARNING)

        async def main() -> Any:
            client = AdminClient(namesrv_addr=args.namesrv, timeout=args.timeout)
            try:
                return await fn(args, client)
            finally:
                await client.close()

        try:
            return int(asyncio.run(main()) or 0)
        except RocketQError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130

    return command


def _jsonable(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return {k: _jsonable(v) for k, v in asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set):
        return [_jsonable(v) for v in obj]
    return obj


def _emit(args: argparse.Namespace, data: Any, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    if args.json:
        print(json.dumps(_jsonable(data), indent=2, ensure_ascii=False, sort_keys=True))
        return
    print_table(headers, rows)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _fmt_ts(ms: int) -> str:
    if ms <= 0:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def parse_timestamp(text: str) -> int:
    """Epoch ms from 'now', epoch ms/s digits, yyyyMMddHHmmss[SSS] (local time) or ISO 8601."""
    if text == "now":
        return int(time.time() * 1000)
    if text.isdigit():
        if len(text) in (14, 17):
            fmt = "%Y%m%d%H%M%S%f" if len(text) == 17 else "%Y%m%d%H%M%S"
            value = text + "000" if len(text) == 17 else text
            return int(dt.datetime.strptime(value, fmt).timestamp() * 1000)
        n = int(text)
        return n if n > 10**11 else n * 1000
    return int(dt.datetime.fromisoformat(text).timestamp() * 1000)


# ------------------------------------------------------------------------------------------------ topics


async def _topic_create(args: argparse.Namespace, admin: AdminClient) -> int:
    addrs = await admin.create_topic(
        args.topic, cluster=args.cluster, broker_addr=args.broker, read_queue_nums=args.read_queues,
        write_queue_nums=args.write_queues, perm=args.perm, order=args.order,
    )  # fmt: skip
    data = {"topic": args.topic, "brokers": addrs, "readQueueNums": args.read_queues,
            "writeQueueNums": args.write_queues, "perm": args.perm}  # fmt: skip
    _emit(args, data, ["broker", "topic", "read", "write", "perm"],
          [[a, args.topic, args.read_queues, args.write_queues, args.perm] for a in addrs])  # fmt: skip
    return 0


async def _topic_delete(args: argparse.Namespace, admin: AdminClient) -> int:
    await admin.delete_topic(args.topic, cluster=args.cluster, broker_addr=args.broker)
    _emit(args, {"deleted": args.topic}, ["deleted"], [[args.topic]])
    return 0


async def _topic_list(args: argparse.Namespace, admin: AdminClient) -> int:
    topics = await admin.topic_list()
    _emit(args, topics, ["topic"], [[t] for t in topics])
    return 0


async def _topic_route(args: argparse.Namespace, admin: AdminClient) -> int:
    route = await admin.topic_route(args.topic)
    rows = []
    for q in sorted(route.queue_datas, key=lambda q: q.broker_name):
        bd = route.broker(q.broker_name)
        addrs = " ".join(f"{k}={v}" for k, v in sorted(bd.broker_addrs.items())) if bd else ""
        rows.append([bd.cluster if bd else "", q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, addrs])
    _emit(args, route.to_json(), ["cluster", "broker", "read", "write", "perm", "addresses (id=addr)"], rows)
    return 0


async def _topic_status(args: argparse.Namespace, admin: AdminClient) -> int:
    status = await admin.topic_status(args.topic)
    rows = [[s.message_queue.broker_name, s.message_queue.queue_id, s.min_offset, s.max_offset,
             _fmt_ts(s.last_update_timestamp)] for s in status]  # fmt: skip
    _emit(args, status, ["broker", "queue", "min offset", "max offset", "last updated"], rows)
    return 0


# ------------------------------------------------------------------------------------------------ groups


async def _group_progress(args: argparse.Namespace, admin: AdminClient) -> int:
    progress = await admin.consume_progress(args.group, args.topic)
    rows = [[p.message_queue.topic, p.message_queue.broker_name, p.message_queue.queue_id, p.broker_offset,
             p.consumer_offset, p.lag, _fmt_ts(p.last_timestamp)] for p in progress]  # fmt: skip
    data = [{**_jsonable(p), "lag": p.lag} for p in progress]
    _emit(args, data, ["topic", "broker", "queue", "broker offset", "consumer offset", "lag", "last consumed"], rows)
    if not args.json:
        print(f"\ntotal lag: {sum(p.lag for p in progress)}")
    return 0


async def _group_connections(args: argparse.Namespace, admin: AdminClient) -> int:
    cc = await admin.consumer_connections(args.group)
    rows = [[c.client_id, c.client_addr, c.language, c.version] for c in cc.connections]
    _emit(args, cc, ["client id", "address", "language", "version"], rows)
    if not args.json:
        print(f"\n{cc.consume_type} {cc.message_model} {cc.consume_from_where}")
        for topic, sub in sorted(cc.subscriptions.items()):
            print(f"  {topic}: {sub}")
    return 0


async def _group_reset_offset(args: argparse.Namespace, admin: AdminClient) -> int:
    ts = parse_timestamp(args.timestamp)
    offsets = await admin.reset_offset_by_timestamp(args.group, args.topic, ts)
    items = sorted(offsets.items())
    _emit(args, [{**mq.to_json(), "offset": off} for mq, off in items], ["broker", "queue", "new offset"],
          [[mq.broker_name, mq.queue_id, off] for mq, off in items])  # fmt: skip
    return 0


async def _group_resend_dlq(args: argparse.Namespace, admin: AdminClient) -> int:
    result = await admin.resend_dead_letter(args.group, args.msg_id)
    row = {"msgId": result.msg_id, "offsetMsgId": result.offset_msg_id, "queueOffset": result.queue_offset}
    _emit(args, row, ["msg id", "offset msg id", "queue offset"], [[result.msg_id, result.offset_msg_id,
          result.queue_offset]])  # fmt: skip
    return 0


# ------------------------------------------------------------------------------------------ cluster/broker


async def _cluster_list(args: argparse.Namespace, admin: AdminClient) -> int:
    brokers = await admin.brokers(args.cluster, runtime=True)
    rows = [[b.cluster, b.broker_name, b.broker_id, b.addr, b.runtime.get("brokerVersionDesc", ""),
             b.runtime.get("putTps", ""), b.runtime.get("getTransferedTps", ""),
             b.runtime.get("error", "")] for b in brokers]  # fmt: skip
    _emit(args, brokers, ["cluster", "broker", "id", "address", "version", "put tps", "get tps", "error"], rows)
    return 0


async def _broker_status(args: argparse.Namespace, admin: AdminClient) -> int:
    addrs = [args.broker] if args.broker else [b.addr for b in await admin.brokers(args.cluster)]
    result = {addr: await admin.broker_runtime_info(addr) for addr in addrs}
    if args.json:
        _emit(args, result, [], [])
        return 0
    for addr, table in result.items():
        print(f"# {addr}")
        print_table(["key", "value"], sorted(table.items()))
        print()
    return 0


# ---------------------------------------------------------------------------------------------- messages


def _message_rows(msgs: list[MessageExt], with_body: bool) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    data, rows = [], []
    for m in msgs:
        d = {
            "msgId": m.msg_id, "offsetMsgId": m.offset_msg_id, "topic": m.topic, "tags": m.tags, "keys": m.keys,
            "queueId": m.queue_id, "queueOffset": m.queue_offset, "reconsumeTimes": m.reconsume_times,
            "bornTimestamp": m.born_timestamp, "storeTimestamp": m.store_timestamp,
            "bornHost": f"{m.born_host[0]}:{m.born_host[1]}", "storeHost": f"{m.store_host[0]}:{m.store_host[1]}",
            "properties": m.properties, "bodyLength": len(m.body),
        }  # fmt: skip
        if with_body:
            d["body"] = _body_text(m.body)
        data.append(d)
        rows.append([m.msg_id, m.topic, m.tags or "", " ".join(m.keys), m.queue_id, m.queue_offset,
                     _fmt_ts(m.store_timestamp)] + ([d["body"]] if with_body else []))  # fmt: skip
    return data, rows


def _body_text(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.hex()


_MSG_HEADERS = ["msg id", "topic", "tags", "keys", "queue", "offset", "stored"]


async def _message_by_id(args: argparse.Namespace, admin: AdminClient) -> int:
    msgs = await admin.query_message_by_id(args.msg_id, args.topic)
    data, rows = _message_rows(msgs, args.print_body)
    _emit(args, data, _MSG_HEADERS + (["body"] if args.print_body else []), rows)
    return 0 if msgs else 1


async def _message_by_key(args: argparse.Namespace, admin: AdminClient) -> int:
    msgs = await admin.query_message_by_key(args.topic, args.key, max_num=args.max)
    data, rows = _message_rows(msgs, args.print_body)
    _emit(args, data, _MSG_HEADERS + (["body"] if args.print_body else []), rows)
    return 0 if msgs else 1


# ------------------------------------------------------------------------------------------ send/consume


async def _send(args: argparse.Namespace, admin: AdminClient) -> int:
    if args.body_file is not None:
        body = sys.stdin.buffer.read() if str(args.body_file) == "-" else args.body_file.read_bytes()
    else:
        body = args.body.encode()
    props = {}
    for item in args.property:
        k, sep, v = item.partition("=")
        if not sep:
            print(f"error: --property wants K=V, got {item!r}", file=sys.stderr)
            return 2
        props[k] = v
    results = []
    async with Producer(args.group, config=ClientConfig(namesrv_addr=args.namesrv), send_msg_timeout=args.timeout) as p:
        for _ in range(args.count):
            msg = Message(args.topic, body, tags=args.tags, keys=args.keys, properties=props,
                          delay_level=args.delay_level)  # fmt: skip
            if args.sharding_key is not None:
                results.append(await p.send_orderly(msg, args.sharding_key))
            else:
                results.append(await p.send(msg))
    rows = [[r.status.value, r.msg_id, r.offset_msg_id, r.message_queue.broker_name, r.message_queue.queue_id,
             r.queue_offset] for r in results]  # fmt: skip
    data = [{"status": r.status.value, "msgId": r.msg_id, "offsetMsgId": r.offset_msg_id,
             "messageQueue": r.message_queue.to_json(), "queueOffset": r.queue_offset} for r in results]  # fmt: skip
    _emit(args, data, ["status", "msg id", "offset msg id", "broker", "queue", "queue offset"], rows)
    return 0


async def _consume(args: argparse.Namespace, admin: AdminClient) -> int:
    where = {
        "first": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        "last": ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        "timestamp": ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
    }[args.start]
    ts = parse_timestamp(args.timestamp) if args.timestamp else None
    consumer = LitePullConsumer(args.group, config=ClientConfig(namesrv_addr=args.namesrv), consume_from_where=where,
                                consume_timestamp=ts, rebalance_interval=2.0)  # fmt: skip
    consumer.subscribe(args.topic, MessageSelector.by_sql(args.sql) if args.sql else args.subscription)
    seen = 0
    async with consumer:
        idle_since = time.monotonic()
        while args.count <= 0 or seen < args.count:
            msgs = await consumer.poll(1.0)
            if not msgs:
                if args.idle_timeout and time.monotonic() - idle_since > args.idle_timeout:
                    break
                continue
            idle_since = time.monotonic()
            if args.count > 0:
                msgs = msgs[: args.count - seen]
            seen += len(msgs)
            data, rows = _message_rows(msgs, args.print_body)
            if args.json:
                for d in data:
                    print(json.dumps(d, ensure_ascii=False, sort_keys=True), flush=True)
            else:
                for r in rows:
                    print("  ".join(str(c) for c in r), flush=True)
        await consumer.commit()
    print(f"consumed {seen} message(s)", file=sys.stderr)
    return 0
