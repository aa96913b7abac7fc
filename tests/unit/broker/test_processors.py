"""The remoting processors as thin adapters: a request in, the answer that leaves through the gate out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.unit.broker.conftest import FakeConnection, RecordingRegistrar, make_context

from rocketq.broker.context import BrokerContext
from rocketq.broker.messaging.consumers import ConsumerService
from rocketq.broker.messaging.pull import PullService
from rocketq.broker.messaging.semantics import MessageSemantics
from rocketq.broker.messaging.send import SendService
from rocketq.broker.processors import send as send_processor
from rocketq.broker.processors.clients import ClientProcessors
from rocketq.broker.processors.pull import PullProcessor
from rocketq.broker.processors.send import SendProcessor
from rocketq.broker.services.timer import TimerService
from rocketq.broker.services.transaction import TransactionService
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.command import FLAG_ONEWAY, SERIALIZE_ROCKETMQ, RemotingCommand
from rocketq.protocol.framecodec import decode_frames
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


async def sender_with_topic(ctx: BrokerContext, topic: str) -> tuple[SendProcessor, FakeConnection]:
    """A started send queue whose first send (opaque 1) created ``topic`` the general way and was answered; the
    gate's answer counts start from zero after it, and later sends to ``topic`` join runs."""
    ctx.put_ack.start()
    proc = sender(ctx)
    conn = FakeConnection()
    proc.enqueue(conn, send_request(topic, b"first", 1))
    await settle(conn, 1)
    ctx.gate.answer_counts.clear()
    return proc, conn


async def test_a_run_without_answer_hooks_is_answered_and_counted_per_request_code(ctx: BrokerContext) -> None:
    """The run's own answer loop (``_answer_run``): each send its own offsets, one-way sends counted and not
    written, a ROCKETMQ-serialized peer answered with a command, every answer counted as ``answered`` counts."""
    proc, conn = await sender_with_topic(ctx, "TRunA")
    counts = ctx.gate.answer_counts
    oneway = send_request("TRunA", b"oneway", 3)
    oneway.flag |= FLAG_ONEWAY
    binary = send_request("TRunA", b"binary", 5)
    binary.serialize_type = SERIALIZE_ROCKETMQ
    for cmd in (send_request("TRunA", b"a", 2), oneway, send_request("TRunA", b"b", 4), binary):
        proc.enqueue(conn, cmd)  # queued together: one drain, one run
    await settle(conn, 4)
    assert [f.count(b'"queueOffset":"') for f in conn.frames] == [1, 1]
    assert b'"queueOffset":"1"' in conn.frames[0] and b'"queueOffset":"3"' in conn.frames[1]
    assert [(r.code, r.opaque, r.ext_fields["queueOffset"]) for r in conn.written[1:]] == [(0, 5, "4")]
    assert dict(counts) == {(RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS): 4}
    await proc.stop()


async def test_a_stretch_of_usual_answers_leaves_as_one_piece(ctx: BrokerContext) -> None:
    """``_answer_run``: the answers of one connection's consecutive plain sends are written in one piece (one
    write), each with its own opaque and offsets, and counted."""
    proc, conn = await sender_with_topic(ctx, "TPiece")
    proc.enqueue_stretch(conn, [send_request("TPiece", b"m", opaque) for opaque in (2, 3, 4)])
    await settle(conn, 2)  # the first send's answer, then the piece
    assert len(conn.frames) == 1
    piece = conn.frames[0]
    frames = decode_frames(bytearray(piece), 1 << 20)
    assert frames[1] == len(piece) and frames[2] is None
    assert [(r.opaque, r.ext_fields["queueOffset"]) for r in frames[0]] == [(2, "1"), (3, "2"), (4, "3")]
    assert ctx.gate.answer_counts[(RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS)] == 3
    await proc.stop()


async def test_a_stretch_beyond_the_queue_capacity_is_refused_from_where_it_overflows(tmp_path: Path) -> None:
    """``enqueue_stretch`` queues what fits (``sendQueueCapacity`` counts sends, not stretches) and answers the
    rest SYSTEM_BUSY at once, in order."""
    ctx = make_context(tmp_path, sendQueueCapacity=3)
    proc = sender(ctx)
    try:
        conn = FakeConnection()  # no await below: the drain has not run yet
        proc.enqueue_stretch(conn, [send_request("TCap", b"m", opaque) for opaque in (1, 2)])
        proc.enqueue_stretch(conn, [send_request("TCap", b"m", opaque) for opaque in (3, 4, 5)])
        assert proc.queue_size() == 3
        busy = ResponseCode.SYSTEM_BUSY
        assert [(r.opaque, r.code) for r in conn.written] == [(4, busy), (5, busy)]
        refused = proc.enqueue(conn, send_request("TCap", b"m", 6))
        assert refused is not None and refused.code == ResponseCode.SYSTEM_BUSY
    finally:
        await proc.stop()
        ctx.store.shutdown()
        ctx.persister.close()


async def test_answers_around_a_failing_one_still_leave(ctx: BrokerContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the stretch's answers fail to encode, each send is answered alone; when one of those fails too, it is
    answered SYSTEM_ERROR (as Java's remoting answers a processor that threw), the others are still written and
    counted, and the sends queued behind the run go on."""
    proc, conn = await sender_with_topic(ctx, "TGather")
    counts = ctx.gate.answer_counts
    real = send_processor.encode_send_reply

    def broken(*args: object) -> tuple[bytes, int]:
        raise RuntimeError("stretch encoder broke")

    def third_fails(opaque: int, *rest: object) -> bytes:
        if opaque == 4:
            raise RuntimeError("encoder broke")
        return real(opaque, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(send_processor, "plain_answers", broken)
    monkeypatch.setattr(send_processor, "encode_send_reply", third_fails)
    delayed = send_request("TGather", b"d", 5)
    delayed.ext_fields["i"] = encode_properties({"UNIQ_KEY": f"{5:032X}", "DELAY": "1"})  # the general path
    for cmd in (*(send_request("TGather", b"m", opaque) for opaque in (2, 3, 4)), delayed):
        proc.enqueue(conn, cmd)  # one drain: the run of three, stored when the delayed send comes
    await settle(conn, 5)
    assert [f.count(b'"opaque":') for f in conn.frames] == [1, 1]
    assert b'"opaque":2' in conn.frames[0] and b'"opaque":3' in conn.frames[1]
    # two of the run (not the one whose answer failed) and the delayed one
    assert counts[(RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS)] == 3
    assert counts[(RequestCode.SEND_MESSAGE_V2, ResponseCode.SYSTEM_ERROR)] == 1
    # the failing one answered with the error; the send queued behind it in the same drain was served
    failed, delayed_answer = conn.written[1:]
    assert (failed.opaque, failed.code) == (4, ResponseCode.SYSTEM_ERROR) and "encoder broke" in (failed.remark or "")
    assert failed.ext_fields["MSG_REGION"] and "msgId" not in failed.ext_fields
    assert (delayed_answer.opaque, delayed_answer.code) == (5, ResponseCode.SUCCESS)
    await proc.stop()


async def test_a_failing_answer_of_a_hooked_run_is_an_error_answer(
    ctx: BrokerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an answer hook the run is answered send by send (``_answer_stored_run``): one answer that fails to
    build is answered SYSTEM_ERROR, through the hooks like any other, and the rest of the run succeed."""
    proc, conn = await sender_with_topic(ctx, "THooked")
    seen: list[tuple[int, int]] = []
    ctx.gate.answer_hooks.append(lambda c, cmd, code: seen.append((cmd.opaque, code)))
    real = send_processor.encode_send_reply

    def second_fails(opaque: int, *rest: object) -> bytes:
        if opaque == 3:
            raise RuntimeError("encoder broke")
        return real(opaque, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(send_processor, "encode_send_reply", second_fails)
    for opaque in (2, 3, 4):
        proc.enqueue(conn, send_request("THooked", b"m", opaque))  # one drain, one run
    await settle(conn, 4)
    assert seen == [(2, ResponseCode.SUCCESS), (3, ResponseCode.SYSTEM_ERROR), (4, ResponseCode.SUCCESS)]
    assert [(r.opaque, r.code) for r in conn.written[1:]] == [(3, ResponseCode.SYSTEM_ERROR)]
    assert b'"opaque":2' in conn.frames[0] and b'"opaque":4' in conn.frames[1]
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



async def test_a_failing_answer_after_a_flush_wait_is_an_error_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under SYNC_FLUSH a run's answers wait for the flush together (``_answer_held``): one that fails to build
    is answered SYSTEM_ERROR, and the others of the run still get their success."""
    ctx = make_context(tmp_path, flushDiskType="SYNC_FLUSH")
    try:
        proc, conn = await sender_with_topic(ctx, "THeld")
        real = send_processor.encode_send_reply

        def first_fails(opaque: int, *rest: object) -> bytes:
            if opaque == 2:
                raise RuntimeError("encoder broke")
            return real(opaque, *rest)  # type: ignore[arg-type]

        monkeypatch.setattr(send_processor, "encode_send_reply", first_fails)
        for opaque in (2, 3):
            proc.enqueue(conn, send_request("THeld", b"m", opaque))
        await settle(conn, 3)
        assert [(r.opaque, r.code) for r in conn.written[1:]] == [(2, ResponseCode.SYSTEM_ERROR)]
        assert len(conn.frames) == 1 and b'"opaque":3' in conn.frames[0]
        await proc.stop()
    finally:
        ctx.store.shutdown()
        ctx.persister.close()
