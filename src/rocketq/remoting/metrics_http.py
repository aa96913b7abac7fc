"""A ``/metrics`` endpoint in the server's own event loop (Prometheus text format, ``prometheus_client``).

prometheus_client's own ``start_http_server`` serves from a thread; rocketq's collectors read the broker's and
name server's state, which only the event loop may touch, so the scrape is answered on the loop instead. A
scrape builds the text synchronously (the collectors read counters the servers keep anyway: no work on the
request path for a metric that can be read at scrape time).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

#: a scrape request's head must arrive within this and fit in this many bytes
_HEAD_TIMEOUT = 10.0
_HEAD_LIMIT = 8192


class MetricsEndpoint:
    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry = registry
        self.host, self.port = host, port
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        """Listen; returns the bound port (``port`` 0: any free one)."""
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("metrics.started listen=%s:%s", self.host, self.port)
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_HEAD_TIMEOUT):
                head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > _HEAD_LIMIT:
                raise ValueError("request head too long")
            method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
            path = rest.split(" ", 1)[0].split("?", 1)[0]
            if method not in ("GET", "HEAD"):
                self._write(writer, 405, b"method not allowed\n", "text/plain")
            elif path not in ("/metrics", "/"):
                self._write(writer, 404, b"not found: try /metrics\n", "text/plain")
            else:
                body = generate_latest(self.registry)
                self._write(writer, 200, b"" if method == "HEAD" else body, CONTENT_TYPE_LATEST, len(body))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError, ValueError):
            pass  # a scraper that hung up or sent garbage gets nothing; nothing to log
        except Exception:
            log.exception("metrics.scrape_failed")
            with contextlib.suppress(Exception):
                self._write(writer, 500, b"scrape failed\n", "text/plain")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    def _write(writer: asyncio.StreamWriter, status: int, body: bytes, ctype: str, length: int = -1) -> None:
        reason = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error"}[status]
        n = len(body) if length < 0 else length
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {n}\r\n"
            f"Connection: close\r\n\r\n".encode()
            + body
        )
