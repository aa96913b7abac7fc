"""The application's typed keys (aiohttp's AppKey), so pages read shared objects with their types."""

from __future__ import annotations

from aiohttp import web

from rocketq.client import AdminClient
from rocketq.console.page import Page

ADMIN_KEY = web.AppKey("admin", AdminClient)
NAV_KEY = web.AppKey("nav", list[Page])
