"""Producers: every producer group's clients (GET_ALL_PRODUCER_INFO), and the connections of one group at the
brokers of one topic (RocketMQ Dashboard's Producer page: topic + group → connections)."""

from __future__ import annotations

from aiohttp import web

from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of

PAGE = Page(title="Producers", path="/producers", order=60)
routes = web.RouteTableDef()


@routes.get("/producers")
async def producers(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    topic = request.query.get("topic", "").strip()
    group = request.query.get("group", "").strip()
    clients = await admin.all_producers()
    connections = None
    if topic and group:
        connections = await admin.producer_connections(group, topic)
    groups = sorted({c.group for c in clients})
    return render(request, "producers.html", clients=clients, groups=groups, topic=topic, group=group,
                  connections=connections)  # fmt: skip
