"""What a page module declares: its place in the navigation and its routes."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web


@dataclass(frozen=True)
class Page:
    """A page in the top navigation. ``order`` sorts the navigation (OPS first, as RocketMQ Dashboard has it)."""

    title: str
    path: str
    order: int


class PageModule:
    """The shape discovery expects of ``rocketq.console.pages.<name>`` (a protocol in words, not enforced by type):
    ``PAGE: Page | None`` (None: routes only, no navigation entry) and ``routes: web.RouteTableDef``; optionally
    ``setup(app)``, called by make_app, for state the page keeps in the app (set before the app starts)."""

    PAGE: Page | None
    routes: web.RouteTableDef
