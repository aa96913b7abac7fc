"""Dashboard: message TPS per broker (runtime info's putTps / getTransferedTps) and per topic (VIEW_BROKER_STATS_DATA's
TOPIC_PUT_NUMS), drawn as inline SVG line charts from samples taken while the page is open.

The page samples when it is viewed (at most once per SAMPLE_SECONDS) and reloads itself every SAMPLE_SECONDS, so
the charts grow while someone watches; each sample is made with the viewer's own client (its ACL account when
login is on). The history lives in the console's memory, bounded (HISTORY samples), and starts empty.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field

from aiohttp import web

from rocketq.client import AdminClient
from rocketq.console.charts import line_chart
from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of
from rocketq.errors import BrokerError, RocketQError
from rocketq.protocol.route import MASTER_ID
from rocketq.protocol.topics import DLQ_PREFIX, RETRY_PREFIX, is_system_topic

PAGE = Page(title="Dashboard", path="/dashboard", order=20)
routes = web.RouteTableDef()

SAMPLE_SECONDS = 10.0
HISTORY = 360  # an hour at one sample per 10 s
#: topics asked about per sample at most (one VIEW_BROKER_STATS_DATA per topic and broker)
MAX_TOPICS = 100
#: topics drawn (the busiest by their last minute's TPS); the table lists every sampled one
CHART_TOPICS = 8


@dataclass
class TopicStats:
    topic: str
    broker: str
    minute_tps: float
    today: int  #: statsDay's sum: messages put today (the item's day window)


@dataclass
class Sample:
    at: float
    broker_put: dict[str, float] = field(default_factory=dict)  #: broker name → putTps (its 10 s window)
    broker_get: dict[str, float] = field(default_factory=dict)
    topics: list[TopicStats] = field(default_factory=list)


class History:
    def __init__(self) -> None:
        self.samples: deque[Sample] = deque(maxlen=HISTORY)
        self.lock = asyncio.Lock()


_HISTORY_KEY = web.AppKey("dashboard_history", History)


def setup(app: web.Application) -> None:
    app[_HISTORY_KEY] = History()


def _first(text: str) -> float:
    try:
        return float(text.split()[0]) if text.strip() else 0.0
    except ValueError:
        return 0.0


async def take_sample(admin: AdminClient) -> Sample:
    sample = Sample(time.time())
    masters = [b for b in await admin.brokers(runtime=True) if b.broker_id == MASTER_ID]
    for b in masters:
        sample.broker_put[b.broker_name] = _first(b.runtime.get("putTps", ""))
        sample.broker_get[b.broker_name] = _first(b.runtime.get("getTransferedTps", ""))
    names = {b.broker_name for b in masters} | {b.cluster for b in masters}
    topics = [t for t in await admin.topic_list()
              if not (is_system_topic(t) or t.startswith((RETRY_PREFIX, DLQ_PREFIX)) or t in names)]  # fmt: skip
    for topic in topics[:MAX_TOPICS]:
        for b in masters:
            try:
                stats = await admin.view_broker_stats(b.addr, "TOPIC_PUT_NUMS", topic)
            except BrokerError:  # nothing put to the topic on this broker since it started
                continue
            minute, day = stats.get("statsMinute") or {}, stats.get("statsDay") or {}
            sample.topics.append(TopicStats(topic, b.broker_name, float(minute.get("tps") or 0),
                                            int(day.get("sum") or 0)))  # fmt: skip
    return sample


@routes.get("/dashboard")
async def dashboard(request: web.Request) -> web.StreamResponse:
    history = request.app[_HISTORY_KEY]
    error = ""
    async with history.lock:  # two viewers at once take one sample
        if not history.samples or time.time() - history.samples[-1].at >= SAMPLE_SECONDS:
            try:
                history.samples.append(await take_sample(admin_of(request)))
            except RocketQError as exc:
                error = str(exc)
    samples = list(history.samples)
    put = {name: [(s.at, s.broker_put[name]) for s in samples if name in s.broker_put]
           for name in {n for s in samples for n in s.broker_put}}  # fmt: skip
    get = {name: [(s.at, s.broker_get[name]) for s in samples if name in s.broker_get]
           for name in {n for s in samples for n in s.broker_get}}  # fmt: skip
    last = samples[-1] if samples else Sample(0.0)
    by_topic: dict[str, list[tuple[float, float]]] = {}
    for s in samples:
        per: dict[str, float] = {}
        for t in s.topics:
            per[t.topic] = per.get(t.topic, 0.0) + t.minute_tps
        for topic, tps in per.items():
            by_topic.setdefault(topic, []).append((s.at, tps))
    busiest = sorted(by_topic, key=lambda t: (-by_topic[t][-1][1], t))[:CHART_TOPICS]
    try:
        refresh = max(0, int(request.query.get("refresh", str(int(SAMPLE_SECONDS)))))
    except ValueError:
        refresh = int(SAMPLE_SECONDS)
    return render(request, "dashboard.html", error=error, samples=len(samples), last=last, refresh=refresh,
                  put_chart=line_chart(put), get_chart=line_chart(get),
                  topic_chart=line_chart({t: by_topic[t] for t in busiest}),
                  topics=sorted(last.topics, key=lambda t: (t.topic, t.broker)))  # fmt: skip
