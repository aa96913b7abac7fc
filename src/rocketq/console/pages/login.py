"""Login and logout (only when the console runs with login on: ``rocketq console --acl`` or an ACL broker under
``standalone``). An account is let in when every master broker accepts it as an ACL admin."""

from __future__ import annotations

import logging

from aiohttp import web

from rocketq.console.keys import ADMIN_KEY, LOGIN_KEY, SESSIONS_KEY
from rocketq.console.render import render
from rocketq.console.session import account_client
from rocketq.console.sessions import COOKIE, IDLE_SECONDS
from rocketq.errors import RocketQError

PAGE = None
routes = web.RouteTableDef()
log = logging.getLogger(__name__)


def _next(raw: str | None) -> str:
    """Where to go after logging in: a path on this console only (never ``//host`` or a URL)."""
    if raw and raw.startswith("/") and not raw.startswith("//") and not raw.startswith("/login"):
        return raw
    return "/"


@routes.get("/login")
async def login_form(request: web.Request) -> web.StreamResponse:
    if not request.app[LOGIN_KEY]:
        raise web.HTTPSeeOther("/")
    return render(request, "login.html", next=_next(request.query.get("next")), failure="")


@routes.post("/login")
async def login(request: web.Request) -> web.StreamResponse:
    if not request.app[LOGIN_KEY]:
        raise web.HTTPSeeOther("/")
    form = await request.post()
    access_key, secret_key = str(form.get("accessKey", "")).strip(), str(form.get("secretKey", ""))
    target = _next(str(form.get("next", "")))
    if not access_key or not secret_key:
        return render(request, "login.html", status=401, next=target, failure="enter an access key and a secret key")
    admin = account_client(request.app[ADMIN_KEY], access_key, secret_key)
    try:
        await admin.start()
        await admin.check_admin()
    except (RocketQError, ValueError) as exc:
        await admin.close()
        log.info("console.login_refused user=%s reason=%s", access_key, exc)
        return render(request, "login.html", status=401, next=target,
                      failure=f"login refused for {access_key}: {exc}")  # fmt: skip
    sid = await request.app[SESSIONS_KEY].open(access_key, admin)
    resp = web.HTTPSeeOther(target)
    resp.set_cookie(COOKIE, sid, httponly=True, samesite="Strict", max_age=IDLE_SECONDS, path="/")
    raise resp


@routes.get("/logout")
async def logout(request: web.Request) -> web.StreamResponse:
    sid = request.cookies.get(COOKIE)
    if sid:
        await request.app[SESSIONS_KEY].close(sid)
    resp = web.HTTPSeeOther("/login" if request.app[LOGIN_KEY] else "/")
    resp.del_cookie(COOKIE, path="/")
    raise resp
