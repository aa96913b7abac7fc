"""The console as a server: an aiohttp site in the caller's event loop (``rocketq console`` and ``standalone``)."""

from __future__ import annotations

import logging

from aiohttp import web

from rocketq.client import AdminClient
from rocketq.client.config import ClientConfig
from rocketq.common.addresses import is_loopback
from rocketq.console.app import make_app

log = logging.getLogger(__name__)


class ConsoleServer:
    """``await start()`` listens (port 0: any free one) and returns the port; ``await close()`` stops serving and
    closes every client the console opened. ``login``: every page needs an ACL admin account (docs/console.md)."""

    def __init__(self, config: ClientConfig, host: str = "127.0.0.1", port: int = 8080, *, login: bool = False,
                 timeout: float = 5.0) -> None:  # fmt: skip
        self.config = config
        self.host, self.port = host, port
        self.login = login
        self.admin = AdminClient(config=config, timeout=timeout)
        self.app = make_app(self.admin, login=login, loopback_only=is_loopback(host))
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host or '0.0.0.0'}:{self.port}"

    async def start(self) -> int:
        await self.admin.start()
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host or None, self.port, reuse_address=True)
            await site.start()
        except BaseException:
            await runner.cleanup()
            await self.admin.close()
            raise
        self._runner = runner
        if runner.addresses:  # the bound address: the port is needed when 0 was asked
            self.port = int(runner.addresses[0][1])
        log.info("console.started url=%s login=%s", self.url, self.login)
        return self.port

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()  # the app's on_cleanup closes the sessions' clients
            self._runner = None
        await self.admin.close()
