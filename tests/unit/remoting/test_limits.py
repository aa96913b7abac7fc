"""Server limits with real sockets: unfinished frames, connection count, slow readers (``remoting.limits``).

Every server is on 127.0.0.1 with an ephemeral port and closed by its fixture; every raw socket is closed.
Each test runs on the asyncio loop and on uvloop (see conftest).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import AsyncIterator, Callable

import pytest

from rocketq.codes import ResponseCode
from rocketq.protocol import RemotingCommand, decode_frame, encode
from rocketq.remoting import Connection, RemotingClient, RemotingDispatcher, RemotingServer, ServerLimits
from rocketq.remoting.limits import ConnectionLedger

ECHO = 1000
BIG = 1001  # answers ext field "size" bytes of body

KiB = 1024
MiB = 1024 * KiB
WAIT = 10.0  # bound for things that must happen "soon"; never a pass/fail timing threshold


class Server:
    def __init__(self) -> None:
        self.dispatcher = RemotingDispatcher("limits-test")
        self.handled = 0
        self.server: RemotingServer | None = None
        self.sockets: list[socket.socket] = []
        self.clients: list[RemotingClient] = []

        def echo(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            self.handled += 1
            return cmd.response(ResponseCode.SUCCESS, None, dict(cmd.ext_fields), cmd.body)

        def big(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            self.handled += 1
            return cmd.response(ResponseCode.SUCCESS, body=b"x" * int(cmd.ext_fields["size"]))

        self.dispatcher.register(ECHO, echo)
        self.dispatcher.register(BIG, big)

    @property
    def ledger(self) -> ConnectionLedger:
        assert self.server is not None
        return self.server.ledger

    async def start(self, limits: ServerLimits, max_frame_size: int = 16 * MiB) -> int:
        self.server = RemotingServer(self.dispatcher, "127.0.0.1", 0, max_frame_size=max_frame_size, limits=limits)
        return await self.server.start()

    async def raw(self, rcvbuf: int | None = None) -> socket.socket:
        assert self.server is not None
        sock = socket.socket()
        self.sockets.append(sock)
        if rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.server.port))
        return sock

    async def echo(self) -> RemotingCommand:
        """One request from a well-behaved client on a connection of its own."""
        assert self.server is not None
        client = RemotingClient()
        self.clients.append(client)
        req = RemotingCommand.request(ECHO, {"k": "v"}, b"hello")
        return await client.invoke(f"127.0.0.1:{self.server.port}", req, timeout=WAIT)

    async def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        for client in self.clients:
            await client.close()
        if self.server is not None:
            await self.server.close()


@pytest.fixture
async def srv() -> AsyncIterator[Server]:
    s = Server()
    try:
        yield s
    finally:
        await s.close()


async def eventually(predicate: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(WAIT):
        while not predicate():
            await asyncio.sleep(0.005)


# ------------------------------------------------------------------------------------ unfinished frames


async def test_unfinished_frames_cannot_grow_past_the_cap(srv: Server) -> None:
    frame_len = 1 * MiB - 200
    held_each = 4 + frame_len - 1  # the length word and all but the last byte of the frame
    cap = 3 * MiB  # room for three such frames, not four
    await srv.start(ServerLimits(max_partial_frame_bytes=cap), max_frame_size=1 * MiB)
    loop = asyncio.get_running_loop()
    socks = []
    for i in range(10):
        sock = await srv.raw()
        socks.append(sock)
        await loop.sock_sendall(sock, struct.pack(">i", frame_len) + b"\0" * (frame_len - 1))
        # the server has read all of it: it holds it, or it closed the oldest holders to make room
        closed, held = max(0, i - 2), min(i + 1, 3) * held_each
        await eventually(lambda: srv.ledger.closed_partial_frames == closed, f"frame {i} read")  # noqa: B023
        await eventually(lambda: srv.ledger.partial_bytes == held, f"frame {i} counted")  # noqa: B023
        assert srv.ledger.partial_bytes <= cap
    # the seven oldest holders were closed, the three newest still hold their frame
    for sock in socks[:7]:
        await _eventually_closed(sock)
    assert [_closed_now(s) for s in socks[7:]] == [False] * 3
    assert srv.ledger.partial_bytes == 3 * held_each
    # a well-behaved client is still served
    resp = await srv.echo()
    assert (resp.code, bytes(resp.body)) == (ResponseCode.SUCCESS, b"hello")
    # a held frame that completes is served, and its bytes leave the count
    await loop.sock_sendall(socks[9], b"\0")
    await eventually(lambda: srv.ledger.partial_bytes == 2 * held_each, "completed frame uncounted")
    # closing a holder gives its bytes back
    socks[8].close()
    await eventually(lambda: srv.ledger.partial_bytes == held_each, "closed holder uncounted")


def _closed_now(sock: socket.socket) -> bool:
    try:
        data = sock.recv(65536, socket.MSG_PEEK)
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    return data == b""


async def test_a_stalled_frame_is_closed_before_a_newer_one(srv: Server) -> None:
    """The peer whose frame has waited longest goes first, not the one whose read tipped the count."""
    await srv.start(ServerLimits(max_partial_frame_bytes=2 * MiB), max_frame_size=2 * MiB)
    loop = asyncio.get_running_loop()
    stalled = await srv.raw()
    await loop.sock_sendall(stalled, struct.pack(">i", 2 * MiB - 64) + b"\0" * (MiB + MiB // 2))
    await eventually(lambda: srv.ledger.partial_bytes == 4 + MiB + MiB // 2, "stalled frame held")
    fresh = await srv.raw()
    # a frame that will complete: its first half tips the count over the cap, then it finishes
    req = encode(RemotingCommand.request(ECHO, {"k": "fresh"}, b"y" * MiB))
    await loop.sock_sendall(fresh, req[: MiB // 2])
    await eventually(lambda: srv.ledger.closed_partial_frames == 1, "one holder closed")
    assert _closed_now(stalled) or await _eventually_closed(stalled)
    await loop.sock_sendall(fresh, req[MiB // 2 :])
    answer = await _read_frame(fresh)
    assert (answer.code, answer.ext_fields["k"]) == (ResponseCode.SUCCESS, "fresh")
    assert srv.ledger.partial_bytes == 0


async def _eventually_closed(sock: socket.socket) -> bool:
    await eventually(lambda: _closed_now(sock), "closed")
    return True


async def _read_frame(sock: socket.socket) -> RemotingCommand:
    """One frame from ``sock`` (only for a socket whose peer sends nothing after it)."""
    loop = asyncio.get_running_loop()
    buf = b""
    async with asyncio.timeout(WAIT):
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = await loop.sock_recv(sock, 1 << 20)
            assert chunk, "closed"
            buf += chunk
    (length,) = struct.unpack(">i", buf[:4])
    assert len(buf) == 4 + length
    return decode_frame(buf[4:])


# ------------------------------------------------------------------------------------------ connections


async def test_connections_beyond_the_maximum_are_closed_at_accept(
    srv: Server, caplog: pytest.LogCaptureFixture
) -> None:
    await srv.start(ServerLimits(max_connections=3))
    admitted = [await srv.raw() for _ in range(3)]
    await eventually(lambda: len(srv.ledger.connections) == 3, "three admitted")
    caplog.set_level(logging.WARNING, "rocketq.remoting.limits")
    refused = [await srv.raw() for _ in range(5)]
    for sock in refused:
        await _eventually_closed(sock)
    assert srv.ledger.refused_connections == 5
    assert [_closed_now(s) for s in admitted] == [False] * 3
    assert len(srv.ledger.connections) == 3
    lines = [r for r in caplog.records if "connection.refused" in r.getMessage()]
    assert len(lines) == 1 and "127.0.0.1" in lines[0].getMessage()  # once per peer, then rate-limited
    # a freed slot admits the next client, which is served
    admitted[0].close()
    await eventually(lambda: len(srv.ledger.connections) == 2, "slot freed")
    resp = await srv.echo()
    assert resp.code == ResponseCode.SUCCESS


# ------------------------------------------------------------------------------------------ slow readers


async def test_a_slow_reader_is_paused_while_others_are_served(srv: Server) -> None:
    limits = ServerLimits(write_high_water=256 * KiB, write_low_water=64 * KiB, max_write_buffer=64 * MiB)
    await srv.start(limits)
    loop = asyncio.get_running_loop()
    slow = await srv.raw(rcvbuf=4 * KiB)
    await eventually(lambda: len(srv.ledger.connections) == 1, "admitted")
    (conn,) = srv.ledger.connections
    answer_size = 256 * KiB
    sent = 0
    # one request at a time, never reading an answer: the answers pile up until the server stops reading
    for _ in range(400):
        await loop.sock_sendall(slow, encode(RemotingCommand.request(BIG, {"size": str(answer_size)})))
        sent += 1
        await eventually(lambda: srv.handled == sent or srv.ledger.reader_pauses > 0, "handled")  # noqa: B023
        if srv.ledger.reader_pauses:
            break
    assert srv.ledger.reader_pauses == 1, "the server never paused the slow reader"
    handled_when_paused = srv.handled
    unsent = conn._transport.get_write_buffer_size()  # type: ignore[union-attr]
    assert unsent <= limits.write_high_water + answer_size + 4 * KiB  # at most the answer that crossed the mark
    # more requests wait in the kernel, unread, while another client is served
    for _ in range(3):
        await loop.sock_sendall(slow, encode(RemotingCommand.request(BIG, {"size": str(answer_size)})))
        sent += 1
    resp = await srv.echo()
    assert resp.code == ResponseCode.SUCCESS
    assert srv.handled == handled_when_paused + 1  # the echo only
    # once it reads, the server reads on: every request is answered, in order
    reader, writer = await asyncio.open_connection(sock=slow)
    try:
        async with asyncio.timeout(WAIT * 3):
            for _ in range(sent):
                (length,) = struct.unpack(">i", await reader.readexactly(4))
                answer = decode_frame(await reader.readexactly(length))
                assert (answer.code, len(answer.body)) == (ResponseCode.SUCCESS, answer_size)
    finally:
        writer.close()
    assert srv.handled == sent + 1


async def test_a_reader_whose_unsent_answers_pass_the_hard_cap_is_closed(srv: Server) -> None:
    limits = ServerLimits(write_high_water=128 * KiB, write_low_water=32 * KiB, max_write_buffer=1 * MiB)
    await srv.start(limits)
    loop = asyncio.get_running_loop()
    greedy = await srv.raw(rcvbuf=4 * KiB)
    # 200 pipelined requests in one write: read at once, their 50 MiB of answers cannot all be held
    burst = b"".join(encode(RemotingCommand.request(BIG, {"size": str(256 * KiB)})) for _ in range(200))
    await loop.sock_sendall(greedy, burst)
    await eventually(lambda: srv.ledger.closed_slow_readers == 1, "greedy reader closed")
    await eventually(lambda: len(srv.ledger.connections) == 0, "its connection gone")
    resp = await srv.echo()
    assert resp.code == ResponseCode.SUCCESS


# ------------------------------------------------------------------------------------------ settings


def test_limits_that_cannot_work_together_are_named() -> None:
    bad = ServerLimits(max_connections=0, max_partial_frame_bytes=MiB, write_high_water=10, write_low_water=10,
                       max_write_buffer=5)  # fmt: skip
    assert [field for field, _ in bad.problems(max_frame_size=16 * MiB)] == [
        "max_connections", "max_partial_frame_bytes", "write_high_water", "max_write_buffer"
    ]  # fmt: skip
    assert ServerLimits().problems(max_frame_size=16 * MiB) == []
