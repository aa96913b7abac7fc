"""OPS: the name servers the console talks to, as RocketMQ Dashboard's first page shows them."""

from __future__ import annotations

from aiohttp import web

from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of

PAGE = Page(title="OPS", path="/ops", order=10)
routes = web.RouteTableDef()


@routes.get("/")
async def index(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound("/ops")


@routes.get("/ops")
async def ops(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    addrs = [a for a in (admin.config.namesrv_addr or "").split(";") if a]
    return render(request, "ops.html", namesrv_addrs=addrs, tls=admin.config.tls is not None)
