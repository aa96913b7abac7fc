"""One TCP connection speaking RemotingCommand frames, used by both servers and clients.

The connection owns the frame decoder, the opaque → Future table for requests it sent, and hands incoming
requests to a dispatcher. A malformed frame closes this connection only.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import Protocol, cast

from rocketq.errors import ProtocolError, RemotingClosedError, RemotingTimeoutError
from rocketq.protocol.command import (
    DEFAULT_MAX_FRAME_SIZE,
    FLAG_ONEWAY,
    RemotingCommand,
    encode_parts,
)
from rocketq.protocol.frame import FrameDecoder

log = logging.getLogger("rocketq.remoting")


class RequestDispatcher(Protocol):
    def dispatch(self, conn: Connection, cmd: RemotingCommand) -> None: ...

    def connection_lost(self, conn: Connection) -> None: ...


class Connection(asyncio.Protocol):
    """A framed connection. ``remote`` is ``"ip:port"`` of the peer."""

    def __init__(self, dispatcher: RequestDispatcher, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._dispatcher = dispatcher
        self._decoder = FrameDecoder(max_frame_size)
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._opaques = itertools.count(1)
        self._transport: asyncio.Transport | None = None
        self._closed_waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.remote: str = "?"
        self.remote_host: tuple[str, int] = ("0.0.0.0", 0)
        self.local_host: tuple[str, int] = ("0.0.0.0", 0)
        self.last_active = time.monotonic()
        self.closed = False
        # Filled in by whoever learns them (e.g. the broker from a heartbeat).
        self.language = "JAVA"
        self.version = 0
        self.attrs: dict[str, object] = {}

    # -- asyncio.Protocol -------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # No isinstance check: uvloop's TCPTransport does not subclass asyncio.Transport.
        self._transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("sockname")
        if peer:
            self.remote_host = (peer[0], peer[1])
            self.remote = f"{peer[0]}:{peer[1]}"
        if sock:
            self.local_host = (sock[0], sock[1])

    def data_received(self, data: bytes) -> None:
        self.last_active = time.monotonic()
        try:
            commands = self._decoder.feed(data)
        except ProtocolError as exc:
            log.warning("frame.rejected remote=%s error=%s", self.remote, exc)
            self.close()
            return
        for cmd in commands:
            if cmd.is_response:
                fut = self._pending.pop(cmd.opaque, None)
                if fut is not None and not fut.done():
                    fut.set_result(cmd)
            else:
                if cmd.language != "JAVA" or self.language == "JAVA":
                    self.language = cmd.language
                self.version = cmd.version
                self._dispatcher.dispatch(self, cmd)
        if self._decoder.error is not None:  # good frames came before a bad one: answered, now close
            log.warning("frame.rejected remote=%s error=%s", self.remote, self._decoder.error)
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        err = RemotingClosedError(f"connection to {self.remote} closed")
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(err)
        self._pending.clear()
        if not self._closed_waiter.done():
            self._closed_waiter.set_result(None)
        try:
            self._dispatcher.connection_lost(self)
        except Exception:  # a listener's bug must not break the event loop
            log.exception("connection_lost listener failed remote=%s", self.remote)

    # -- sending ----------------------------------------------------------------------------------------

    def write(self, cmd: RemotingCommand) -> None:
        """Queue one frame for sending; silently dropped if the connection is closed."""
        if self.closed or self._transport is None or self._transport.is_closing():
            return
        head, body = encode_parts(cmd)
        if body:
            self._transport.writelines((head, body))
        else:
            self._transport.write(head)

    def write_many(self, cmds: list[RemotingCommand]) -> None:
        """Several frames in one write (fewer syscalls when answering a burst)."""
        if self.closed or self._transport is None or self._transport.is_closing():
            return
        parts: list[bytes | bytearray | memoryview] = []
        for cmd in cmds:
            head, body = encode_parts(cmd)
            parts.append(head)
            if body:
                parts.append(body)
        self._transport.writelines(parts)

    async def request(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        if self.closed:
            raise RemotingClosedError(f"connection to {self.remote} closed")
        cmd.opaque = next(self._opaques) & 0x7FFFFFFF
        fut: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self._pending[cmd.opaque] = fut
        self.write(cmd)
        try:
            async with asyncio.timeout(timeout):
                return await fut
        except TimeoutError:
            raise RemotingTimeoutError(
                f"request code {cmd.code} to {self.remote} timed out after {timeout:.3f}s"
            ) from None
        finally:
            self._pending.pop(cmd.opaque, None)

    def send_oneway(self, cmd: RemotingCommand) -> None:
        cmd.opaque = next(self._opaques) & 0x7FFFFFFF
        cmd.flag |= FLAG_ONEWAY
        self.write(cmd)

    # -- lifecycle --------------------------------------------------------------------------------------

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed_waiter)

    def __repr__(self) -> str:
        return f"<Connection {self.remote} lang={self.language}>"
