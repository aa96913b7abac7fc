"""Consumers: the groups at a glance, and per group its lag per queue, connections, running info; create,
delete and reset offsets (RocketMQ Dashboard's Consumer page)."""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from rocketq.client.admin import mq_table
from rocketq.console.inputs import attempt, back_to, int_field, parse_time_ms, required, time_field
from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of
from rocketq.protocol.topics import is_system_group

PAGE = Page(title="Consumers", path="/consumers", order=50)
routes = web.RouteTableDef()


@routes.get("/consumers")
async def groups(request: web.Request) -> web.StreamResponse:
    """Every group: those with a retry topic (consumed once) and those only configured (created, never used),
    as RocketMQ Dashboard lists the brokers' subscription groups."""
    admin = admin_of(request)
    show_system = request.query.get("system") == "1"
    configured = {i.group_name for i in await admin.subscription_groups()}
    names = sorted(set(await admin.consumer_groups()) | configured)
    if not show_system:
        names = [g for g in names if not is_system_group(g)]
    summaries = await asyncio.gather(*(admin.group_summary(g) for g in names))
    return render(request, "consumers.html", groups=summaries, show_system=show_system)  # fmt: skip


@routes.post("/consumers")
async def create(request: web.Request) -> web.StreamResponse:
    """Create (or update) a subscription group on every master (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)."""
    admin = admin_of(request)
    form = await request.post()
    name = required(form, "group")
    addrs = await admin.update_subscription_group(
        name,
        retry_max_times=int_field(form, "retry_max_times", 16, low=-1, high=64),
        retry_queue_nums=int_field(form, "retry_queue_nums", 1, low=0, high=64),
        consume_broadcast_enable=form.get("broadcast") == "on",
        consume_enable=form.get("consume_disabled") != "on",
    )
    raise back_to(request, "/consumers", done=f"group {name} saved on {', '.join(addrs)}")


@routes.post("/consumers/{group}/delete")
async def delete(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    name = request.match_info["group"]
    form = await request.post()
    addrs = await admin.delete_subscription_group(name, remove_offset=form.get("remove_offset") == "on")
    raise back_to(request, "/consumers", done=f"group {name} deleted on {', '.join(addrs)}")


@routes.get("/consumers/{group}/clients/{client_id}")
async def running_info(request: web.Request) -> web.StreamResponse:
    """One consumer's ConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO, passed on by the broker to the client)."""
    admin = admin_of(request)
    name, client_id = request.match_info["group"], request.match_info["client_id"]
    jstack = request.query.get("jstack") == "1"
    info = await admin.consumer_running_info(name, client_id, jstack=jstack)
    queues = sorted(mq_table(info.get("mqTable")), key=lambda e: e[0])
    return render(request, "running_info.html", group=name, client_id=client_id, info=info, queues=queues,
                  properties=sorted((str(k), str(v)) for k, v in (info.get("properties") or {}).items()),
                  status_table=sorted((info.get("statusTable") or {}).items()),
                  subscriptions=info.get("subscriptionSet") or [], jstack=info.get("jstack") or "")  # fmt: skip


@routes.get("/consumers/{group}")
async def group(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    name = request.match_info["group"]
    (progress, progress_error), (conn, conn_error), (configs, _), (pops, pop_error) = await asyncio.gather(
        attempt(admin.consume_progress(name)), attempt(admin.consumer_connections(name)),
        attempt(admin.subscription_groups()), attempt(admin.pop_inflight(name)),
    )  # fmt: skip
    # the group's SubscriptionGroupConfig on each master (none: the broker creates it at the first heartbeat)
    group_configs = [(i.broker_addr, sorted(i.config.items())) for i in configs or [] if i.group_name == name]
    topics = sorted({p.message_queue.topic for p in progress or []} | set(conn.subscriptions if conn else {}))
    return render(
        request, "consumer.html", group=name, progress=progress or [], progress_error=progress_error,
        conn=conn, conn_error=conn_error, topics=topics, group_configs=group_configs, pops=pops or [],
        pop_error=pop_error,
        now=time_field(int(time.time() * 1000)),
    )  # fmt: skip


@routes.post("/consumers/{group}/reset")
async def reset(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    name = request.match_info["group"]
    form = await request.post()
    topic = required(form, "topic")
    text = required(form, "time")
    if text == "-1":  # skip the backlog: every queue's max offset (mqadmin skipAccumulatedMessage)
        moved = await admin.skip_accumulation(name, topic)
    else:
        moved = await admin.reset_offset_by_timestamp(name, topic, parse_time_ms(text, "time"))
    done = f"reset {name} on {topic}: " + ", ".join(
        f"{mq.broker_name}/{mq.queue_id}→{off}" for mq, off in sorted(moved.items())
    )
    raise back_to(request, f"/consumers/{name}", done=done)
