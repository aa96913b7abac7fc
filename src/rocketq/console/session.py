"""Login: with ACL on, each browser session holds its own AdminClient signed with the account that logged in.

The session id is a random cookie (HttpOnly, SameSite=Strict: another site's form cannot post with it); the
secret key stays in the server's memory, in that session's client config, and never goes back to the browser.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from contextvars import ContextVar

from aiohttp import web

from rocketq.client import AdminClient
from rocketq.console.keys import ADMIN_KEY, LOGIN_KEY, SESSIONS_KEY
from rocketq.console.sessions import COOKIE, Session

#: paths served without a session (the login form itself and the stylesheet)
_OPEN = ("/login", "/static/")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


#: the logged-in session of the request being handled (aiohttp runs each request in its own task, so a context
#: variable set by the middleware is that request's; request storage would need aiohttp 3.14's RequestKey)
_SESSION: ContextVar[Session | None] = ContextVar("console_session", default=None)


def admin_of(request: web.Request) -> AdminClient:
    """The client a page must use: the logged-in account's when login is on, else the console's own."""
    session = _SESSION.get()
    return session.admin if session is not None else request.app[ADMIN_KEY]


def user_of(request: web.Request) -> str | None:
    """The logged-in account's access key (None: login is off)."""
    session = _SESSION.get()
    return session.user if session is not None else None


def account_client(base: AdminClient, access_key: str, secret_key: str) -> AdminClient:
    """A client like ``base`` (name servers, TLS, timeout) that signs with this account."""
    config = dataclasses.replace(base.config, access_key=access_key, secret_key=secret_key, instance_name="DEFAULT")
    return AdminClient(config=config, timeout=base.timeout)


@web.middleware
async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Login on: a page without a live session goes to /login (303, so a form's POST becomes a GET there)."""
    if not request.app[LOGIN_KEY] or request.path.startswith(_OPEN):
        return await handler(request)
    session = await request.app[SESSIONS_KEY].find(request.cookies.get(COOKIE))
    if session is None:
        raise web.HTTPSeeOther(f"/login?next={request.path}")
    token = _SESSION.set(session)
    try:
        return await handler(request)
    finally:
        _SESSION.reset(token)
