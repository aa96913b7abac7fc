"""The console's aiohttp application: page discovery, the error boundary, static files."""

from __future__ import annotations

import importlib
import logging
import pkgutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType

from aiohttp import web

from rocketq.client import AdminClient
from rocketq.console import flash, pages
from rocketq.console.guard import same_origin
from rocketq.console.keys import ADMIN_KEY, LOGIN_KEY, LOOPBACK_ONLY_KEY, NAV_KEY, SESSIONS_KEY
from rocketq.console.page import Page
from rocketq.console.render import render_error
from rocketq.console.session import authenticate
from rocketq.console.sessions import Sessions
from rocketq.errors import RocketQError

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def discover_pages() -> list[tuple[Page | None, web.RouteTableDef]]:
    """Every module of ``rocketq.console.pages``: its ``PAGE`` (or None) and its ``routes``."""
    return [(getattr(m, "PAGE", None), m.routes) for m in _page_modules()]


def _page_modules() -> list[ModuleType]:
    return [importlib.import_module(f"{pages.__name__}.{info.name}")
            for info in sorted(pkgutil.iter_modules(pages.__path__), key=lambda m: m.name)]  # fmt: skip


@web.middleware
async def error_boundary(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A cluster's refusal or a bad field is an error page with its message; nothing escapes as a traceback."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except (RocketQError, ValueError) as exc:
        return render_error(request, str(exc) or type(exc).__name__, status=400)
    except Exception:  # the boundary: log it, answer 500, keep serving
        log.exception("console: %s %s failed", request.method, request.path)
        return render_error(request, "internal error (see the console's log)", status=500)


def make_app(admin: AdminClient, *, login: bool = False, loopback_only: bool = False,
             middlewares: list[Callable[..., Awaitable[web.StreamResponse]]] | None = None,
             ) -> web.Application:  # fmt: skip
    """The console for the cluster ``admin`` talks to (the caller starts and closes ``admin``). ``login``: every
    page needs an ACL admin account, whose own client then serves that browser session (session.py);
    ``loopback_only``: answer requests addressed to a loopback host only (guard.py)."""
    app = web.Application(middlewares=[*(middlewares or []), same_origin, authenticate, error_boundary])
    app[LOOPBACK_ONLY_KEY] = loopback_only
    app[ADMIN_KEY] = admin
    app[LOGIN_KEY] = login
    sessions = app[SESSIONS_KEY] = Sessions()

    async def close_sessions(_: web.Application) -> None:
        await sessions.close_all()

    app.on_cleanup.append(close_sessions)
    flash.install(app)
    nav: list[Page] = []
    for module in _page_modules():
        page = getattr(module, "PAGE", None)
        if page is not None:
            nav.append(page)
        app.router.add_routes(module.routes)
        setup = getattr(module, "setup", None)
        if setup is not None:  # a page's own state, made before the app starts (aiohttp freezes it then)
            setup(app)
    app[NAV_KEY] = sorted(nav, key=lambda p: (p.order, p.title))
    app.router.add_static("/static", Path(__file__).parent / "static")
    return app
