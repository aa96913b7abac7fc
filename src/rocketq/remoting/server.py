"""Remoting server: accepts connections and dispatches requests by code to registered processors.

One gate in, one gate out (Java's ``doBeforeRpcHooks`` / ``doAfterRpcHooks`` around every processor):

* every request passes through ``RemotingDispatcher.dispatch``: first the request hooks (the one place where
  authentication and permission checks go; ``rocketq.protocol.requests`` names the resources a request
  touches), then the processor;
* every answer leaves through ``RemotingDispatcher.reply`` (or ``reply_frame`` for an answer already encoded
  to its frame head), which runs the answer hooks (metrics, trace, audit) and writes it. A processor that
  answers later — a long-polled pull, a send waiting for its flush — keeps the dispatcher and calls
  ``reply`` itself; nothing else writes an answer to a connection.

A processor is a plain function (answered inline, no task) or a coroutine function (run as a task, so a
long-polled pull does not block the connection). It returns the response, or None to answer later / not at
all.

What a processor raises is told apart by type, here and nowhere else:

* ``BrokerError`` — a deliberate refusal with its own code (TOPIC_NOT_EXIST, NO_PERMISSION, …): answered, not
  logged (it is the protocol working);
* ``ProtocolError`` (``HeaderError`` among them) — the client sent something malformed: a bad header field, a
  body that is not the JSON or binary layout its code requires. Every decoder raises only this for bad input
  (a decoder that lets a ``ValueError`` / ``TypeError`` escape on bad input has a bug, fixed there). Answered
  SYSTEM_ERROR with the reason as remark, as Java answers a processor that threw, and logged as ONE warning
  line (peer, code, reason; rate-limited per peer and code) — no traceback: nothing on the server went wrong;
* anything else is a fault of the server: SYSTEM_ERROR, and ``log.exception`` keeps its traceback. Catching
  ``ValueError`` and the like wholesale would hide exactly these.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import socket
import ssl
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Union, cast

from rocketq.codes import ResponseCode
from rocketq.common.ratelog import RateLimitedLog
from rocketq.errors import BrokerError, ProtocolError
from rocketq.protocol.command import DEFAULT_MAX_FRAME_SIZE, FLAG_ONEWAY, RemotingCommand
from rocketq.remoting.busy_poll import BusyPoller
from rocketq.remoting.connection import Connection, StretchProcessor
from rocketq.remoting.limits import ConnectionLedger, ServerLimits
from rocketq.remoting.tls import ServerTls, TlsMode, looks_like_tls

log = logging.getLogger("rocketq.remoting.server")

Response = RemotingCommand | None
SyncProcessor = Callable[[Connection, RemotingCommand], Response]
AsyncProcessor = Callable[[Connection, RemotingCommand], Awaitable[Response]]
Processor = Union[SyncProcessor, AsyncProcessor]  # noqa: UP007 - Callable unions need Union at runtime
RequestHook = Callable[[Connection, RemotingCommand], Response]
#: called once per answered request with the response code, before the answer is written (also for a oneway
#: request, whose answer is not written)
AnswerHook = Callable[[Connection, RemotingCommand, int], None]
ConnectionListener = Callable[[Connection], None]


class RemotingDispatcher:
    """Code → processor table shared by servers and by clients that serve server→client requests."""

    def __init__(self, name: str = "remoting") -> None:
        self.name = name
        self._sync: dict[int, SyncProcessor] = {}
        self._async: dict[int, AsyncProcessor] = {}
        #: run before the processor; a hook that returns a response refuses the request with it
        self.request_hooks: list[RequestHook] = []
        #: run for every answer, whichever path writes it
        self.answer_hooks: list[AnswerHook] = []
        #: (request code, response code) → answers: counted here, at the exit every answer passes
        self.answer_counts: defaultdict[tuple[int, int], int] = defaultdict(int)
        self.close_listeners: list[ConnectionListener] = []
        #: code → a processor that takes consecutive requests of that code from one read at once; used while no
        #: request hook is registered (a hook sees each request), else the code's ``register``ed processor
        self.stretch_processors: dict[int, StretchProcessor] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.unknown_code_reply = True
        #: one warning line per malformed request, at most one per (peer host, request code) a minute
        self.mistakes = RateLimitedLog(log)

    def register(self, code: int, processor: Processor) -> None:
        if inspect.iscoroutinefunction(processor):
            self._async[int(code)] = processor
            self._sync.pop(int(code), None)
        else:
            self._sync[int(code)] = processor  # type: ignore[assignment]
            self._async.pop(int(code), None)

    def register_stretch(self, code: int, processor: StretchProcessor) -> None:
        """``processor`` takes stretches of ``code``'s requests (it answers each itself, through ``reply``); the
        code also needs a ``register``ed processor for single requests and for when request hooks are set."""
        self.stretch_processors[int(code)] = processor

    def dispatch_stretch(self, conn: Connection, processor: StretchProcessor, cmds: list[RemotingCommand]) -> None:
        """Hand ``cmds`` (consecutive requests of one code, no request hook registered) to ``processor``."""
        try:
            processor(conn, cmds)
        except Exception as exc:  # as ``dispatch`` answers a processor that failed: each request, SYSTEM_ERROR
            log.exception("request.failed code=%s requests=%d remote=%s", cmds[0].code, len(cmds), conn.remote)
            for cmd in cmds:
                self.reply(conn, cmd, cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}"))

    def dispatch(self, conn: Connection, cmd: RemotingCommand) -> None:
        for hook in self.request_hooks:
            try:
                denied = hook(conn, cmd)
            except ProtocolError as exc:  # a hook that reads the header found it malformed
                denied = self.client_mistake(conn, cmd, exc)
            except Exception as exc:
                log.exception("hook.failed code=%s opaque=%s remote=%s", cmd.code, cmd.opaque, conn.remote)
                denied = cmd.response(ResponseCode.SYSTEM_ERROR, f"request hook failed: {exc}")
            if denied is not None:
                self.reply(conn, cmd, denied)
                return
        sync = self._sync.get(cmd.code)
        if sync is not None:
            try:
                resp = sync(conn, cmd)
            except BrokerError as exc:
                resp = cmd.response(exc.code, exc.remark)
            except ProtocolError as exc:
                resp = self.client_mistake(conn, cmd, exc)
            except Exception as exc:
                log.exception("request.failed code=%s opaque=%s remote=%s", cmd.code, cmd.opaque, conn.remote)
                resp = cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
            if resp is not None:  # None: answered later (a queued send), not a call per request to learn it
                self.reply(conn, cmd, resp)
            return
        proc = self._async.get(cmd.code)
        if proc is not None:
            task = asyncio.get_running_loop().create_task(self._run(proc, conn, cmd))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        if self.unknown_code_reply:
            self.reply(
                conn,
                cmd,
                cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported"),
            )

    async def _run(self, proc: AsyncProcessor, conn: Connection, cmd: RemotingCommand) -> None:
        try:
            resp = await proc(conn, cmd)
        except asyncio.CancelledError:
            raise
        except BrokerError as exc:
            resp = cmd.response(exc.code, exc.remark)
        except ProtocolError as exc:
            resp = self.client_mistake(conn, cmd, exc)
        except Exception as exc:
            log.exception("request.failed code=%s opaque=%s remote=%s", cmd.code, cmd.opaque, conn.remote)
            resp = cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        self.reply(conn, cmd, resp)

    def client_mistake(self, conn: Connection, cmd: RemotingCommand, exc: ProtocolError) -> RemotingCommand:
        """The answer to a request refused for what the client sent (see the module doc): SYSTEM_ERROR with the
        reason, and one warning line. Processors that answer outside ``dispatch`` (the send queue) call it too."""
        self.note_client_mistake(conn, cmd, exc)
        return cmd.response(ResponseCode.SYSTEM_ERROR, str(exc))

    def note_client_mistake(self, conn: Connection, cmd: RemotingCommand, exc: ProtocolError) -> None:
        """Log a malformed request: one line, rate-limited per peer host and request code, no traceback."""
        self.mistakes.warning(
            (conn.remote.rpartition(":")[0], cmd.code),
            "request.malformed server=%s remote=%s code=%s opaque=%s error=%s",
            self.name, conn.remote, cmd.code, cmd.opaque, exc,
        )  # fmt: skip

    def reply(self, conn: Connection, cmd: RemotingCommand, resp: Response) -> None:
        """The one exit: run the answer hooks and write ``resp`` as the answer to ``cmd`` (None: no answer)."""
        if resp is None:
            return
        self.answered(conn, cmd, resp.code)
        if cmd.flag & FLAG_ONEWAY:
            return
        resp.opaque = cmd.opaque
        conn.write(resp)

    def reply_frame(self, conn: Connection, cmd: RemotingCommand, code: int, frame: bytes) -> None:
        """``reply`` for an answer already encoded to its frame (its opaque is ``cmd``'s; the send fast path)."""
        self.answered(conn, cmd, code)
        if not cmd.flag & FLAG_ONEWAY:
            conn.write_frame(frame)

    def answered(self, conn: Connection, cmd: RemotingCommand, code: int) -> None:
        """Count ``cmd``'s outcome and run the answer hooks; ``reply`` and ``reply_frame`` call it, and so does
        a processor that completes a oneway request without building an answer."""
        self.answer_counts[(cmd.code, code)] += 1
        if self.answer_hooks:
            self._after(conn, cmd, code)

    def count_answered(self, request_code: int, code: int, count: int) -> None:
        """``answered`` for ``count`` answers of one request code at once, for a caller that checked no answer
        hook is registered (a stored run's answers)."""
        if count:
            self.answer_counts[(request_code, code)] += count

    def _after(self, conn: Connection, cmd: RemotingCommand, code: int) -> None:
        for hook in self.answer_hooks:
            try:
                hook(conn, cmd, code)
            except Exception:  # an observer must never cost the client its answer
                log.exception("answer_hook.failed code=%s opaque=%s remote=%s", cmd.code, cmd.opaque, conn.remote)

    def connection_lost(self, conn: Connection) -> None:
        for listener in self.close_listeners:
            try:
                listener(conn)
            except Exception:
                log.exception("close listener failed remote=%s", conn.remote)

    async def cancel_tasks(self) -> None:
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def binds_every_interface(host: str) -> bool:
    """Whether listening on ``host`` accepts connections on every interface of the machine."""
    return host in ("", "0.0.0.0", "::", "[::]")


class RemotingServer:
    """A TCP server on ``host:port`` (port 0 = ephemeral); ``await start()`` returns the bound port."""

    def __init__(
        self,
        dispatcher: RemotingDispatcher,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        idle_timeout: float = 120.0,
        idle_scan_interval: float = 10.0,
        busy_poller: BusyPoller | None = None,
        limits: ServerLimits | None = None,
        ledger: ConnectionLedger | None = None,
        tls: ServerTls | None = None,
    ) -> None:
        """``limits`` bound what clients may hold (see ``limits``); servers that pass one ``ledger`` share them
        (the broker's main and VIP ports: one connection count, one budget of unfinished frames). ``tls``: the
        port's TLS mode and files (``rocketq.remoting.tls``; None = plain TCP)."""
        self.dispatcher = dispatcher
        self.ledger = ledger if ledger is not None else ConnectionLedger(limits, dispatcher.name)
        #: kicked on every read of every connection (see ``busy_poll``); None: the loop sleeps when idle
        self.busy_poller = busy_poller
        self.host = host
        self.port = port
        self.max_frame_size = max_frame_size
        self.idle_timeout = idle_timeout
        self.idle_scan_interval = idle_scan_interval
        self.connections: set[Connection] = set()
        self.tls = tls if tls is not None else ServerTls()
        self._server: asyncio.Server | None = None
        self._idle_task: asyncio.Task[None] | None = None
        # permissive TLS: our own listening socket, its accept loop, and the connections not yet told apart
        self._listener: socket.socket | None = None
        self._accept_task: asyncio.Task[None] | None = None
        self._sniffing: set[asyncio.Task[None]] = set()

    def _make_connection(self) -> Connection:
        if self.busy_poller is not None:
            return _PolledServerConnection(self, self.dispatcher, self.max_frame_size, self.busy_poller)
        return _ServerConnection(self, self.dispatcher, self.max_frame_size)

    async def start(self) -> int:
        loop = asyncio.get_running_loop()
        ctx = self.tls.context()  # a TLS file it cannot use is a ConfigError now, before the port is bound
        if self.tls.mode is TlsMode.PERMISSIVE:
            assert ctx is not None
            self._listen_permissive(ctx)
        else:
            self._server = await loop.create_server(
                self._make_connection, self.host, self.port, reuse_address=True, ssl=ctx
            )
        self.port = self._sockets()[0].getsockname()[1]
        self._idle_task = loop.create_task(self._scan_idle())
        tls = f" tls={self.tls.mode.value}" if self.tls.enabled else ""
        log.info("server.started name=%s addr=%s%s", self.dispatcher.name, ", ".join(self.bound_addresses), tls)
        return self.port

    def _sockets(self) -> list[socket.socket]:
        if self._listener is not None:
            return [self._listener]
        return list(self._server.sockets) if self._server is not None else []

    @property
    def bound_addresses(self) -> list[str]:
        """``host:port`` (``[host]:port`` for IPv6) of every socket this server listens on, as the kernel has
        them (``0.0.0.0`` when it binds every interface)."""
        out = []
        for sock in self._sockets():
            host, port = sock.getsockname()[:2]
            out.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
        return out

    # -- permissive TLS: TLS and plain TCP on one port -----------------------------------------------------

    def _listen_permissive(self, ctx: ssl.SSLContext) -> None:
        """Listen on a socket of our own: each accepted connection waits for its first byte (peeked, left in
        the kernel) and is then handed to the loop as a TLS or a plain connection."""
        family, kind, proto, _, addr = socket.getaddrinfo(
            self.host or None, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
            sock.listen(1024)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._listener = sock
        self._accept_task = asyncio.get_running_loop().create_task(self._accept_loop(sock, ctx))

    async def _accept_loop(self, listener: socket.socket, ctx: ssl.SSLContext) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                client, _ = await loop.sock_accept(listener)
            except OSError as exc:  # out of descriptors and the like: the next accept may work
                log.warning("server.accept_failed name=%s error=%s", self.dispatcher.name, exc)
                await asyncio.sleep(0.1)
                continue
            if len(self._sniffing) >= self.ledger.limits.max_connections:  # silent clients hold no more than this
                client.close()
                continue
            task = loop.create_task(self._sniff(client, ctx))
            self._sniffing.add(task)
            task.add_done_callback(self._sniffing.discard)

    async def _sniff(self, client: socket.socket, ctx: ssl.SSLContext) -> None:
        loop = asyncio.get_running_loop()
        try:
            client.setblocking(False)
            readable: asyncio.Future[None] = loop.create_future()
            fd = client.fileno()

            def on_readable() -> None:
                if not readable.done():
                    readable.set_result(None)

            loop.add_reader(fd, on_readable)
            try:
                async with asyncio.timeout(self.idle_timeout):
                    await readable
            finally:
                loop.remove_reader(fd)
            first = client.recv(1, socket.MSG_PEEK)
            if not first:  # closed before it said anything
                client.close()
                return
            tls = ctx if looks_like_tls(first) else None
            async with asyncio.timeout(self.idle_timeout):  # a handshake that never ends holds no socket forever
                await loop.connect_accepted_socket(self._make_connection, client, ssl=tls)
        except asyncio.CancelledError:
            client.close()
            raise
        except (OSError, TimeoutError) as exc:  # a reset, a failed handshake (ssl.SSLError), a silent client
            log.debug("server.tls_sniff_closed name=%s error=%s", self.dispatcher.name, exc)
            client.close()

    async def _scan_idle(self) -> None:
        while True:
            await asyncio.sleep(self.idle_scan_interval)
            now = time.monotonic()
            for conn in list(self.connections):
                if now - conn.last_active > self.idle_timeout and conn.pending_count == 0:
                    log.info("connection.idle_closed remote=%s", conn.remote)
                    conn.close()

    async def close(self) -> None:
        if self._idle_task is not None:
            self._idle_task.cancel()
            await asyncio.gather(self._idle_task, return_exceptions=True)
        waiting = [t for t in (self._accept_task, *self._sniffing) if t is not None]
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.close()
        await self.dispatcher.cancel_tasks()
        if self._server is not None:
            try:
                async with asyncio.timeout(5):
                    await self._server.wait_closed()
            except TimeoutError:
                for conn in list(self.connections):
                    conn.abort()
        log.info("server.stopped name=%s", self.dispatcher.name)


_REFUSED_AT_ACCEPT = "too many connections"


class _ServerConnection(Connection):
    """A client's connection to this server: counted against the server's limits (see ``limits``)."""

    def __init__(self, server: RemotingServer, dispatcher: RemotingDispatcher, max_frame_size: int) -> None:
        super().__init__(dispatcher, max_frame_size)
        self._server = server
        self._limits = server.ledger
        self._ledger = server.ledger

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        ledger = self._limits
        if not ledger.admit(self):
            self.refused = _REFUSED_AT_ACCEPT
            transport.close()
            return
        self._server.connections.add(self)
        limits = ledger.limits
        # The transport calls pause_writing / resume_writing when its unsent bytes cross these marks.
        cast(asyncio.Transport, transport).set_write_buffer_limits(limits.write_high_water, limits.write_low_water)

    def connection_lost(self, exc: Exception | None) -> None:
        self._server.connections.discard(self)
        self._limits.connections.discard(self)
        if self.refused == _REFUSED_AT_ACCEPT:  # never served: nobody has heard of it
            self.closed = True
            self.release_partial_frame()
            return
        super().connection_lost(exc)

    # -- a slow reader: flow control on its unsent answers -------------------------------------------------

    def pause_writing(self) -> None:
        """Its unsent answers passed the high water mark: read no more of its requests until they drain (they
        wait in the kernel, and TCP slows the client down). Other connections are not affected."""
        self._writes_paused = True
        ledger = self._limits
        ledger.reader_pauses += 1
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        ledger.refusals.warning(
            ("slow-reader", self.remote_host[0]),
            "connection.paused server=%s remote=%s reason=%d bytes of answers unsent, requests not read until "
            "under %d (serverWriteBufferHighWaterMark / serverWriteBufferLowWaterMark)",
            ledger.name, self.remote, transport.get_write_buffer_size(), ledger.limits.write_low_water,
        )  # fmt: skip
        transport.pause_reading()

    def resume_writing(self) -> None:
        self._writes_paused = False
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.resume_reading()

    def _write_buffer_overflows(self, transport: asyncio.Transport) -> bool:
        if self.refused is not None:  # closed by a limit: the answers of requests read before are dropped
            return True
        unsent = transport.get_write_buffer_size()
        ledger = self._limits
        cap = ledger.limits.max_write_buffer
        if unsent <= cap:
            return False
        ledger.closed_slow_readers += 1
        ledger.refusals.warning(
            ("slow-reader-closed", self.remote_host[0]),
            "connection.closed server=%s remote=%s reason=%d bytes of answers unsent, over %d "
            "(serverMaxWriteBufferBytes)",
            ledger.name, self.remote, unsent, cap,
        )  # fmt: skip
        self.refuse("unsent answers over the cap")
        return True


class _PolledServerConnection(_ServerConnection):
    def __init__(
        self, server: RemotingServer, dispatcher: RemotingDispatcher, max_frame_size: int, poller: BusyPoller
    ) -> None:
        super().__init__(server, dispatcher, max_frame_size)
        self._kick = poller.kick
        self._touch = poller.touch

    def data_received(self, data: bytes) -> None:
        self._kick()
        super().data_received(data)

    def _flush(self) -> None:
        # Once per loop iteration that wrote (not per answer): the quiet period starts when the answers leave.
        self._touch()
        super()._flush()
