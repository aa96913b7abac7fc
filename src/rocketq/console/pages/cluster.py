"""Cluster: every broker the name servers know, its headline runtime numbers, and per broker the whole runtime
table and its configuration (RocketMQ Dashboard's Cluster page: status and config of each broker)."""

from __future__ import annotations

from aiohttp import web

from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of

PAGE = Page(title="Cluster", path="/cluster", order=30)
routes = web.RouteTableDef()

#: runtime keys shown in the overview (Java's clusterList columns, in its order)
OVERVIEW = ("brokerVersionDesc", "putTps", "getTransferedTps", "msgPutTotalTodayNow", "msgGetTotalTodayNow",
            "commitLogDiskRatio")  # fmt: skip


def first_number(text: str) -> str:
    """``putTps`` is three windows ("10s 1min 10min"); the overview shows the first."""
    return text.split()[0] if text.strip() else ""


@routes.get("/cluster")
async def cluster(request: web.Request) -> web.StreamResponse:
    brokers = await admin_of(request).brokers(runtime=True)
    rows = []
    for b in brokers:
        rt = b.runtime
        values = [first_number(rt.get(k, "")) if k.endswith("Tps") else rt.get(k, "") for k in OVERVIEW]
        rows.append({"broker": b, "error": rt.get("error", ""), "values": values})
    return render(request, "cluster.html", rows=rows, columns=OVERVIEW)


@routes.get("/cluster/broker")
async def broker(request: web.Request) -> web.StreamResponse:
    addr = request.query.get("addr", "").strip()
    if not addr:
        raise ValueError("no broker address (?addr=HOST:PORT)")
    admin = admin_of(request)
    known = {b.addr: b for b in await admin.brokers()}
    if addr not in known:  # only brokers the name server routes to: the console is no proxy to any address
        raise ValueError(f"{addr} is not a broker registered with the name server")
    runtime = await admin.broker_runtime_info(addr)
    config = await admin.broker_config(addr)
    shown = {k: "******" if _secret(k) and v else v for k, v in config.items()}
    return render(request, "broker.html", broker=known[addr], runtime=sorted(runtime.items()),
                  config=sorted(shown.items()))  # fmt: skip


def _secret(key: str) -> bool:
    """A Java broker answers its ``secretKey`` (rocketq's masks it already): never put one on a page."""
    return any(word in key.lower() for word in ("secret", "password"))
