"""Templates: Jinja2 from the package, autoescaped (every value shown comes from the cluster or the user)."""

from __future__ import annotations

import time
from typing import Any

import jinja2
from aiohttp import web

from rocketq.console import flash
from rocketq.console.keys import ADMIN_KEY, LOGIN_KEY, NAV_KEY
from rocketq.console.session import user_of

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("rocketq.console", "templates"),
    autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
    undefined=jinja2.StrictUndefined,  # a misspelt name in a template is an error in the test, not an empty cell
    enable_async=False,
)


def _datetime(ms: int | None) -> str:
    if not ms or ms <= 0:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


_ENV.filters["datetime"] = _datetime


def render(request: web.Request, template: str, *, status: int = 200, **context: Any) -> web.Response:
    """The page ``template`` inside base.html's layout; ``nav``, ``path`` and ``user`` are always there."""
    body = _ENV.get_template(template).render(
        nav=request.app[NAV_KEY], path=request.path, user=user_of(request), login=request.app[LOGIN_KEY],
        namesrv=request.app[ADMIN_KEY].config.namesrv_addr, flash=flash.take(request), **context,
    )  # fmt: skip
    return web.Response(text=body, status=status, content_type="text/html")


def render_error(request: web.Request, message: str, *, status: int = 400) -> web.Response:
    """One error page for every refusal (a broker's error, a bad form field): the message, never a traceback."""
    return render(request, "error.html", status=status, message=message)
