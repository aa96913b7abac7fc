"""The broker's remoting limits, set by their broker.conf keys, with real sockets: unfinished frames from many
connections cannot grow the broker's held bytes past serverMaxPartialFrameBytes, and serverMaxConnections
refuses the connections beyond it — while a normal client keeps sending."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable

import pytest

from rocketq.codes import ResponseCode
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire

MiB = 1024 * 1024
WAIT = 10.0


async def eventually(predicate: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(WAIT):
        while not predicate():
            await asyncio.sleep(0.005)


def closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


async def connect(port: int) -> socket.socket:
    sock = socket.socket()
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    return sock


@pytest.mark.parametrize(
    "cluster", [{"maxFrameSize": str(2 * MiB), "serverMaxPartialFrameBytes": str(5 * MiB)}], indirect=True
)
async def test_unfinished_frames_of_twenty_connections_stay_under_the_cap(cluster: EmbeddedCluster, wire: Wire) -> None:
    (server,) = cluster.broker.servers
    ledger = server.ledger
    loop = asyncio.get_running_loop()
    socks: list[socket.socket] = []
    frame_len = 2 * MiB - 100
    try:
        for i in range(20):  # each holds all but the last byte of a 2 MiB frame: 40 MiB if nothing stopped them
            sock = await connect(server.port)
            socks.append(sock)
            await loop.sock_sendall(sock, struct.pack(">i", frame_len) + b"\0" * (frame_len - 1))
            closed = max(0, i - 1)  # two such frames fit in 5 MiB, a third does not
            await eventually(lambda: ledger.closed_partial_frames == closed, f"frame {i}")  # noqa: B023
            assert ledger.partial_bytes <= 5 * MiB
        # the newest holder's last bytes may still be on their way when the oldest one is closed
        await eventually(lambda: ledger.partial_bytes == 2 * (4 + frame_len - 1), "the two newest holders' bytes")
        await eventually(lambda: all(closed_by_peer(s) for s in socks[:18]), "the oldest holders closed")
        assert not closed_by_peer(socks[18]) and not closed_by_peer(socks[19])
        assert (await wire.send("TLimits", b"a normal send")).code == ResponseCode.SUCCESS
    finally:
        for sock in socks:
            sock.close()
    await eventually(lambda: ledger.partial_bytes == 0, "closed holders give their bytes back")


@pytest.mark.parametrize("cluster", [{"serverMaxConnections": "4"}], indirect=True)
async def test_connections_beyond_server_max_connections_are_refused(cluster: EmbeddedCluster, wire: Wire) -> None:
    assert (await wire.send("TConnLimit", b"first")).code == ResponseCode.SUCCESS  # opens the wire's connection
    (server,) = cluster.broker.servers
    before = len(server.ledger.connections)
    socks = [await connect(server.port) for _ in range(6)]
    try:
        refused = 6 - (4 - before)
        await eventually(lambda: server.ledger.refused_connections == refused, "refused at accept")
        await eventually(lambda: sum(closed_by_peer(s) for s in socks) == refused, "refused sockets closed")
        assert [closed_by_peer(s) for s in socks[: 4 - before]] == [False] * (4 - before)  # the first ones stay
        assert len(server.ledger.connections) == 4
        assert (await wire.send("TConnLimit", b"still served")).code == ResponseCode.SUCCESS
    finally:
        for sock in socks:
            sock.close()
