"""Producers: every producer group's clients (GET_ALL_PRODUCER_INFO), and the connections of one group at the
brokers of one topic (RocketMQ Dashboard's Producer page: topic + group → connections)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of

PAGE = Page(title="Producers", path="/producers", order=60)
routes = web.RouteTableDef()


@dataclass(frozen=True)
class ProducerRow:
    group: str
    client_id: str
    remote_ip: str
    language: str
    version: int
    last_update_timestamp: int


def producer_rows(by_broker: dict[str, dict[str, list[dict[str, Any]]]]) -> list[ProducerRow]:
    """GET_ALL_PRODUCER_INFO of every master (broker → group → clients) as one row per group and client (a
    client connected to two brokers is one row)."""
    rows: dict[tuple[str, str], ProducerRow] = {}
    for groups in by_broker.values():
        for group, clients in groups.items():
            for c in clients:
                row = ProducerRow(group, str(c.get("clientId", "")), str(c.get("remoteIP", "")).lstrip("/"),
                                  str(c.get("language", "")), int(c.get("version") or 0),
                                  int(c.get("lastUpdateTimestamp") or 0))  # fmt: skip
                rows.setdefault((row.group, row.client_id), row)
    return sorted(rows.values(), key=lambda r: (r.group, r.client_id))


@routes.get("/producers")
async def producers(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    topic = request.query.get("topic", "").strip()
    group = request.query.get("group", "").strip()
    clients = producer_rows(await admin.all_producers())
    connections = None
    if topic and group:
        connections = await admin.producer_connections(group, topic)
    groups = sorted({c.group for c in clients})
    return render(request, "producers.html", clients=clients, groups=groups, topic=topic, group=group,
                  connections=connections)  # fmt: skip
