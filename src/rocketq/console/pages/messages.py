"""Messages: by topic and time range, by key, by message id; one message's properties and body, whether each
consumer group of its topic has consumed it, and a resend to one consumer of a group (CONSUME_MESSAGE_DIRECTLY,
RocketMQ Dashboard's "resend message")."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from aiohttp import web

from rocketq.client import AdminClient, MessageExt
from rocketq.console.browse import messages_in_range
from rocketq.console.inputs import attempt, back_to, int_field, parse_time_ms, required, time_field
from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of

PAGE = Page(title="Messages", path="/messages", order=70)
routes = web.RouteTableDef()

MODES = ("topic", "key", "id")
MAX_SHOWN = 2000  # a page of rows, not a dump of the topic
HOUR_MS = 3600 * 1000


@routes.get("/messages")
async def messages(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    q = request.query
    mode = q.get("mode", "topic")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    now = int(time.time() * 1000)
    begin = parse_time_ms(q["begin"], "begin") if q.get("begin") else now - HOUR_MS
    end = parse_time_ms(q["end"], "end") if q.get("end") else now + 60_000  # what arrives while reading
    limit = int_field(q, "max", 64, low=1, high=MAX_SHOWN)
    topic = q.get("topic", "").strip()
    found: list[MessageExt] | None = None
    if topic:
        if mode == "topic":
            found = await messages_in_range(admin, topic, begin, end, limit)
        elif mode == "key":
            found = await admin.query_message_by_key(topic, required(q, "key"), max_num=limit)
        else:
            found = await admin.query_message_by_id(required(q, "msg_id", "message id"), topic)
    return render(request, "messages.html", mode=mode, topic=topic, key=q.get("key", ""),
                  msg_id=q.get("msg_id", ""), begin=time_field(begin), end=time_field(end), limit=limit,
                  found=found, topics=await admin.topic_list())  # fmt: skip


@dataclass(frozen=True)
class Track:
    """Whether ``group`` has consumed the message: its consumer offset of the message's queue passed it."""

    group: str
    state: str
    clients: list[str]


async def _track(admin: AdminClient, msg: MessageExt, group: str) -> Track:
    (progress, err), (conn, _) = await asyncio.gather(
        attempt(admin.consume_progress(group, msg.topic)), attempt(admin.consumer_connections(group))
    )
    clients = [c.client_id for c in conn.connections] if conn else []
    if progress is None:
        return Track(group, f"unknown ({err})", clients)
    mine = [p for p in progress if p.message_queue.topic == msg.topic and p.message_queue.queue_id == msg.queue_id
            and p.message_queue.broker_name == msg.broker_name]  # fmt: skip
    if not mine:
        state = "not consumed yet"
    else:
        state = "consumed" if mine[0].consumer_offset > msg.queue_offset else "not consumed yet"
    return Track(group, state, clients)


def body_text(msg: MessageExt) -> tuple[str, bool]:
    """The body as text when it is UTF-8, else as hex; and whether it was text."""
    try:
        return msg.body.decode("utf-8"), True
    except UnicodeDecodeError:
        return msg.body.hex(" "), False


@routes.get("/messages/view")
async def view(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    topic = required(request.query, "topic")
    msg_id = required(request.query, "msg_id", "message id")
    found = await admin.query_message_by_id(msg_id, topic)
    if not found:
        raise ValueError(f"no message {msg_id} in topic {topic!r}")
    msg = found[0]
    groups, groups_error = await attempt(admin.groups_consuming(msg.topic))
    tracks = list(await asyncio.gather(*(_track(admin, msg, g) for g in groups or [])))
    body, is_text = body_text(msg)
    return render(request, "message.html", msg=msg, topic=topic, body=body, is_text=is_text, tracks=tracks,
                  groups_error=groups_error)  # fmt: skip


@routes.post("/messages/resend")
async def resend(request: web.Request) -> web.StreamResponse:
    """Hand the message to one consumer of the group (the first connected one when no client is chosen)."""
    admin = admin_of(request)
    form = await request.post()
    topic, msg_id, group = (required(form, n) for n in ("topic", "msg_id", "group"))
    client_id = str(form.get("client_id", "")).strip()
    if not client_id:
        conns = await admin.consumer_connections(group)
        if not conns.connections:
            raise ValueError(f"no consumer of group {group!r} is connected")
        client_id = conns.connections[0].client_id
    result = await admin.consume_message_directly(group, client_id, msg_id, topic)
    done = (f"resent to {client_id} of {group}: {result.get('consumeResult', '?')}"
            f"{' — ' + str(result['remark']) if result.get('remark') else ''}")  # fmt: skip
    raise back_to(request, "/messages/view", topic=topic, msg_id=msg_id, done=done)
