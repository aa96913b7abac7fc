"""What keeps another web site from using the console through the operator's browser.

* **Cross-site forms (CSRF).** A page elsewhere can make the browser post a form to the console — on loopback
  with no login there is no cookie to withhold. A request that changes something (anything but GET/HEAD) is
  refused when the browser says it comes from another site (``Sec-Fetch-Site``) or from another origin
  (``Origin``). With login on, the SameSite=Strict cookie is a second lock.
* **DNS rebinding.** A name the attacker controls can be re-pointed at 127.0.0.1, making the attacker's page
  "same-origin" with a loopback console. A console listening on loopback only answers requests addressed to a
  loopback host (``localhost``, 127.0.0.0/8, ``::1``) in ``Host``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from rocketq.common.addresses import is_loopback
from rocketq.console.keys import LOOPBACK_ONLY_KEY
from rocketq.console.render import render_error

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


def _host_name(host: str) -> str:
    """The name of a Host header (``[::1]:8080`` → ``::1``, ``localhost:8080`` → ``localhost``)."""
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@web.middleware
async def same_origin(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.app[LOOPBACK_ONLY_KEY] and not is_loopback(_host_name(request.host or "")):
        return render_error(request, f"this console answers loopback addresses only, not {request.host!r}", status=403)
    if request.method not in _SAFE:
        site = request.headers.get("Sec-Fetch-Site", "")
        origin = request.headers.get("Origin")
        # the origin's host and port against Host (not the scheme: a TLS-terminating proxy forwards plain HTTP)
        if site == "cross-site" or (origin is not None and urlsplit(origin).netloc != request.host):
            return render_error(request, "a form from another site may not act on this console", status=403)
    return await handler(request)
