"""Topics: the list (by kind), create/update, delete; per topic its route, queue status, consuming groups, a test
message sent from the page and a consumer group's offsets reset by time (RocketMQ Dashboard's Topic page)."""

from __future__ import annotations

import dataclasses
import time
from urllib.parse import quote

from aiohttp import web

from rocketq.client import Message, Producer
from rocketq.console import flash
from rocketq.console.inputs import int_field, parse_time_ms
from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE
from rocketq.protocol.topics import DLQ_PREFIX, RETRY_PREFIX, is_system_topic, topic_name_error

PAGE = Page(title="Topics", path="/topics", order=40)
routes = web.RouteTableDef()

KINDS = ("normal", "retry", "dlq", "system")
#: the producer group of sends from the page (Java's MixAll.SELF_TEST_PRODUCER_GROUP, as Dashboard uses)
SELF_TEST_PRODUCER_GROUP = "SELF_TEST_P_GROUP"
PERMS = {"6": "read + write", "4": "read only", "2": "write only"}


def topic_kind(topic: str, cluster_names: set[str]) -> str:
    """Dashboard's filter: retry and DLQ topics of groups, system topics (with the cluster's and brokers' own
    topics, which the name server lists too), the rest normal."""
    if topic.startswith(RETRY_PREFIX):
        return "retry"
    if topic.startswith(DLQ_PREFIX):
        return "dlq"
    if is_system_topic(topic) or topic in cluster_names:
        return "system"
    return "normal"


def detail_url(topic: str) -> str:
    return f"/topics/detail?topic={quote(topic, safe='')}"


def parse_time(text: str) -> int:
    """Epoch milliseconds from a time field (``inputs.parse_time_ms``); ``-1``: the latest offset (Java's
    resetOffset reads -1 as "the queue's max offset")."""
    return -1 if text.strip() == "-1" else parse_time_ms(text, "timestamp")


async def _cluster_names(request: web.Request) -> tuple[list[str], set[str]]:
    """The clusters, and every cluster and broker name (the name server lists them as topics)."""
    info = await admin_of(request).cluster_info()
    clusters = sorted((info.get("clusterAddrTable") or {}).keys())
    names = set(clusters) | set((info.get("brokerAddrTable") or {}).keys())
    return clusters, names


@routes.get("/topics")
async def topics(request: web.Request) -> web.StreamResponse:
    wanted = [k for k in KINDS if request.query.get(k)] or ["normal"]
    needle = request.query.get("q", "").strip()
    clusters, names = await _cluster_names(request)
    rows = []
    for topic in await admin_of(request).topic_list():
        kind = topic_kind(topic, names)
        if kind in wanted and needle.lower() in topic.lower():
            rows.append((topic, kind))
    return render(request, "topics.html", rows=rows, kinds=KINDS, wanted=wanted, q=needle, clusters=clusters,
                  perms=PERMS, url=detail_url)  # fmt: skip


@routes.get("/topics/detail")
async def detail(request: web.Request) -> web.StreamResponse:
    topic = request.query.get("topic", "").strip()
    if not topic:
        raise ValueError("no topic (?topic=NAME)")
    admin = admin_of(request)
    route = await admin.topic_route(topic)
    queues = sorted(await admin.topic_status(topic),
                    key=lambda s: (s.message_queue.broker_name, s.message_queue.queue_id))  # fmt: skip
    groups = await admin.groups_consuming(topic)
    clusters, _ = await _cluster_names(request)
    queue_data = route.queue_datas[0] if route.queue_datas else None
    return render(request, "topic.html", topic=topic, route=route, queues=queues, groups=groups, clusters=clusters,
                  queue_data=queue_data, perms=PERMS, now=time.strftime("%Y-%m-%d %H:%M:%S"),
                  total=sum(s.max_offset - s.min_offset for s in queues))  # fmt: skip


@routes.post("/topics/create")
async def create(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    topic = str(form.get("topic", "")).strip()
    if (why := topic_name_error(topic)) is not None:
        raise ValueError(why)
    cluster = str(form.get("cluster", "")).strip() or None
    perm = int_field(form, "perm", PERM_READ | PERM_WRITE, low=0, high=7)
    addrs = await admin_of(request).create_topic(
        topic, cluster=cluster, write_queue_nums=int_field(form, "writeQueueNums", 8, low=1, high=1024),
        read_queue_nums=int_field(form, "readQueueNums", 8, low=1, high=1024),
        perm=perm, order=form.get("order") == "on",
    )  # fmt: skip
    raise flash.redirect(request, detail_url(topic), f"topic {topic} created/updated on {', '.join(addrs)}")


@routes.post("/topics/delete")
async def delete(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    topic = str(form.get("topic", "")).strip()
    if not topic:
        raise ValueError("no topic to delete")
    if form.get("confirm") != "on":
        raise ValueError(f"tick the box to confirm deleting {topic}")
    admin = admin_of(request)
    route = await admin.topic_route(topic)
    clusters = sorted({bd.cluster for bd in route.broker_datas})
    for cluster in clusters:
        await admin.delete_topic(topic, cluster=cluster)
    raise flash.redirect(request, "/topics", f"topic {topic} deleted from {', '.join(clusters)}")


@routes.post("/topics/send")
async def send(request: web.Request) -> web.StreamResponse:
    """A test message from the page, sent as any producer would (the session's account signs it)."""
    form = await request.post()
    topic = str(form.get("topic", "")).strip()
    body = str(form.get("body", ""))
    if not topic or not body:
        raise ValueError("a test message needs a topic and a body")
    msg = Message(topic, body.encode(), tags=str(form.get("tags", "")).strip() or None,
                  keys=str(form.get("keys", "")).strip() or None)  # fmt: skip
    admin = admin_of(request)
    config = dataclasses.replace(admin.config, instance_name="DEFAULT")  # its own client instance
    producer = Producer(SELF_TEST_PRODUCER_GROUP, config=config)
    await producer.start()
    try:
        result = await producer.send(msg)
    finally:
        await producer.shutdown()
    mq = result.message_queue
    raise flash.redirect(request, detail_url(topic),
                         f"sent {result.status.name}: msgId={result.msg_id} offsetMsgId={result.offset_msg_id} "
                         f"queue={mq.broker_name}:{mq.queue_id} offset={result.queue_offset}")  # fmt: skip


@routes.post("/topics/reset-offset")
async def reset_offset(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    topic, group = str(form.get("topic", "")).strip(), str(form.get("group", "")).strip()
    if not topic or not group:
        raise ValueError("a reset needs a topic and a consumer group")
    ts = parse_time(str(form.get("timestamp", "")))
    table = await admin_of(request).reset_offset_by_timestamp(group, topic, ts)
    queues = sorted(table.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id))
    moved = ", ".join(f"{mq.broker_name}:{mq.queue_id}→{off}" for mq, off in queues)
    raise flash.redirect(request, detail_url(topic), f"offsets of {group} on {topic} reset: {moved or 'no queue'}")
