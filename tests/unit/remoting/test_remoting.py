"""asyncio remoting: request/response, timeouts, oneway, errors, reconnects, idle close, shutdown, bad frames.

Real sockets on 127.0.0.1 with ephemeral ports; every server and client is closed by its fixture.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import RemotingClosedError, RemotingConnectError, RemotingTimeoutError
from rocketq.protocol import SERIALIZE_ROCKETMQ, RemotingCommand, decode_frame, encode
from rocketq.remoting import Connection, RemotingClient, RemotingDispatcher, RemotingServer

ECHO = 1000
SLOW = 1001
BOOM = 1002
ABOOM = 1003
BLOCK = 1004
RECORD = 1005
CALLBACK = 1006

WAIT = 5.0  # upper bound for things that must happen "soon"; never a pass/fail timing threshold


class Harness:
    def __init__(self) -> None:
        self.dispatcher = RemotingDispatcher("test")
        self.server: RemotingServer | None = None
        self.clients: list[RemotingClient] = []
        self.recorded: list[RemotingCommand] = []
        self.release = asyncio.Event()
        self._register()

    def _register(self) -> None:
        d = self.dispatcher

        def echo(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            return cmd.response(ResponseCode.SUCCESS, cmd.remark, dict(cmd.ext_fields), cmd.body)

        async def slow(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            await asyncio.sleep(float(cmd.ext_fields.get("delay", "0")))
            return cmd.response(ResponseCode.SUCCESS, ext_fields={"tag": cmd.ext_fields.get("tag", "")})

        def boom(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            raise ValueError("sync processor exploded")

        async def aboom(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            raise RuntimeError("async processor exploded")

        async def block(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            await self.release.wait()
            return cmd.response(ResponseCode.SUCCESS)

        def record(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            self.recorded.append(cmd)
            return cmd.response(ResponseCode.SUCCESS, ext_fields={"seen": str(len(self.recorded))})

        async def callback(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            # Server → client request over the same connection (e.g. CHECK_TRANSACTION_STATE).
            reply = await conn.request(RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE), timeout=WAIT)
            return cmd.response(ResponseCode.SUCCESS, ext_fields={"client_said": reply.remark or ""})

        d.register(ECHO, echo)
        d.register(SLOW, slow)
        d.register(BOOM, boom)
        d.register(ABOOM, aboom)
        d.register(BLOCK, block)
        d.register(RECORD, record)
        d.register(CALLBACK, callback)

    async def start(self, **kwargs: Any) -> str:
        self.server = RemotingServer(self.dispatcher, "127.0.0.1", 0, **kwargs)
        port = await self.server.start()
        return f"127.0.0.1:{port}"

    def client(self, **kwargs: Any) -> RemotingClient:
        c = RemotingClient(**kwargs)
        self.clients.append(c)
        return c

    async def close(self) -> None:
        self.release.set()
        for c in self.clients:
            await c.close()
        if self.server is not None:
            await self.server.close()


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    h = Harness()
    try:
        yield h
    finally:
        await h.close()


async def read_frame(reader: asyncio.StreamReader) -> RemotingCommand:
    (length,) = struct.unpack(">i", await reader.readexactly(4))
    return decode_frame(await reader.readexactly(length))


async def eventually(predicate: Callable[[], bool | Awaitable[bool]], what: str) -> None:
    async with asyncio.timeout(WAIT):
        while True:
            result = predicate()
            if not isinstance(result, bool):
                result = await result
            if result:
                return
            await asyncio.sleep(0.01)
    raise AssertionError(what)  # pragma: no cover


# ------------------------------------------------------------------------------------ request/response


async def test_request_response(harness: Harness) -> None:
    addr = await harness.start()
    client = harness.client()
    req = RemotingCommand.request(ECHO, {"k": "v"}, b"payload")
    resp = await client.invoke(addr, req, timeout=WAIT)
    assert resp.is_response
    assert resp.opaque == req.opaque
    assert (resp.code, resp.ext_fields, bytes(resp.body)) == (ResponseCode.SUCCESS, {"k": "v"}, b"payload")


async def test_async_processor_and_out_of_order_completion(harness: Harness) -> None:
    addr = await harness.start()
    client = harness.client()
    first = client.invoke(addr, RemotingCommand.request(SLOW, {"delay": "0.2", "tag": "a"}), timeout=WAIT)
    second = client.invoke(addr, RemotingCommand.request(SLOW, {"delay": "0", "tag": "b"}), timeout=WAIT)
    done_order: list[str] = []

    async def run(coro: Awaitable[RemotingCommand]) -> None:
        resp = await coro
        done_order.append(resp.ext_fields["tag"])

    async with asyncio.TaskGroup() as tg:
        tg.create_task(run(first))
        tg.create_task(run(second))
    assert sorted(done_order) == ["a", "b"]  # each response matched to its own request by opaque


async def test_many_concurrent_requests_share_one_connection(harness: Harness) -> None:
    addr = await harness.start()
    client = harness.client()
    resps = await asyncio.gather(
        *(client.invoke(addr, RemotingCommand.request(ECHO, {"i": str(i)}), timeout=WAIT) for i in range(50))
    )
    assert [r.ext_fields["i"] for r in resps] == [str(i) for i in range(50)]
    assert len(harness.server.connections) == 1  # type: ignore[union-attr]


async def test_response_mirrors_the_request_serialization(harness: Harness) -> None:
    addr = await harness.start()
    host, port = addr.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        req = RemotingCommand(code=ECHO, opaque=77, ext_fields={"a": "b"}, serialize_type=SERIALIZE_ROCKETMQ)
        writer.write(encode(req))
        resp = await read_frame(reader)
        assert (resp.opaque, resp.serialize_type, resp.ext_fields) == (77, SERIALIZE_ROCKETMQ, {"a": "b"})
        cpp = RemotingCommand(code=ECHO, opaque=78, language="CPP", serialize_type=SERIALIZE_ROCKETMQ)
        writer.write(encode(cpp))
        assert (await read_frame(reader)).serialize_type == 0  # C++ peers only read JSON
    finally:
        writer.close()
        await writer.wait_closed()


async def test_server_to_client_request(harness: Harness) -> None:
    addr = await harness.start()
    client_dispatcher = RemotingDispatcher("client")
    client_dispatcher.register(
        RequestCode.CHECK_TRANSACTION_STATE, lambda conn, cmd: cmd.response(ResponseCode.SUCCESS, "committed")
    )
    client = harness.client(dispatcher=client_dispatcher)
    resp = await client.invoke(addr, RemotingCommand.request(CALLBACK), timeout=WAIT)
    assert resp.ext_fields == {"client_said": "committed"}


# -------------------------------------------------------------------------------------------- timeouts


async def test_per_call_timeout(harness: Harness) -> None:
    addr = await harness.start()
    client = harness.client()
    with pytest.raises(RemotingTimeoutError):
        await client.invoke(addr, RemotingCommand.request(BLOCK), timeout=0.1)
    conn = await client.connection(addr)
    assert conn.pending_count == 0
    # The connection is still usable, and the late response (after release) is dropped quietly.
    harness.release.set()
    resp = await client.invoke(addr, RemotingCommand.request(ECHO, {"x": "1"}), timeout=WAIT)
    assert resp.ext_fields == {"x": "1"}


async def test_long_timeouts_are_enforced_by_the_sweep_which_stops_when_nothing_is_pending(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rocketq.remoting import connection as connection_module

    # scaled down so the test takes a fraction of a second: "long" from 0.1 s, swept every 20 ms
    monkeypatch.setattr(connection_module, "SWEPT_TIMEOUT_MIN", 0.1)
    monkeypatch.setattr(connection_module, "SWEEP_INTERVAL", 0.02)
    addr = await harness.start()
    client = harness.client()
    conn = await client.connection(addr)
    answered = await client.invoke(addr, RemotingCommand.request(ECHO, {"x": "2"}), timeout=0.2)
    assert answered.ext_fields == {"x": "2"}
    with pytest.raises(RemotingTimeoutError, match=r"timed out after 0\.150s"):
        await client.invoke(addr, RemotingCommand.request(BLOCK), timeout=0.15)
    assert conn.pending_count == 0
    for _ in range(100):  # the sweep that found nothing pending does not re-arm
        if conn._sweep_handle is None:
            break
        await asyncio.sleep(0.01)
    assert conn._sweep_handle is None
    harness.release.set()
    resp = await client.invoke(addr, RemotingCommand.request(ECHO, {"x": "3"}), timeout=0.2)
    assert resp.ext_fields == {"x": "3"}


async def test_timeout_is_a_builtin_timeout_error_too(harness: Harness) -> None:
    addr = await harness.start()
    with pytest.raises(TimeoutError):
        await harness.client().invoke(addr, RemotingCommand.request(BLOCK), timeout=0.05)


# ---------------------------------------------------------------------------------------------- oneway


async def test_oneway_is_processed_but_not_answered(harness: Harness) -> None:
    addr = await harness.start()
    host, port = addr.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        oneway = RemotingCommand.request(RECORD, {"n": "1"}, oneway=True)
        oneway.opaque = 1
        normal = RemotingCommand.request(RECORD, {"n": "2"})
        normal.opaque = 2
        writer.write(encode(oneway) + encode(normal))
        # Requests are answered in order, so a reply to the oneway request would come first.
        first = await read_frame(reader)
        assert first.opaque == 2
        assert first.ext_fields == {"seen": "2"}
        assert [c.ext_fields["n"] for c in harness.recorded] == ["1", "2"]
    finally:
        writer.close()
        await writer.wait_closed()


async def test_client_invoke_oneway(harness: Harness) -> None:
    addr = await harness.start()
    client = harness.client()
    await client.invoke_oneway(addr, RemotingCommand.request(RECORD, {"n": "1"}))
    await eventually(lambda: len(harness.recorded) == 1, "oneway request processed")
    assert harness.recorded[0].is_oneway
    conn = await client.connection(addr)
    assert conn.pending_count == 0


# ---------------------------------------------------------------------------------------------- errors


async def test_unknown_code_is_answered_with_request_code_not_supported(harness: Harness) -> None:
    addr = await harness.start()
    resp = await harness.client().invoke(addr, RemotingCommand.request(9999), timeout=WAIT)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 9999 not supported"


@pytest.mark.parametrize(("code", "text"), [(BOOM, "sync processor exploded"), (ABOOM, "async processor exploded")])
async def test_processor_exception_is_system_error(harness: Harness, code: int, text: str) -> None:
    addr = await harness.start()
    client = harness.client()
    resp = await client.invoke(addr, RemotingCommand.request(code), timeout=WAIT)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert text in (resp.remark or "")
    # The connection survives the processor's failure.
    assert (await client.invoke(addr, RemotingCommand.request(ECHO), timeout=WAIT)).code == ResponseCode.SUCCESS


async def test_connect_error() -> None:
    # Bind and release a port so nothing listens on it.
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    client = RemotingClient(connect_timeout=WAIT)
    try:
        with pytest.raises(RemotingConnectError):
            await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(ECHO), timeout=WAIT)
    finally:
        await client.close()


async def test_bad_address() -> None:
    client = RemotingClient()
    try:
        with pytest.raises(RemotingConnectError):
            await client.invoke("no-port", RemotingCommand.request(ECHO))
    finally:
        await client.close()


# ------------------------------------------------------------------------------- reconnect / idle / close


async def test_reconnect_after_the_server_closed_the_connection(harness: Harness) -> None:
    addr = await harness.start()
    client = harness.client()
    assert (await client.invoke(addr, RemotingCommand.request(ECHO), timeout=WAIT)).code == 0
    first = await client.connection(addr)
    for conn in list(harness.server.connections):  # type: ignore[union-attr]
        conn.close()
    async with asyncio.timeout(WAIT):
        await first.wait_closed()
    resp = await client.invoke(addr, RemotingCommand.request(ECHO, {"again": "1"}), timeout=WAIT)
    assert resp.ext_fields == {"again": "1"}
    assert await client.connection(addr) is not first


async def test_pending_request_fails_when_the_connection_drops(harness: Harness) -> None:
    addr = await harness.start()
    client = harness.client()
    pending = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(BLOCK), timeout=WAIT))
    await eventually(lambda: len(harness.server.connections) == 1, "connected")  # type: ignore[union-attr]
    await eventually(lambda: harness.dispatcher._tasks != set(), "request in flight")
    for conn in list(harness.server.connections):  # type: ignore[union-attr]
        conn.abort()
    with pytest.raises(RemotingClosedError):
        await pending


async def test_server_closes_idle_connections(harness: Harness) -> None:
    addr = await harness.start(idle_timeout=0.1, idle_scan_interval=0.02)
    client = harness.client()
    await client.invoke(addr, RemotingCommand.request(ECHO), timeout=WAIT)
    conn = await client.connection(addr)
    async with asyncio.timeout(WAIT):
        await conn.wait_closed()
    assert conn.closed


async def test_client_closes_idle_connections(harness: Harness) -> None:
    addr = await harness.start()
    client = harness.client(idle_timeout=0.05)
    await client.invoke(addr, RemotingCommand.request(ECHO), timeout=WAIT)
    conn = await client.connection(addr)
    async with asyncio.timeout(WAIT):
        await conn.wait_closed()
    await eventually(lambda: not harness.server.connections, "server saw the close")  # type: ignore[union-attr]


async def test_graceful_shutdown(harness: Harness) -> None:
    addr = await harness.start()
    client = harness.client()
    assert (await client.invoke(addr, RemotingCommand.request(ECHO), timeout=WAIT)).code == 0
    in_flight = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(BLOCK), timeout=WAIT))
    await eventually(lambda: harness.dispatcher._tasks != set(), "request in flight")
    assert harness.server is not None
    async with asyncio.timeout(WAIT):
        await harness.server.close()
    assert not harness.dispatcher._tasks  # processor tasks were cancelled and awaited
    with pytest.raises(RemotingClosedError):
        await in_flight
    with pytest.raises(RemotingConnectError):
        await harness.client().invoke(addr, RemotingCommand.request(ECHO), timeout=WAIT)
    harness.server = None


async def test_client_close_fails_pending_requests(harness: Harness) -> None:
    addr = await harness.start()
    client = RemotingClient()
    pending = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(BLOCK), timeout=WAIT))
    await eventually(lambda: harness.dispatcher._tasks != set(), "request in flight")
    await client.close()
    with pytest.raises(RemotingClosedError):
        await pending
    with pytest.raises(RemotingConnectError):
        await client.invoke(addr, RemotingCommand.request(ECHO))


# -------------------------------------------------------------------------------------- malformed input


@pytest.mark.parametrize(
    "garbage",
    [
        struct.pack(">i", -1),  # negative length
        struct.pack(">i", 2),  # shorter than the header-length word
        struct.pack(">i", 64 * 1024 * 1024),  # over the 16 MiB frame limit
        struct.pack(">II", 6, 3) + b"{}",  # header length beyond the frame
        struct.pack(">II", 8, 4) + b"nope",  # header is not JSON
        struct.pack(">II", 8, 0x05000004) + b"{}{}",  # unknown serialize type
    ],
    ids=["negative", "too-short", "too-long", "header-overrun", "bad-json", "bad-type"],
)
async def test_malformed_frame_closes_only_that_connection(harness: Harness, garbage: bytes) -> None:
    addr = await harness.start()
    good = harness.client()
    assert (await good.invoke(addr, RemotingCommand.request(ECHO), timeout=WAIT)).code == 0
    host, port = addr.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(garbage)
        async with asyncio.timeout(WAIT):
            assert await reader.read() == b""  # EOF: the server closed the offending connection
        resp = await good.invoke(addr, RemotingCommand.request(ECHO, {"still": "here"}), timeout=WAIT)
        assert resp.ext_fields == {"still": "here"}
        assert len(harness.server.connections) == 1  # type: ignore[union-attr]
    finally:
        writer.close()
        await writer.wait_closed()


async def test_valid_frames_before_a_bad_one_are_still_answered(harness: Harness) -> None:
    addr = await harness.start()
    host, port = addr.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        req = RemotingCommand.request(ECHO, {"ok": "1"})
        req.opaque = 5
        writer.write(encode(req) + struct.pack(">i", -7))
        resp = await read_frame(reader)
        assert (resp.opaque, resp.ext_fields) == (5, {"ok": "1"})
        async with asyncio.timeout(WAIT):
            assert await reader.read() == b""
    finally:
        writer.close()
        await writer.wait_closed()


class _RecordingTransport:
    """Records what a Connection hands to its transport, write by write."""

    def __init__(self) -> None:
        self.writes: list[list[bytes]] = []

    def write(self, data: bytes) -> None:
        self.writes.append([bytes(data)])

    def writelines(self, parts: Any) -> None:
        self.writes.append([bytes(p) for p in parts])

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str) -> None:
        return None


class _NoDispatch:
    def dispatch(self, conn: Connection, cmd: RemotingCommand) -> None: ...

    def connection_lost(self, conn: Connection) -> None: ...


async def test_a_long_run_of_frames_leaves_in_slices_in_order() -> None:
    """Frames written in one loop iteration: the first at once, then runs of 512 buffers, the rest at its end."""
    conn = Connection(_NoDispatch())
    transport = _RecordingTransport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    frames = [RemotingCommand(code=1, opaque=i, flag=1) for i in range(1100)]
    for cmd in frames:
        conn.write(cmd)
    # Before the iteration ends: the first frame, then runs of 512 (responses without a body: one buffer each).
    assert [len(w) for w in transport.writes] == [1, 512, 512]
    await asyncio.sleep(0)
    assert [len(w) for w in transport.writes] == [1, 512, 512, 75]
    sent = b"".join(b"".join(w) for w in transport.writes)
    assert sent == b"".join(encode(cmd) for cmd in frames)


async def test_big_frames_leave_once_256_kib_are_queued() -> None:
    conn = Connection(_NoDispatch())
    transport = _RecordingTransport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    frames = [RemotingCommand(code=1, opaque=i, body=bytes([i]) * 100_000) for i in range(10)]
    for cmd in frames:
        conn.write(cmd)
    # head + body each; the first at once, then every third frame brings the queue past 256 KiB
    assert [len(w) for w in transport.writes] == [2, 6, 6, 6]
    await asyncio.sleep(0)
    assert [len(w) for w in transport.writes] == [2, 6, 6, 6]  # nothing left: 1 + 3 * 3 frames
    assert b"".join(b"".join(w) for w in transport.writes) == b"".join(encode(cmd) for cmd in frames)


async def test_frames_written_together_keep_order_and_slicing() -> None:
    """``write_frames``: the iteration's first call leaves at once as one write, later calls join the flush and
    are handed over by 512 buffers, and single frames written between them keep their place."""
    conn = Connection(_NoDispatch())
    transport = _RecordingTransport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    heads = [encode(RemotingCommand(code=1, opaque=i, flag=1)) for i in range(1200)]
    conn.write_frames(heads[:3])
    conn.write_frame(heads[3])
    conn.write_frames(heads[4:700])
    conn.write_frames(heads[700:1200])
    assert [len(w) for w in transport.writes] == [3, 697]  # at once; then over 512 buffers queued
    await asyncio.sleep(0)
    assert [len(w) for w in transport.writes] == [3, 697, 500]
    assert b"".join(b"".join(w) for w in transport.writes) == b"".join(heads)
    conn.connection_lost(None)
    conn.write_frames(heads[:2])  # a lost connection drops them
    assert len(transport.writes) == 3


# ---------------------------------------------------------------------------------------------- waiters


class _Waiter:
    """A ReplyWaiter that records what it was given; ``explode`` makes its methods raise."""

    def __init__(self, explode: bool = False) -> None:
        self.results: list[RemotingCommand] = []
        self.errors: list[BaseException] = []
        self.explode = explode
        self.settled = asyncio.Event()

    def done(self) -> bool:
        return False

    def set_result(self, result: RemotingCommand) -> None:
        self.results.append(result)
        self.settled.set()
        if self.explode:
            raise RuntimeError("waiter exploded")

    def set_exception(self, exception: BaseException) -> None:
        self.errors.append(exception)
        self.settled.set()
        if self.explode:
            raise RuntimeError("waiter exploded")


async def test_a_waiter_gets_its_answer_and_a_failing_one_does_not_stop_the_next(harness: Harness) -> None:
    addr = await harness.start()
    client = harness.client()
    assert not client.invoke_waiter(addr, RemotingCommand.request(ECHO), WAIT, _Waiter())  # not connected yet
    await client.connection(addr)
    first, second = _Waiter(explode=True), _Waiter()
    assert client.invoke_waiter(addr, RemotingCommand.request(ECHO, {"n": "1"}), WAIT, first)
    assert client.invoke_waiter(addr, RemotingCommand.request(ECHO, {"n": "2"}), WAIT, second)
    async with asyncio.timeout(WAIT):
        await second.settled.wait()
    assert [r.ext_fields["n"] for r in first.results + second.results] == ["1", "2"]
    assert (await client.invoke(addr, RemotingCommand.request(ECHO, {"x": "y"}), WAIT)).ext_fields == {"x": "y"}


@pytest.mark.parametrize("timeout", [0.1, 1.5])  # an exact timer, and the sweep
async def test_a_waiter_hears_of_a_timeout(harness: Harness, timeout: float) -> None:
    addr = await harness.start()
    client = harness.client()
    conn = await client.connection(addr)
    waiter = _Waiter()
    conn.request_waiter(RemotingCommand.request(BLOCK), timeout, waiter)
    async with asyncio.timeout(WAIT):
        await waiter.settled.wait()
    assert [type(e) for e in waiter.errors] == [RemotingTimeoutError] and not waiter.results
    assert conn.pending_count == 0


async def test_every_waiter_hears_of_a_dropped_connection_even_after_one_fails(harness: Harness) -> None:
    addr = await harness.start()
    client = harness.client()
    conn = await client.connection(addr)
    waiters = [_Waiter(explode=True), _Waiter(), _Waiter(explode=True)]
    for waiter in waiters:
        conn.request_waiter(RemotingCommand.request(BLOCK), WAIT, waiter)
    await eventually(lambda: len(harness.dispatcher._tasks) == 3, "requests in flight")
    conn.abort()
    async with asyncio.timeout(WAIT):
        for waiter in waiters:
            await waiter.settled.wait()
    assert all([type(e) for e in w.errors] == [RemotingClosedError] for w in waiters)


async def test_requests_received_before_a_reset_are_processed_even_when_an_answer_fails_first(
    harness: Harness,
) -> None:
    """A peer sends requests and resets the connection (as the Go client does when it closes with answers to its
    not-really-oneway offset updates unread). Writing an answer then fails, and the transport closes before it
    reads the rest: the requests the kernel already holds must still be processed, as a Netty broker does."""
    entered, reset = threading.Event(), threading.Event()

    def stall(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        entered.set()
        reset.wait(WAIT)  # the loop is held here while the peer sends the rest and resets
        return cmd.response(ResponseCode.SUCCESS)

    harness.dispatcher.register(ECHO + 100, stall)
    addr = await harness.start()
    host, port = addr.split(":")
    first = RemotingCommand.request(ECHO + 100)
    first.opaque = 1
    last = RemotingCommand.request(RECORD, {"n": "after-reset"}, oneway=True)
    last.opaque = 2
    tail = encode(last)

    def peer() -> None:
        with socket.create_connection((host, int(port))) as s:
            s.sendall(encode(first) + tail[:8])  # the server reads the stalling request and a piece of the next
            if entered.wait(WAIT):
                s.sendall(tail[8:])
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = reset
        reset.set()

    thread = threading.Thread(target=peer)
    thread.start()
    try:
        await eventually(lambda: [c.ext_fields.get("n") for c in harness.recorded] == ["after-reset"],
                          "the request sent before the reset processed")  # fmt: skip
        await eventually(lambda: not harness.server.connections, "the connection gone")  # type: ignore[union-attr]
    finally:
        reset.set()
        await asyncio.to_thread(thread.join, WAIT)
