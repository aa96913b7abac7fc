"""A ``/metrics`` endpoint in the server's own event loop (Prometheus text format, ``prometheus_client``), and
``rocketmq_rpc_latency``, which the broker and the name server both measure at their gate.

prometheus_client's own ``start_http_server`` serves from a thread; rocketq's collectors read the broker's and
name server's state, which only the event loop may touch, so the scrape is answered on the loop instead. A
scrape builds the text synchronously (the collectors read counters the servers keep anyway: no work on the
request path for a metric that can be read at scrape time).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections import defaultdict

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import HistogramMetricFamily, Metric

from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingDispatcher

log = logging.getLogger(__name__)

#: a scrape request's head must arrive within this and fit in this many bytes
_HEAD_TIMEOUT = 10.0
_HEAD_LIMIT = 8192


#: Java 5's RemotingMetricsManager buckets for rocketmq_rpc_latency, in milliseconds
RPC_BUCKETS_MS = (1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0)
#: pending request stamps kept at most (a request never answered must not grow the table for ever)
_PENDING_MAX = 65536


class RpcLatency:
    """rocketmq_rpc_latency: arrival stamped by a request hook, observed by the answer hook."""

    def __init__(self) -> None:
        self._pending: dict[int, float] = {}
        #: (request code, response code) → [bucket counts..., +Inf count], sum in ms
        self.buckets: defaultdict[tuple[int, int], list[int]] = defaultdict(lambda: [0] * (len(RPC_BUCKETS_MS) + 1))
        self.sums: defaultdict[tuple[int, int], float] = defaultdict(float)

    def on_request(self, conn: Connection, cmd: RemotingCommand) -> None:
        pending = self._pending
        if len(pending) >= _PENDING_MAX:
            pending.clear()
        pending[id(cmd)] = time.perf_counter()

    def on_answer(self, conn: Connection, cmd: RemotingCommand, code: int) -> None:
        t0 = self._pending.pop(id(cmd), None)
        if t0 is None:
            return  # answered before the hook was installed
        ms = (time.perf_counter() - t0) * 1000.0
        key = (cmd.code, code)
        self.buckets[key][bisect.bisect_left(RPC_BUCKETS_MS, ms)] += 1
        self.sums[key] += ms

    def family(self, names: list[str], values: list[str], long_polling: tuple[int, ...] = ()) -> Metric:
        """rocketmq_rpc_latency with the server's own labels first (RemotingMetricsConstant's label names)."""
        labels = [*names, "protocol_type", "request_code", "response_code", "is_long_polling"]
        hist = HistogramMetricFamily("rocketmq_rpc_latency", "time from request to answer (ms)", labels=labels)
        for (req, resp), counts in sorted(self.buckets.items()):
            hist.add_metric([*values, "remoting", str(req), str(resp), str(req in long_polling).lower()],
                            histogram_buckets(counts, RPC_BUCKETS_MS), self.sums[(req, resp)])  # fmt: skip
        return hist

    def install(self, dispatcher: RemotingDispatcher) -> None:
        """Time every request from now on (first among the request hooks: a refused request is timed too)."""
        dispatcher.request_hooks.insert(0, self.on_request)
        dispatcher.answer_hooks.append(self.on_answer)


def histogram_buckets(counts: list[int], bounds: tuple[float, ...]) -> list[tuple[str, float]]:
    """Cumulative (le, count) pairs from per-bucket counts (the last one is +Inf)."""
    out, total = [], 0
    for bound, n in zip((*(str(b) for b in bounds), "+Inf"), counts, strict=True):
        total += n
        out.append((bound, float(total)))
    return out


class MetricsEndpoint:
    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry = registry
        self.host, self.port = host, port
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        """Listen; returns the bound port (``port`` 0: any free one)."""
        # the reader's limit bounds the head: a longer one fails at once (LimitOverrunError) instead of buffering
        self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=_HEAD_LIMIT)
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
