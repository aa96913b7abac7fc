"""Remoting client: one pooled connection per address, opaque-matched requests, timeouts, oneway calls.

A connection that breaks is dropped from the pool and re-opened on the next call. Requests the peer sends
to us on a client connection (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED, ...) go to
``dispatcher``.

``before_request`` (Java's ``RPCHook.doBeforeRequest``) runs on every request this client originates, just
before it is sent: the client's ACL signing (``rocketq.client.credentials``) plugs in there.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Callable

from rocketq.errors import RemotingConnectError, RemotingTimeoutError
from rocketq.protocol.command import DEFAULT_MAX_FRAME_SIZE, RemotingCommand
from rocketq.remoting.connection import Connection, ReplyWaiter
from rocketq.remoting.server import RemotingDispatcher

log = logging.getLogger("rocketq.remoting.client")


def split_addr(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise RemotingConnectError(f"bad address {addr!r}, expected host:port")
    return host.strip("[]"), int(port)


class RemotingClient:
    def __init__(
        self,
        dispatcher: RemotingDispatcher | None = None,
        *,
        connect_timeout: float = 3.0,
        idle_timeout: float = 120.0,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        tls: ssl.SSLContext | None = None,
        before_request: Callable[[RemotingCommand], None] | None = None,
    ) -> None:
        """``tls``: dial every address with TLS using this context (``rocketq.remoting.tls.ClientTls``)."""
        self.tls = tls
        self.dispatcher = dispatcher or RemotingDispatcher("client")
        self.before_request = before_request
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.max_frame_size = max_frame_size
        self._conns: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Future[Connection]] = {}
        self._idle_task: asyncio.Task[None] | None = None
        self._closed = False
        #: called with the address when a connection to it cannot be made
        self.on_connect_failed: Callable[[str], None] | None = None

    async def connection(self, addr: str) -> Connection:
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:
            return conn
        if self._closed:
            raise RemotingConnectError("client is closed")
        pending = self._connecting.get(addr)
        if pending is not None:
            return await asyncio.shield(pending)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Connection] = loop.create_future()
        self._connecting[addr] = fut
        try:
            host, port = split_addr(addr)
            async with asyncio.timeout(self.connect_timeout):
                _, proto = await loop.create_connection(
                    lambda: Connection(self.dispatcher, self.max_frame_size), host, port, ssl=self.tls
                )
            self._conns[addr] = proto
            fut.set_result(proto)
            if self._idle_task is None:
                self._idle_task = loop.create_task(self._scan_idle())
            return proto
        except (OSError, TimeoutError) as exc:  # ssl.SSLError (a failed handshake) is an OSError too
            err = RemotingConnectError(f"cannot connect to {addr}: {exc or type(exc).__name__}")
            fut.set_exception(err)
            fut.exception()  # mark retrieved for waiters that never come
            if self.on_connect_failed is not None:
                self.on_connect_failed(addr)
            raise err from exc
        finally:
            self._connecting.pop(addr, None)

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
        """Send a request and wait for its response (``RemotingTimeoutError`` after ``timeout`` s)."""
        if self.before_request is not None:
            self.before_request(cmd)
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:  # the common case: no connect, no second clock read
            return await conn.request(cmd, timeout)
        deadline = time.monotonic() + timeout
        conn = await self.connection(addr)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RemotingTimeoutError(f"connect to {addr} used the whole {timeout}s")
        return await conn.request(cmd, remaining)

    def invoke_future(self, addr: str, cmd: RemotingCommand, timeout: float = 3.0) -> asyncio.Future[RemotingCommand]:
        """``invoke`` as a future, for callers that chain callbacks: no coroutine or task when the connection
        is already open (a task runs ``invoke`` when it must connect first)."""
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:
            if self.before_request is not None:
                self.before_request(cmd)
            return conn.request_future(cmd, timeout)
        return asyncio.ensure_future(self.invoke(addr, cmd, timeout))

    def invoke_waiter(self, addr: str, cmd: RemotingCommand, timeout: float, waiter: ReplyWaiter) -> bool:
        """``Connection.request_waiter`` on the open connection to ``addr``; False (nothing sent) when there is
        none yet — the caller then uses ``invoke_future``, which connects first."""
        conn = self._conns.get(addr)
        if conn is None or conn.closed:
            return False
        if self.before_request is not None:
            self.before_request(cmd)
        conn.request_waiter(cmd, timeout, waiter)
        return True

    def ready_connection(self, addr: str) -> Connection | None:
        """The open connection to ``addr`` for a request the caller encodes itself (``Connection.request_frame``);
        None when there is none yet, or when ``before_request`` must see every command first (ACL signing)."""
        if self.before_request is not None:
            return None
        conn = self._conns.get(addr)
        if conn is None or conn.closed:
            return None
        return conn

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        conn = self._conns.get(addr)
        if conn is None or conn.closed:
            conn = await self.connection(addr)
        if self.before_request is not None:
            self.before_request(cmd)
        conn.send_oneway(cmd)

    def close_connection(self, addr: str) -> None:
        conn = self._conns.pop(addr, None)
        if conn is not None:
            conn.close()

    async def _scan_idle(self) -> None:
        while True:
            await asyncio.sleep(min(10.0, self.idle_timeout))
            now = time.monotonic()
            for addr, conn in list(self._conns.items()):
                if conn.closed:
                    self._conns.pop(addr, None)
                elif now - conn.last_active > self.idle_timeout and conn.pending_count == 0:
                    self._conns.pop(addr, None)
                    conn.close()

    async def close(self) -> None:
        self._closed = True
        if self._idle_task is not None:
            self._idle_task.cancel()
            await asyncio.gather(self._idle_task, return_exceptions=True)
        conns = list(self._conns.values())
        self._conns.clear()
        for conn in conns:
            conn.close()
        for conn in conns:
            try:
                async with asyncio.timeout(2):
                    await conn.wait_closed()
            except TimeoutError:
                conn.abort()
        await self.dispatcher.cancel_tasks()
