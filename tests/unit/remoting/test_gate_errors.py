"""At the gate: a client's malformed request is one warning line and SYSTEM_ERROR with the reason; a fault of
the server keeps its traceback; a deliberate refusal is not logged at all."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from rocketq.codes import ResponseCode
from rocketq.errors import ProtocolError, TopicNotExistError
from rocketq.protocol import RemotingCommand
from rocketq.protocol.headers import HeaderError
from rocketq.remoting import Connection, RemotingClient, RemotingDispatcher, RemotingServer

MALFORMED = 1000  # the body is not what the code requires
AMALFORMED = 1001  # the same from a coroutine processor
BAD_HEADER = 1002
BUG = 1003  # a fault of the server
REFUSED = 1004  # a deliberate refusal with its own code
HOOKED = 1005  # refused by a request hook that found the header malformed

WAIT = 10.0


class Gate:
    def __init__(self) -> None:
        d = self.dispatcher = RemotingDispatcher("gate-test")

        def malformed(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            raise ProtocolError("consumerDataSet is not a JSON array: 1")

        async def amalformed(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            raise ProtocolError("mqSet is not a JSON array: 7")

        def bad_header(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            raise HeaderError("the header field 'queueId' is not an integer: 'x'")

        def bug(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            return {}["missing"]  # type: ignore[no-any-return]

        def refused(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            raise TopicNotExistError("topic[T] not exist")

        def hook(conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
            if cmd.code == HOOKED:
                raise HeaderError("the header field 'topic' is missing")
            return None

        d.register(MALFORMED, malformed)
        d.register(AMALFORMED, amalformed)
        d.register(BAD_HEADER, bad_header)
        d.register(BUG, bug)
        d.register(REFUSED, refused)
        d.register(HOOKED, lambda conn, cmd: cmd.response(ResponseCode.SUCCESS))
        d.request_hooks.append(hook)
        self.server = RemotingServer(d, "127.0.0.1", 0)
        self.client = RemotingClient()
        self.addr = ""

    async def call(self, code: int) -> RemotingCommand:
        return await self.client.invoke(self.addr, RemotingCommand.request(code), timeout=WAIT)


@pytest.fixture
async def gate() -> AsyncIterator[Gate]:
    g = Gate()
    g.addr = f"127.0.0.1:{await g.server.start()}"
    try:
        yield g
    finally:
        await g.client.close()
        await g.server.close()


def records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("rocketq.remoting")]


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (MALFORMED, "consumerDataSet is not a JSON array: 1"),
        (AMALFORMED, "mqSet is not a JSON array: 7"),
        (BAD_HEADER, "the header field 'queueId' is not an integer: 'x'"),
        (HOOKED, "the header field 'topic' is missing"),
    ],
)
async def test_a_malformed_request_is_one_warning_line_without_traceback(
    gate: Gate, caplog: pytest.LogCaptureFixture, code: int, reason: str
) -> None:
    caplog.set_level(logging.DEBUG, "rocketq.remoting")
    resp = await gate.call(code)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, reason)
    (line,) = records(caplog)
    assert line.levelno == logging.WARNING and line.exc_info is None
    text = line.getMessage()
    assert "request.malformed" in text and f"code={code}" in text and reason in text and "remote=127.0.0.1:" in text
    # the same mistake again from the same peer: answered the same, not logged again for a while
    for _ in range(5):
        assert (await gate.call(code)).remark == reason
    assert len(records(caplog)) == 1
    assert gate.server.dispatcher.mistakes.suppressed_total == 5


async def test_a_fault_of_the_server_keeps_its_traceback(gate: Gate, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "rocketq.remoting")
    resp = await gate.call(BUG)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "KeyError" in (resp.remark or "")
    (line,) = records(caplog)
    assert line.levelno == logging.ERROR and line.exc_info is not None and line.exc_info[0] is KeyError


async def test_a_deliberate_refusal_is_answered_with_its_code_and_not_logged(
    gate: Gate, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "rocketq.remoting")
    resp = await gate.call(REFUSED)
    assert (resp.code, resp.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[T] not exist")
    assert records(caplog) == []
