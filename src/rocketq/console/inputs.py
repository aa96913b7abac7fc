"""Form and query fields of the console's pages: read, checked, turned into the values the admin client takes.

A bad field is a ValueError with a message for the user (the error boundary shows it as an error page)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Mapping
from datetime import datetime
from typing import TypeVar
from urllib.parse import urlencode

from aiohttp import web

from rocketq.client.errors import NoRouteError
from rocketq.console import flash
from rocketq.errors import BrokerError, RemotingError

T = TypeVar("T")

#: local time as the forms show it (or as a datetime-local field would send it)
_TIME_FORMATS = ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M")


def parse_time_ms(text: str, field: str) -> int:
    """Local time (YYYY-MM-DD HH:MM[:SS], a T between is fine too), or epoch milliseconds."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    for fmt in _TIME_FORMATS:
        try:
            return int(datetime.strptime(text, fmt).timestamp() * 1000)
        except ValueError:
            continue
    raise ValueError(f"{field}: {text!r} is not a time (YYYY-MM-DD HH:MM:SS or epoch milliseconds)")


def time_field(ms: int) -> str:
    """``ms`` as the time fields show it (local time, to the second)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


def required(values: Mapping[str, object], name: str, label: str | None = None) -> str:
    """A field that must be there and not blank."""
    value = str(values.get(name, "")).strip()
    if not value:
        raise ValueError(f"{label or name} is required")
    return value


def int_field(values: Mapping[str, object], name: str, default: int, *, low: int = 0,
              high: int = 2**31 - 1) -> int:  # fmt: skip
    text = str(values.get(name, "")).strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name}: {text!r} is not a number") from None
    if not low <= value <= high:
        raise ValueError(f"{name}: {value} is out of range ({low}..{high})")
    return value


def back_to(request: web.Request, path: str, *, done: str, **query: str) -> web.HTTPSeeOther:
    """The 303 that ends a form's POST: back to ``path`` (with ``query``), ``done`` shown there once (flash)."""
    q = {k: v for k, v in query.items() if v}
    return flash.redirect(request, f"{path}?{urlencode(q)}" if q else path, done)


async def attempt(call: Awaitable[T]) -> tuple[T | None, str | None]:
    """A section of a page that may be refused on its own (a group offline, no offsets yet): its value, or the
    reason it is empty, so one refusal does not blank the whole page."""
    try:
        return await call, None
    except (BrokerError, NoRouteError, RemotingError) as exc:
        return None, str(exc) or type(exc).__name__
