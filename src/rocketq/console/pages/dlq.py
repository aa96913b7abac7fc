"""DLQ: the dead letters of a consumer group (``%DLQ%group``) stored in a time range; each can be sent back to
its group, and the list can be downloaded as CSV (RocketMQ Dashboard's DLQ page exports a spreadsheet)."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Mapping

from aiohttp import web

from rocketq.client import AdminClient, MessageExt
from rocketq.client.errors import NoRouteError
from rocketq.console.browse import messages_in_range
from rocketq.console.inputs import back_to, int_field, parse_time_ms, required, time_field
from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of
from rocketq.protocol.message import PROP_RETRY_TOPIC
from rocketq.protocol.topics import dlq_topic

PAGE = Page(title="DLQ", path="/dlq", order=90)
routes = web.RouteTableDef()

MAX_SHOWN = 2000
DAY_MS = 24 * 3600 * 1000
CSV_HEADERS = ["msgId", "offsetMsgId", "originalTopic", "tags", "keys", "bornTime", "storeTime", "reconsumeTimes",
               "bodyLength", "body"]  # fmt: skip


async def _dead_letters(admin: AdminClient, group: str, begin: int, end: int, limit: int) -> list[MessageExt] | None:
    """The group's dead letters stored in [begin, end), oldest first; None when the group has no DLQ yet."""
    try:
        return await messages_in_range(admin, dlq_topic(group), begin, end, limit)
    except NoRouteError:
        return None


def _range(query: Mapping[str, str]) -> tuple[int, int, int]:
    now = int(time.time() * 1000)
    begin = parse_time_ms(query["begin"], "begin") if query.get("begin") else now - DAY_MS
    end = parse_time_ms(query["end"], "end") if query.get("end") else now + 60_000  # what arrives while reading
    return begin, end, int_field(query, "max", 200, low=1, high=MAX_SHOWN)


@routes.get("/dlq")
async def dlq(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    group = request.query.get("group", "").strip()
    begin, end, limit = _range(request.query)
    found = await _dead_letters(admin, group, begin, end, limit) if group else None
    return render(request, "dlq.html", group=group, groups=await admin.consumer_groups(), begin=time_field(begin),
                  end=time_field(end), limit=limit, found=found, searched=bool(group),
                  retry_prop=PROP_RETRY_TOPIC)  # fmt: skip


@routes.post("/dlq/resend")
async def resend(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    form = await request.post()
    group, msg_id = required(form, "group"), required(form, "msg_id", "message id")
    result = await admin.resend_dead_letter(group, msg_id)
    done = f"{msg_id} sent back to {group} ({result.message_queue.topic}, {result.status.name})"
    raise back_to(request, "/dlq", group=group, begin=str(form.get("begin", "")), end=str(form.get("end", "")),
                  done=done)  # fmt: skip


@routes.get("/dlq/export")
async def export(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    group = required(request.query, "group")
    begin, end, limit = _range(request.query)
    found = await _dead_letters(admin, group, begin, end, limit) or []
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_HEADERS)
    for m in found:
        writer.writerow([m.msg_id, m.offset_msg_id, m.properties.get(PROP_RETRY_TOPIC, ""), m.tags or "",
                         " ".join(m.keys), m.born_timestamp, m.store_timestamp, m.reconsume_times, len(m.body),
                         m.body.decode("utf-8", "replace")])  # fmt: skip
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in group)
    return web.Response(
        text=out.getvalue(), content_type="text/csv", charset="utf-8",
        headers={"Content-Disposition": f'attachment; filename="dlq-{safe}.csv"'},
    )  # fmt: skip
