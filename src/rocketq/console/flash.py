"""A form's result on the page it redirects to (POST → 303 → GET): the message waits here under a random token
that the redirect's query names, and is shown once (the URL never carries the text itself)."""

from __future__ import annotations

import secrets
from collections import OrderedDict

from aiohttp import web

#: messages kept at most (a redirect never followed must not grow the table)
_MAX = 256
_FLASH_KEY = web.AppKey("flash", OrderedDict[str, tuple[str, bool]])


def install(app: web.Application) -> None:
    """The app's message store (make_app calls it: an app's state is set before it starts)."""
    app[_FLASH_KEY] = OrderedDict()


def _store(app: web.Application) -> OrderedDict[str, tuple[str, bool]]:
    return app[_FLASH_KEY]


def redirect(request: web.Request, location: str, message: str, *, error: bool = False) -> web.HTTPSeeOther:
    """A 303 to ``location`` that shows ``message`` there (raise it)."""
    store = _store(request.app)
    while len(store) >= _MAX:
        store.popitem(last=False)
    token = secrets.token_urlsafe(12)
    store[token] = (message, error)
    return web.HTTPSeeOther(f"{location}{'&' if '?' in location else '?'}flash={token}")


def take(request: web.Request) -> tuple[str, bool] | None:
    """The message the request's ``flash`` token names (once), and whether it reports a failure."""
    token = request.query.get("flash")
    if not token:
        return None
    return _store(request.app).pop(token, None)
