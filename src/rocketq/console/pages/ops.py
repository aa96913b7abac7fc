"""OPS: the name servers the console talks to, how it dials them (TLS, VIP channel) and whether each answers,
as RocketMQ Dashboard's first page shows them."""

from __future__ import annotations

from aiohttp import web

from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of
from rocketq.errors import RocketQError

PAGE = Page(title="OPS", path="/ops", order=10)
routes = web.RouteTableDef()


@routes.get("/")
async def index(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound("/ops")


@routes.get("/ops")
async def ops(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    addrs = [a for a in (admin.config.namesrv_addr or "").split(";") if a]
    try:  # the chosen name server's view (the admin client fails over to the next one as Java's does)
        info = await admin.cluster_info()
        clusters = sorted((info.get("clusterAddrTable") or {}).items())
        reach = ""
    except RocketQError as exc:
        clusters, reach = [], str(exc)
    tls = admin.config.tls
    return render(request, "ops.html", namesrv_addrs=addrs, tls=tls is not None,
                  tls_verify=tls is not None and tls.verify, clusters=clusters, reach=reach,
                  signed=bool(admin.config.access_key))  # fmt: skip
