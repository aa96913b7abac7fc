"""The application's typed keys (aiohttp's AppKey), so pages read shared objects with their types."""

from __future__ import annotations

from aiohttp import web

from rocketq.client import AdminClient
from rocketq.console.page import Page
from rocketq.console.sessions import Sessions

#: the console's own client: every page's when login is off (pages call ``session.admin_of(request)``)
ADMIN_KEY = web.AppKey("admin", AdminClient)
NAV_KEY = web.AppKey("nav", list[Page])
#: whether every page needs an ACL admin login (docs/console.md)
LOGIN_KEY = web.AppKey("login", bool)
SESSIONS_KEY = web.AppKey("sessions", Sessions)
#: the console listens on loopback only: requests must name a loopback host (guard.py, DNS rebinding)
LOOPBACK_ONLY_KEY = web.AppKey("loopback_only", bool)
