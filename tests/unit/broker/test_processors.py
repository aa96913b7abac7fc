"""The remoting processors as thin adapters: a request in, the answer that leaves through the gate out."""

from __future__ import annotations

import asyncio

from tests.unit.broker.conftest import FakeConnection, RecordingRegistrar

from rocketq.broker.context import BrokerContext
from rocketq.broker.messaging.consumers import ConsumerService
from rocketq.broker.messaging.pull import PullService
from rocketq.broker.messaging.semantics import MessageSemantics
from rocketq.broker.messaging.send import SendService
from rocketq.broker.processors.clients import ClientProcessors
from rocketq.broker.processors.pull import PullProcessor
from rocketq.broker.processors.send import SendProcessor
from rocketq.broker.services.timer import TimerService
from rocketq.broker.services.transaction import TransactionService
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.message import encode_properties, iter_records


def send_request(topic: str, body: bytes, opaque: int) -> RemotingCommand:
    ext = {"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0",
           "i": encode_properties({"UNIQ_KEY": f"{opaque:032X}"}), "j": "0", "k": "false"}  # fmt: skip
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)
    cmd.opaque = opaque
    return cmd


def sender(ctx: BrokerContext) -> SendProcessor:
    sem = MessageSemantics(TransactionService(ctx), TimerService(ctx))
    proc = SendProcessor(ctx, SendService(ctx, sem))
    proc.start()
    return proc


async def settle(conn: FakeConnection, answers: int) -> None:
    async with asyncio.timeout(5):
        while len(conn.written) + len(conn.frames) < answers:
            await asyncio.sleep(0.001)


async def test_a_send_is_answered_with_its_id_and_offsets_after_its_topic_is_registered(ctx: BrokerContext) -> None:
    ctx.put_ack.start()
    proc = sender(ctx)
    answered: list[tuple[int, int]] = []
    ctx.gate.answer_hooks.append(lambda conn, cmd, code: answered.append((cmd.code, code)))
    conn = FakeConnection()
    assert proc.enqueue(conn, send_request("TProc", b"one", 1)) is None  # queued, answered later
    await settle(conn, 1)
    first = conn.written[0]
    assert first.code == ResponseCode.SUCCESS and first.opaque == 1
    assert {"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"} <= set(first.ext_fields)
    registrar = ctx.registrar
    assert isinstance(registrar, RecordingRegistrar) and registrar.registrations == 1
    proc.enqueue(conn, send_request("TProc", b"two", 2))  # the topic is known: a plain run, a JSON peer
    await settle(conn, 2)
    assert b'"queueOffset":"1"' in conn.frames[0] and registrar.registrations == 1
    assert answered == [(RequestCode.SEND_MESSAGE_V2, 0)] * 2  # every answer passed the gate's exit
    await proc.stop()


async def test_a_cpp_peer_gets_the_encoded_json_answer(ctx: BrokerContext) -> None:
    ctx.put_ack.start()
    proc = sender(ctx)
    conn = FakeConnection(language="CPP")
    proc.enqueue(conn, send_request("TCpp", b"one", 1))
    await settle(conn, 1)
    req = send_request("TCpp", b"two", 2)
    req.language = "CPP"
    proc.enqueue(conn, req)
    await settle(conn, 2)
    assert conn.frames and b'"queueOffset":"1"' in conn.frames[0]
    await proc.stop()


async def test_a_bad_header_is_answered_system_error(ctx: BrokerContext) -> None:
    proc = sender(ctx)
    conn = FakeConnection()
    bad = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "pg"}, b"x")
    proc.enqueue(conn, bad)
    no_queue = send_request("TBad", b"x", 2)
    del no_queue.ext_fields["e"]
    proc.enqueue(conn, no_queue)
    await settle(conn, 2)
    # as Java's answer to a processor that threw: SYSTEM_ERROR, the reason, no send extFields
    assert [(r.code, r.ext_fields) for r in conn.written] == [(ResponseCode.SYSTEM_ERROR, {})] * 2
    assert "'queueId' is missing" in (conn.written[1].remark or "")
    await proc.stop()


async def test_pull_answers_carry_the_four_header_fields(ctx: BrokerContext) -> None:
    ctx.put_ack.start()
    proc = sender(ctx)
    conn = FakeConnection()
    proc.enqueue(conn, send_request("TPullP", b"m0", 1))
    await settle(conn, 1)
    pull = PullProcessor(ctx, PullService(ctx))
    ext = {"consumerGroup": "cg", "topic": "TPullP", "queueId": "0", "queueOffset": "0", "maxMsgNums": "8",
           "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*",
           "subVersion": "0"}  # fmt: skip
    answer = pull.process(conn, RemotingCommand.request(RequestCode.PULL_MESSAGE, ext))  # type: ignore[arg-type]
    assert answer is not None and answer.code == ResponseCode.SUCCESS
    assert {k: answer.ext_fields[k] for k in ("suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset")} == {
        "suggestWhichBrokerId": "0", "nextBeginOffset": "1", "minOffset": "0", "maxOffset": "1"}  # fmt: skip
    assert [r.body for r in iter_records(answer.body)] == [b"m0"]
    missing = RemotingCommand.request(RequestCode.PULL_MESSAGE, {**ext, "topic": "TNone"})
    refused = pull.process(conn, missing)  # type: ignore[arg-type]
    assert refused is not None and refused.code == ResponseCode.TOPIC_NOT_EXIST
    assert "nextBeginOffset" not in refused.ext_fields
    await proc.stop()


def test_offset_queries(ctx: BrokerContext) -> None:
    clients = ClientProcessors(ctx, ConsumerService(ctx))
    conn = FakeConnection()
    ext = {"consumerGroup": "cg", "topic": "TOffP", "queueId": "0"}
    update = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {**ext, "commitOffset": "5"})
    assert clients.update_consumer_offset(conn, update).code == ResponseCode.SUCCESS  # type: ignore[arg-type]
    query = RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, ext)
    answer = clients.query_consumer_offset(conn, query)  # type: ignore[arg-type]
    assert answer.code == ResponseCode.SUCCESS and answer.ext_fields["offset"] == "5"

