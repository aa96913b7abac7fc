"""The console's small pure parts: the login's redirect guard, the reset's time field, the SVG chart scaling,
the topic kinds, the flash store's bound."""

from __future__ import annotations

import datetime

import pytest
from aiohttp.test_utils import make_mocked_request

from rocketq.client import AdminClient
from rocketq.console import flash
from rocketq.console.app import make_app
from rocketq.console.charts import line_chart
from rocketq.console.pages.login import _next
from rocketq.console.pages.topics import parse_time, topic_kind


@pytest.mark.parametrize(
    ("raw", "target"),
    [("/topics?x=1", "/topics?x=1"), ("//evil.example/x", "/"), ("https://evil.example", "/"), ("", "/"),
     (None, "/"), ("/login?next=/x", "/")],
)  # fmt: skip
def test_after_login_only_a_path_of_this_console(raw: str | None, target: str) -> None:
    assert _next(raw) == target


def test_reset_time_accepts_local_time_millis_and_latest() -> None:
    local = datetime.datetime(2026, 1, 2, 3, 4, 5)
    assert parse_time("2026-01-02 03:04:05") == int(local.timestamp() * 1000)
    assert parse_time(" 1700000000000 ") == 1700000000000
    assert parse_time("-1") == -1
    with pytest.raises(ValueError, match="not a time"):
        parse_time("yesterday")
    with pytest.raises(ValueError):
        parse_time("-5")


def test_chart_scales_values_into_the_box_with_zero_at_the_foot() -> None:
    chart = line_chart({"b": [(100.0, 0.0), (110.0, 5.0)], "a": [(100.0, 10.0)], "empty": []}, width=100, height=50)
    assert chart.top == 10.0
    assert [line.label for line in chart.lines] == ["a", "b"]
    assert chart.lines[1].points == "0.0,50.0 100.0,25.0"
    assert chart.lines[0].points == "0.0,0.0"
    quiet = line_chart({"x": [(1.0, 0.0), (2.0, 0.0)]})
    assert quiet.top == 1.0 and quiet.lines[0].points.endswith(f",{quiet.height:.1f}")
    assert line_chart({}).lines == []


def test_topic_kinds() -> None:
    names = {"DefaultCluster", "broker-a"}
    assert [topic_kind(t, names) for t in ("Orders", "%RETRY%g", "%DLQ%g", "TBW102", "RMQ_SYS_TRACE_TOPIC",
                                           "broker-a", "DefaultCluster")] == [
        "normal", "retry", "dlq", "system", "system", "system", "system"]  # fmt: skip


def test_flash_messages_are_shown_once_and_bounded() -> None:
    app = make_app(AdminClient(namesrv_addr="127.0.0.1:1"))
    first = None
    for i in range(300):
        redirect = flash.redirect(make_mocked_request("POST", "/x", app=app), "/topics?a=1", f"m{i}")
        first = first or redirect.location
    assert redirect.location.startswith("/topics?a=1&flash=")
    token = redirect.location.split("flash=")[1]
    assert flash.take(make_mocked_request("GET", f"/topics?flash={token}", app=app)) == ("m299", False)
    assert flash.take(make_mocked_request("GET", f"/topics?flash={token}", app=app)) is None  # once
    assert first is not None
    old = first.split("flash=")[1]
    assert flash.take(make_mocked_request("GET", f"/topics?flash={old}", app=app)) is None  # pushed out
