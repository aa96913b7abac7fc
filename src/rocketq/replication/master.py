"""The master's side of the HA socket (Java's ``HAService`` acceptor and ``HAConnection``).

Each accepted slave gets a reader (its 8-byte reports: the first is where to start, every one is an ack) and
a writer (commit-log bytes from that offset on, in frames of at most ``transfer_batch_size`` that never cross
a file, with an empty frame as keep-alive). Nothing is sent before the first report. A report of 0 means "from
the start of my last file", as Java does; any other offset is trusted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from rocketq.replication.config import HAConfig
from rocketq.replication.frames import HANDSHAKE, decode_handshake, encode_transfer_header, last_report
from rocketq.store import MessageStore

log = logging.getLogger(__name__)

#: called on the loop with each report a slave sends
AckListener = Callable[[int], None]


class SlaveConnection:
    def __init__(
        self, store: MessageStore, config: HAConfig, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
        on_ack: AckListener, *, handshake: bool = False,
    ) -> None:  # fmt: skip
        self.store = store
        #: controller mode: the slave names itself first (``frames.encode_handshake``); its broker id
        self.expect_handshake = handshake
        self.slave_id: int | None = None
        self.config = config
        self._reader = reader
        self._writer = writer
        self._on_ack = on_ack
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        #: the first report (where streaming starts); None until it arrives
        self.request_offset: int | None = None
        #: the latest report
        self.ack_offset = -1
        #: the next commit-log byte to send
        self.next_transfer = -1
        self._first = asyncio.Event()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def wakeup(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """End both loops; ``run`` then closes the socket and returns."""
        for t in self._tasks:
            t.cancel()

    async def run(self) -> None:
        self._tasks = tasks = [asyncio.create_task(self._read_loop()), asyncio.create_task(self._write_loop())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(BaseException):
                    await t
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()

    async def _read_loop(self) -> None:
        buf = bytearray()
        idle = self.config.housekeeping_interval_ms / 1000
        while True:
            try:
                data = await asyncio.wait_for(self._reader.read(64 * 1024), idle)
            except TimeoutError:
                log.warning("ha.master.slave_silent peer=%s: closing", self.peer)
                return
            except OSError as exc:
                log.info("ha.master.read_failed peer=%s: %s", self.peer, exc)
                return
            if not data:
                log.info("ha.master.slave_closed peer=%s", self.peer)
                return
            buf += data
            if self.expect_handshake:
                if len(buf) < HANDSHAKE.size:
                    continue
                try:
                    self.slave_id = decode_handshake(buf)
                except ValueError as exc:
                    log.warning("ha.master.bad_handshake peer=%s: %s; closing", self.peer, exc)
                    return
                del buf[: HANDSHAKE.size]
                self.expect_handshake = False
                log.info("ha.master.slave_named peer=%s brokerId=%d", self.peer, self.slave_id)
            value, used = last_report(buf)
            del buf[:used]
            if value is None:
                continue
            if self.request_offset is None:
                self.request_offset = value
                self._first.set()
                log.info("ha.master.slave_request peer=%s offset=%d", self.peer, value)
            elif value > self.store.get_max_phy_offset():  # a slave ahead of its master (4.9.3+ closes)
                log.warning("ha.master.slave_ahead peer=%s offset=%d max=%d: closing", self.peer, value,
                            self.store.get_max_phy_offset())  # fmt: skip
                return
            self.ack_offset = value
            self._on_ack(value)

    def _start_offset(self) -> int:
        req = self.request_offset
        assert req is not None
        if req != 0:
            return req
        top = self.store.get_max_phy_offset()
        return top - top % self.store.config.mapped_file_size_commit_log

    async def _write_loop(self) -> None:
        await self._first.wait()
        cfg = self.config
        loop = asyncio.get_running_loop()
        heartbeat = cfg.heartbeat_interval_ms / 1000
        poll = cfg.transfer_poll_ms / 1000
        self.next_transfer = self._start_offset()
        last_write = loop.time()
        writer = self._writer
        while True:
            body = self._next_body()
            if body:
                writer.write(encode_transfer_header(self.next_transfer, len(body)))
                writer.write(body)
                self.next_transfer += len(body)
                await writer.drain()
                last_write = loop.time()
                continue
            if loop.time() - last_write >= heartbeat:
                writer.write(encode_transfer_header(self.next_transfer, 0))
                await writer.drain()
                last_write = loop.time()
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), min(poll, heartbeat))

    def _next_body(self) -> bytes:
        """Up to one batch from ``next_transfer`` to the end of its file's written bytes (a copy)."""
        try:
            res = self.store.get_commit_log_data(self.next_transfer)
        except Exception:  # the store is shutting down
            return b""
        if res is None:
            return b""
        try:
            if res.start_offset != self.next_transfer:  # offset 0 asked of a log that starts later
                return b""
            return bytes(res.view[: self.config.transfer_batch_size])
        finally:
            res.release()


class HAMaster:
    """Listens on the HA port; keeps the connected slaves and the highest offset any of them acknowledged."""

    def __init__(self, store: MessageStore, config: HAConfig, on_ack: AckListener) -> None:
        self.store = store
        self.config = config
        self._on_ack = on_ack
        self.connections: set[SlaveConnection] = set()
        self._server: asyncio.Server | None = None
        self._done: set[asyncio.Future[None]] = set()  # one per connection handler, resolved when it ends
        self.port = 0
        #: controller mode: slaves must name themselves with a handshake frame first
        self.handshake = False
        #: called on the loop when a named slave's connection ends
        self.on_disconnect: Callable[[], None] | None = None

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._accept, host, port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        log.info("ha.master.listening host=%s port=%d", host, self.port)
        return self.port

    @property
    def connection_count(self) -> int:
        """Slaves connected (counted from accept, before their first report, as Java counts them)."""
        return len(self.connections)

    def wakeup_all(self) -> None:
        for conn in self.connections:
            conn.wakeup()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = SlaveConnection(self.store, self.config, reader, writer, self._on_ack, handshake=self.handshake)
        self.connections.add(conn)
        log.info("ha.master.slave_connected peer=%s", conn.peer)
        done = asyncio.get_running_loop().create_future()
        self._done.add(done)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
            self._done.discard(done)
            done.set_result(None)
            if conn.slave_id is not None and self.on_disconnect is not None:
                self.on_disconnect()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.stop()
        if self._done:
            await asyncio.wait(list(self._done), timeout=5)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
