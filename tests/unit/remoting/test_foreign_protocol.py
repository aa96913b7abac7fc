"""A RocketMQ 5 gRPC client (HTTP/2 preface) on a remoting port gets its connection closed and the operator one
clear line naming it — not "frame length 1347569952" (issue 20, item 20)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol import RemotingCommand
from rocketq.remoting import Connection, RemotingClient, RemotingDispatcher, RemotingServer, foreign
from rocketq.remoting.foreign import HTTP2_PREFACE, foreign_protocol

WAIT = 10.0
# what grpc-java's Netty sends first: the preface, then a SETTINGS frame
GRPC_OPENING = HTTP2_PREFACE + bytes.fromhex("000012040000000000000300000064000400100000000600002000")


@pytest.mark.parametrize(
    ("data", "protocol"),
    [
        (GRPC_OPENING, "HTTP/2"),
        (HTTP2_PREFACE[:6], "HTTP/2"),  # a first read cut short
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1"),
        (bytes.fromhex("160301020001"), "TLS"),
        (bytes.fromhex("000000c8000000b4"), None),  # a remoting frame
        (b"PRI", None),  # too short to say
        (b"PRIX", None),
    ],
)
def test_foreign_protocol(data: bytes, protocol: str | None) -> None:
    assert foreign_protocol(data) == protocol


@pytest.fixture
async def server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    monkeypatch.setattr(foreign, "_lines", foreign.RateLimitedLog(foreign.log))  # a fresh per-peer budget
    dispatcher = RemotingDispatcher("foreign-test")

    def echo(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS)

    dispatcher.register(RequestCode.HEART_BEAT, echo)
    srv = RemotingServer(dispatcher, "127.0.0.1", 0)
    port = await srv.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await srv.close()


async def _send_and_wait_close(addr: str, data: bytes) -> bytes:
    host, port = addr.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(data)
        await writer.drain()
        async with asyncio.timeout(WAIT):
            return await reader.read()  # b"" once the server has closed the connection
    finally:
        writer.close()


async def test_a_grpc_client_is_named_and_closed(server: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "rocketq.remoting")
    assert await _send_and_wait_close(server, GRPC_OPENING) == b""  # closed, nothing answered
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("rocketq.remoting")]
    assert len(lines) == 1, lines
    assert "remoting.foreign_protocol" in lines[0] and "protocol=HTTP/2" in lines[0]
    assert "RocketMQ 5 gRPC client" in lines[0] and "1347569952" not in lines[0]

    # it reconnects in a loop: no second line for the same host within the interval
    assert await _send_and_wait_close(server, GRPC_OPENING) == b""
    assert [r for r in caplog.records if "foreign_protocol" in r.getMessage()] == [caplog.records[0]]

    # the port still serves remoting clients
    client = RemotingClient()
    try:
        answer = await client.invoke(server, RemotingCommand.request(RequestCode.HEART_BEAT), timeout=WAIT)
        assert answer.code == ResponseCode.SUCCESS
    finally:
        await client.close()


async def test_a_bad_remoting_frame_is_still_a_frame_error(server: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "rocketq.remoting")
    assert await _send_and_wait_close(server, bytes.fromhex("7fffffff00000000")) == b""
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("rocketq.remoting")]
    assert any("frame.rejected" in m for m in messages) and not any("foreign_protocol" in m for m in messages)
