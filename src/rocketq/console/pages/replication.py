"""Replication: each broker's role, max offset, a slave's lag behind its master and its HA connection (the rows
of ``rocketq ha status``); with a 5.x controller's address, the master epoch and the in-sync set."""

from __future__ import annotations

from aiohttp import web

from rocketq.client.replication import connection_text, replication_rows
from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of

PAGE = Page(title="Replication", path="/replication", order=110)
routes = web.RouteTableDef()


@routes.get("/replication")
async def replication(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    controller = request.query.get("controller", "").strip()
    rows = await replication_rows(admin, await admin.brokers(), controller or None)
    return render(request, "replication.html", rows=rows, controller=controller, connection_text=connection_text)
