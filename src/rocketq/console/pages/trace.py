"""Message trace: a message's Pub, SubBefore/SubAfter and EndTransaction records (Java 4.9's trace format),
looked up by message id in the trace topic as ``rocketq message trace`` does (RocketMQ Dashboard's Message
Trace page)."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from rocketq.client.trace import query_trace
from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of
from rocketq.protocol.topics import TRACE_TOPIC

PAGE = Page(title="Message trace", path="/trace", order=80)
routes = web.RouteTableDef()


@dataclass(frozen=True)
class Consumption:
    """One delivery to a group: its SubBefore joined with the SubAfter of the same request id (if any yet)."""

    group: str
    request_id: str
    begin: int
    retry_times: str
    cost_ms: str
    success: str
    context_code: str


def _consumptions(records: list[dict[str, str]]) -> list[Consumption]:
    after = {r.get("requestId", ""): r for r in records if r["type"] == "SubAfter"}
    out = []
    for r in records:
        if r["type"] != "SubBefore":
            continue
        a = after.get(r.get("requestId", ""), {})
        out.append(Consumption(r.get("groupName", ""), r.get("requestId", ""), _int(r.get("timestamp")),
                               r.get("retryTimes", ""), a.get("costTime", "-"), a.get("success", "-"),
                               a.get("contextCode", "-")))  # fmt: skip
    return out


def _int(text: str | None) -> int:
    return int(text) if text and text.isdigit() else 0


@routes.get("/trace")
async def trace(request: web.Request) -> web.StreamResponse:
    msg_id = request.query.get("msg_id", "").strip()
    trace_topic = request.query.get("trace_topic", "").strip() or TRACE_TOPIC
    records: list[dict[str, str]] | None = None
    if msg_id:
        records = await query_trace(admin_of(request), msg_id, trace_topic)
    pubs = [r for r in records or [] if r["type"] == "Pub"]
    ends = [r for r in records or [] if r["type"] == "EndTransaction"]
    return render(request, "trace.html", msg_id=msg_id, trace_topic=trace_topic, default_topic=TRACE_TOPIC,
                  records=records, pubs=pubs, ends=ends, consumptions=_consumptions(records or []),
                  as_int=_int)  # fmt: skip
