"""One TCP connection speaking RemotingCommand frames, used by both servers and clients.

The connection owns the frame decoder, the opaque → Future table for requests it sent, and hands incoming
requests to a dispatcher. A malformed frame closes this connection only.

Writes are coalesced: the first frame written in a loop iteration goes to the transport at once and schedules a
flush (``call_soon``); frames written after it in the same iteration are appended to a per-connection list that
the flush hands to the transport in one call — two ``send`` system calls for every burst produced in that
iteration, and no added delay for a lone frame. On loopback a ``send`` costs 10–50 µs of CPU
(the kernel runs the peer's receive path in the sender's context), far more than encoding a frame, so a broker
answering a burst of 1,000 pipelined requests, or a client pipelining them, saves most of its system time.
Frames still leave in the order they were written; ``close`` flushes first.

Request timeouts: a request with a timeout of a second or more gets no timer of its own (arming and cancelling
one costs ~1.8 µs, a tenth of a pipelined send); its deadline is kept beside its future and one sweep per
connection, every ``SWEEP_INTERVAL`` while requests are pending, fails the overdue ones — at most that much late,
as Java's ``scanResponseTable`` (once a second) is for async calls. Shorter timeouts keep an exact timer.

A connection lost to an error reads what the kernel still holds before it lets go (``_read_leftovers``): a
failed write closes the transport without reading on, and a peer that sent requests and then reset the
connection (a Go client closing with answers unread) must still have them processed, as a Netty broker does.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Protocol, cast

from rocketq.errors import ProtocolError, RemotingClosedError, RemotingTimeoutError
from rocketq.protocol.command import (
    DEFAULT_MAX_FRAME_SIZE,
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    RemotingCommand,
)
from rocketq.protocol.frame import FrameDecoder
from rocketq.protocol.framecodec import encode_head, request_run_end
from rocketq.remoting.foreign import report_foreign

log = logging.getLogger("rocketq.remoting")

#: Bounds on reading what a broken connection left unread (a socket's receive buffer is a few MiB at most).
_LEFTOVER_READS = 64
_LEFTOVER_CHUNK = 256 * 1024

#: Queued frames are handed to the transport once 256 KiB or 512 buffers (a frame is one or two) wait, instead of
#: at the end of the loop iteration. With a window of requests in flight, flushing only per iteration made both
#: processes take turns on one clump of the whole window (each ~35 % idle); handing runs over keeps both busy
#: (``rocketq bench produce --mode async``: every 8 buffers → 30.5k, 32 → 34.1k, never → 28.5k msg/s). Counting
#: 32 buffers alone handed the broker's ~200-byte answers over one writev per 6 KB: with the byte limit the broker
#: spent 6.8-7.1 µs a message instead of 8.4-8.8, at 4-6 % more msg/s (alternated runs); 256 buffers alone cost
#: auto-batching's 33 KiB frames 4-7 % of their throughput.
_FLUSH_EVERY_PARTS = 512
_FLUSH_EVERY_BYTES = 256 * 1024

#: seconds between sweeps of the overdue requests of a connection (while it has some pending)
SWEEP_INTERVAL = 0.05
#: requests with a shorter timeout get their own exact timer instead of the sweep
SWEPT_TIMEOUT_MIN = 1.0


#: takes consecutive requests of one code from one read (``RemotingDispatcher.register_stretch``)
StretchProcessor = Callable[["Connection", list[RemotingCommand]], None]


class RequestDispatcher(Protocol):
    """What a connection hands its requests to. A dispatcher may also have ``stretch_processors`` (code →
    ``StretchProcessor``, used while its ``request_hooks`` list is empty) and ``dispatch_stretch``, as
    ``RemotingDispatcher`` does: consecutive requests of such a code then go to it in one call."""

    def dispatch(self, conn: Connection, cmd: RemotingCommand) -> None: ...

    def connection_lost(self, conn: Connection) -> None: ...


class PartialFrameLedger(Protocol):
    """Where a server connection counts the bytes it holds of frames not yet complete (``limits``)."""

    partial_bytes: int
    max_partial_bytes: int

    def shed_partial_frames(self, current: Connection) -> bool:
        """Close connections until ``partial_bytes`` is within the cap; True if ``current`` was closed."""
        ...


class ReplyWaiter(Protocol):
    """What waits for a request's response: an ``asyncio.Future``, or any object with these three methods
    (``request_waiter``: called at once when the response is decoded, no loop hop)."""

    def done(self) -> bool: ...

    def set_result(self, result: RemotingCommand, /) -> None: ...

    def set_exception(self, exception: BaseException, /) -> None: ...


class Connection(asyncio.Protocol):
    """A framed connection. ``remote`` is ``"ip:port"`` of the peer."""

    def __init__(self, dispatcher: RequestDispatcher, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._dispatcher = dispatcher
        # The dispatcher's tables, read once (they are changed in place): see RequestDispatcher.
        stretches: dict[int, StretchProcessor] | None = getattr(dispatcher, "stretch_processors", None)
        self._stretches = {} if stretches is None else stretches
        self._request_hooks: list[object] = getattr(dispatcher, "request_hooks", [])
        self._dispatch_stretch: Callable[[Connection, StretchProcessor, list[RemotingCommand]], None] | None = (
            None if stretches is None else dispatcher.dispatch_stretch  # type: ignore[attr-defined]
        )
        self._decoder = FrameDecoder(max_frame_size)
        self._pending: dict[int, ReplyWaiter] = {}  # opaque → what waits for the response
        self._timers: dict[int, asyncio.TimerHandle] = {}  # opaque → its timeout (short timeouts)
        self._deadlines: dict[int, tuple[float, int, float]] = {}  # opaque → (deadline, code, timeout), swept
        self._sweep_handle: asyncio.TimerHandle | None = None
        self._opaques = itertools.count(1)
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._closed_waiter: asyncio.Future[None] = self._loop.create_future()
        self._out: list[bytes | bytearray | memoryview] = []  # encoded frames waiting for the flush
        self._out_bytes = 0  # their length
        self._flush_scheduled = False
        self.remote: str = "?"
        self.remote_host: tuple[str, int] = ("0.0.0.0", 0)
        self.local_host: tuple[str, int] = ("0.0.0.0", 0)
        self.last_active = time.monotonic()
        self.closed = False
        # Filled in by whoever learns them (e.g. the broker from a heartbeat).
        self.language = "JAVA"
        self.version = 0
        self.attrs: dict[str, object] = {}
        #: server connections: the shared count of partially received bytes (None: not counted, a client)
        self._ledger: PartialFrameLedger | None = None
        #: bytes of an unfinished frame this connection holds (as counted in the ledger), and since when
        self.partial_held = 0
        self.partial_since = 0.0
        #: why a limit closed this connection (None: no limit did); its reads are ignored from then on
        self.refused: str | None = None
        #: set while the transport's unsent bytes are above its high water mark (``pause_writing``)
        self._writes_paused = False

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
        now = self.last_active = time.monotonic()
        decoder = self._decoder
        try:
            commands = decoder.feed(data)
        except ProtocolError as exc:
            if self.refused is None and not report_foreign(self.remote, data):
                log.warning("frame.rejected remote=%s error=%s", self.remote, exc)
            self.close()
            return
        ledger = self._ledger
        if ledger is not None:
            held = decoder.buffered
            was = self.partial_held
            if held or was:
                # Only reads that leave (or finish) an unfinished frame get here: whole frames cost nothing more.
                if held and (commands or not was):
                    self.partial_since = now  # a new frame started in this read
                self.partial_held = held
                total = ledger.partial_bytes = ledger.partial_bytes + held - was
                if total > ledger.max_partial_bytes and ledger.shed_partial_frames(self):
                    return  # this connection was closed by the cap: what it sent is not served
        dispatcher = self._dispatcher
        # Consecutive requests of a code whose processor takes stretches (queued sends) go to it in one call.
        dispatch_stretch = self._dispatch_stretch
        stretches = None if self._request_hooks or dispatch_stretch is None else self._stretches
        i, n = 0, len(commands)
        while i < n:
            cmd = commands[i]
            i += 1
            if cmd.flag & FLAG_RESPONSE:
                self._settle(cmd)
                continue
            if cmd.language != "JAVA" or self.language == "JAVA":
                self.language = cmd.language
            self.version = cmd.version
            take = stretches.get(cmd.code) if stretches else None
            if take is None or dispatch_stretch is None:  # (the second: never, with a stretch table; for mypy)
                dispatcher.dispatch(self, cmd)
                continue
            # (a change of language ends the stretch: the rule above applies request by request)
            start = i - 1
            i = request_run_end(commands, start)
            self.version = commands[i - 1].version
            dispatch_stretch(self, take, commands[start:i] if start or i < n else commands)
        if self._decoder.error is not None and self.refused is None:  # good frames, then a bad one: close
            log.warning("frame.rejected remote=%s error=%s", self.remote, self._decoder.error)
            self.close()

    def _settle(self, cmd: RemotingCommand) -> None:
        """A response: the waiter of its opaque gets it (none: it timed out, or nobody asked)."""
        fut = self._pending.pop(cmd.opaque, None)
        if fut is None:
            return
        if self._deadlines.pop(cmd.opaque, None) is None:
            timer = self._timers.pop(cmd.opaque, None)
            if timer is not None:
                timer.cancel()
        if not fut.done():
            try:
                fut.set_result(cmd)
            except Exception:  # a waiter's bug must not stop the frames after it
                log.exception("reply.waiter_failed remote=%s opaque=%s", self.remote, cmd.opaque)

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and self.refused is None:
            self._read_leftovers()
        self.closed = True
        self.release_partial_frame()
        self._out.clear()
        self._out_bytes = 0
        err = RemotingClosedError(f"connection to {self.remote} closed")
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._deadlines.clear()
        if self._sweep_handle is not None:
            self._sweep_handle.cancel()
            self._sweep_handle = None
        pending = list(self._pending.values())
        self._pending.clear()
        for waiter in pending:
            self._fail_waiter(waiter, err)
        if not self._closed_waiter.done():
            self._closed_waiter.set_result(None)
        try:
            self._dispatcher.connection_lost(self)
        except Exception:  # a listener's bug must not break the event loop
            log.exception("connection_lost listener failed remote=%s", self.remote)

    def release_partial_frame(self) -> None:
        """Drop the unfinished frame this connection holds and take its bytes off the ledger."""
        self._decoder.discard()
        if self._ledger is not None and self.partial_held:
            self._ledger.partial_bytes -= self.partial_held
        self.partial_held = 0

    def _read_leftovers(self) -> None:
        """Feed what the peer sent before the connection broke and the transport never read.

        The transport still holds its socket here; it is read through a duplicate descriptor (the transport's
        own socket object does not lend ``recv``), non-blocking, until it is empty or fails.
        """
        transport = self._transport
        if transport is None or transport.get_extra_info("ssl_object") is not None:
            return  # TLS: the kernel holds records, not frames; what it still holds is lost with the session
        sock = transport.get_extra_info("socket")
        try:
            fd = sock.fileno() if sock is not None else -1
            if fd < 0:
                return
            with socket.socket(fileno=os.dup(fd)) as dup:
                dup.setblocking(False)
                for _ in range(_LEFTOVER_READS):
                    data = dup.recv(_LEFTOVER_CHUNK)
                    if not data:
                        return
                    self.data_received(data)
        except OSError:  # nothing more to read (EAGAIN), the reset itself, or the socket already gone
            return

    # -- sending ----------------------------------------------------------------------------------------

    def write(self, cmd: RemotingCommand) -> None:
        """Send one frame; dropped if the connection is closed.

        The first frame of a loop iteration goes out at once (a lone request or answer waits for nothing); the
        ones that follow in the same iteration are queued and leave together in one flush at its end.
        """
        self.write_frame(encode_head(cmd), cmd.body)

    def write_frame(self, head: bytes, body: bytes | bytearray | memoryview = b"") -> None:
        """``write`` for a frame already encoded: its head (prefix and header) and its body."""
        transport = self._transport
        if self.closed or transport is None:
            return
        if self._writes_paused and self._write_buffer_overflows(transport):
            return
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)
            if transport.is_closing():
                return
            if body:
                transport.writelines((head, body))
            else:
                transport.write(head)
            return
        out = self._out
        out.append(head)
        queued = self._out_bytes + len(head)
        if body:
            out.append(body)
            queued += len(body)
        self._queued(transport, out, queued)

    def _queued(self, transport: asyncio.Transport, out: list[bytes | bytearray | memoryview], queued: int) -> None:
        """The iteration's queue grew to ``out`` (``queued`` bytes): hand a long run over now rather than at the end
        of the iteration — the peer starts on these while we go on, instead of the two processes taking turns on
        one clump of the whole window."""
        if queued >= _FLUSH_EVERY_BYTES or len(out) >= _FLUSH_EVERY_PARTS:
            self._out = []
            self._out_bytes = 0
            if not transport.is_closing():
                transport.writelines(out)
        else:
            self._out_bytes = queued

    def write_frames(self, frames: list[bytes]) -> None:
        """``write_frame`` for several frames of one piece each (answers already encoded), in one call: the
        first of an iteration go out at once together, the ones after join the iteration's flush."""
        transport = self._transport
        if self.closed or transport is None:
            return
        if self._writes_paused and self._write_buffer_overflows(transport):
            return
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)
            if not transport.is_closing():
                transport.writelines(frames)
            return
        out = self._out
        out.extend(frames)
        self._queued(transport, out, self._out_bytes + sum(map(len, frames)))

    def _write_buffer_overflows(self, transport: asyncio.Transport) -> bool:
        """While writes are paused: True (and the connection closed) if its unsent answers passed their cap.
        A client connection has no cap (the server connection overrides this)."""
        return False

    def write_many(self, cmds: list[RemotingCommand]) -> None:
        """Several frames at once (they share a flush with every other frame written in this iteration)."""
        for cmd in cmds:
            self.write(cmd)

    def _flush(self) -> None:
        self._flush_scheduled = False
        out = self._out
        if not out:
            return
        self._out = []
        self._out_bytes = 0
        transport = self._transport
        if self.closed or transport is None or transport.is_closing():
            return
        if len(out) == 1:
            transport.write(out[0])
        else:
            transport.writelines(out)

    def request_future(self, cmd: RemotingCommand, timeout: float) -> asyncio.Future[RemotingCommand]:
        """Send a request; the future gets the response, or RemotingTimeoutError / RemotingClosedError.

        No coroutine and no task: callers on a hot path chain a done-callback instead of awaiting. The sweep (or,
        under ``SWEPT_TIMEOUT_MIN``, a timer of its own) enforces the deadline. Cancelling the future abandons the
        request (its answer, if one comes, is dropped).
        """
        fut: asyncio.Future[RemotingCommand] = self._loop.create_future()
        self.request_waiter(cmd, timeout, fut)
        return fut

    def request_waiter(self, cmd: RemotingCommand, timeout: float, waiter: ReplyWaiter) -> None:
        """``request_future`` with the caller's own waiter: its ``set_result`` runs as soon as the response is
        decoded (a future's callbacks would run one loop iteration later, each through a handle and a copied
        context), its ``set_exception`` on a timeout or a closed connection."""
        if self.closed:
            raise RemotingClosedError(f"connection to {self.remote} closed")
        opaque = cmd.opaque = next(self._opaques) & 0x7FFFFFFF
        self._expect(opaque, cmd.code, timeout, waiter)
        self.write(cmd)

    def next_opaque(self) -> int:
        """The opaque of the next request, for a caller that encodes the request itself (``request_frame``)."""
        return next(self._opaques) & 0x7FFFFFFF

    def request_frame(
        self, opaque: int, code: int, timeout: float, waiter: ReplyWaiter, head: bytes, body: bytes | bytearray
    ) -> None:
        """``request_waiter`` for a request already encoded: ``head`` (length words and header, carrying
        ``opaque`` from ``next_opaque``) and ``body``; ``code`` names the request in a timeout's error."""
        if self.closed:
            raise RemotingClosedError(f"connection to {self.remote} closed")
        self._expect(opaque, code, timeout, waiter)
        self.write_frame(head, body)

    def _expect(self, opaque: int, code: int, timeout: float, waiter: ReplyWaiter) -> None:
        """Register ``waiter`` for the answer to ``opaque``, failed with a timeout after ``timeout`` s."""
        loop = self._loop
        if timeout >= SWEPT_TIMEOUT_MIN:
            self._deadlines[opaque] = (loop.time() + timeout, code, timeout)
            if self._sweep_handle is None:
                self._sweep_handle = loop.call_later(SWEEP_INTERVAL, self._sweep)
        else:
            self._timers[opaque] = loop.call_at(loop.time() + timeout, self._expire, opaque, code, timeout)
        self._pending[opaque] = waiter

    def _sweep(self) -> None:
        """Fail the swept requests whose deadline has passed; go on sweeping while any is pending."""
        self._sweep_handle = None
        deadlines = self._deadlines
        now = self._loop.time()
        for opaque in [o for o, (deadline, _, _) in deadlines.items() if deadline <= now]:
            _, code, timeout = deadlines.pop(opaque)
            self._expire(opaque, code, timeout)
        if deadlines and not self.closed:
            self._sweep_handle = self._loop.call_later(SWEEP_INTERVAL, self._sweep)

    def _expire(self, opaque: int, code: int, timeout: float) -> None:
        self._timers.pop(opaque, None)
        waiter = self._pending.pop(opaque, None)
        if waiter is not None:
            self._fail_waiter(
                waiter, RemotingTimeoutError(f"request code {code} to {self.remote} timed out after {timeout:.3f}s")
            )

    def _fail_waiter(self, waiter: ReplyWaiter, exc: Exception) -> None:
        if waiter.done():
            return
        try:
            waiter.set_exception(exc)
        except Exception:  # a waiter's bug must not keep the others from hearing of the failure
            log.exception("reply.waiter_failed remote=%s", self.remote)

    async def request(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        fut = self.request_future(cmd, timeout)
        try:
            return await fut
        except asyncio.CancelledError:
            self._pending.pop(cmd.opaque, None)
            self._deadlines.pop(cmd.opaque, None)
            timer = self._timers.pop(cmd.opaque, None)
            if timer is not None:
                timer.cancel()
            raise

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
            self._flush()  # frames written before close() still go out (the transport drains its buffer)
            self._transport.close()

    def refuse(self, reason: str) -> None:
        """Close this connection because a limit says so: its unfinished frame and unsent answers are dropped
        at once (that memory is the point), and nothing it sent afterwards is read."""
        if self.refused is None:
            self.refused = reason
        self.release_partial_frame()
        self.abort()

    def abort(self) -> None:
        self._out.clear()
        self._out_bytes = 0
        if self._transport is not None:
            self._transport.abort()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed_waiter)

    def __repr__(self) -> str:
        return f"<Connection {self.remote} lang={self.language}>"
