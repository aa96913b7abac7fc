"""Consumers: the groups at a glance, and per group its lag per queue, connections, running info; create,
delete and reset offsets (RocketMQ Dashboard's Consumer page)."""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from rocketq.console.inputs import attempt, back_to, parse_time_ms, required, time_field
from rocketq.console.keys import ADMIN_KEY
from rocketq.console.page import Page
from rocketq.console.render import render

PAGE = Page(title="Consumers", path="/consumers", order=50)
routes = web.RouteTableDef()


@routes.get("/consumers")
async def groups(request: web.Request) -> web.StreamResponse:
    admin = request.app[ADMIN_KEY]
    names = await admin.consumer_groups()
    summaries = await asyncio.gather(*(admin.group_summary(g) for g in names))
    return render(request, "consumers.html", groups=summaries, flash=request.query.get("done", ""))


@routes.get("/consumers/{group}")
async def group(request: web.Request) -> web.StreamResponse:
    admin = request.app[ADMIN_KEY]
    name = request.match_info["group"]
    (progress, progress_error), (conn, conn_error) = await asyncio.gather(
        attempt(admin.consume_progress(name)), attempt(admin.consumer_connections(name))
    )
    topics = sorted({p.message_queue.topic for p in progress or []} | set(conn.subscriptions if conn else {}))
    return render(
        request, "consumer.html", group=name, progress=progress or [], progress_error=progress_error,
        conn=conn, conn_error=conn_error, topics=topics, flash=request.query.get("done", ""),
        now=time_field(int(time.time() * 1000)),
    )  # fmt: skip


@routes.post("/consumers/{group}/reset")
async def reset(request: web.Request) -> web.StreamResponse:
    admin = request.app[ADMIN_KEY]
    name = request.match_info["group"]
    form = await request.post()
    topic = required(form, "topic")
    when = parse_time_ms(required(form, "time"), "time")
    moved = await admin.reset_offset_by_timestamp(name, topic, when)
    done = f"reset {name} on {topic}: " + ", ".join(
        f"{mq.broker_name}/{mq.queue_id}→{off}" for mq, off in sorted(moved.items())
    )
    raise back_to(f"/consumers/{name}", done=done)
