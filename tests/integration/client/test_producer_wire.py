"""The producer's requests, byte for byte where it matters, against scripted fake servers.

Checks what a Java broker expects from a Java 4.9.8 client: SEND_MESSAGE_V2 (310) with V2 keys,
SEND_BATCH_MESSAGE (320), string extFields, UNIQ_KEY, zlib bodies flagged 0x1|0x300, TBW102 as default
topic, heartbeats with producerDataSet; and the failure policy: retriable codes go to another broker,
others raise at once.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from rocketq.client import (
    ClientConfig,
    InvalidMessageError,
    Message,
    NoRouteError,
    Producer,
    SendFailedError,
    SendStatus,
    SendTimeoutError,
)
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError, MessageIllegalError, RemotingConnectError
from rocketq.protocol.command import FLAG_ONEWAY
from rocketq.protocol.message import decode_batch, decode_properties


@pytest.fixture
async def two_brokers(fakes: SimpleNamespace) -> AsyncIterator[SimpleNamespace]:
    a = await fakes.FakeServer("broker-a", {RequestCode.SEND_MESSAGE_V2: fakes.SendRecorder(),
                                            RequestCode.SEND_BATCH_MESSAGE: fakes.SendRecorder()}).start()  # fmt: skip
    b = await fakes.FakeServer("broker-b", {RequestCode.SEND_MESSAGE_V2: fakes.SendRecorder()}).start()
    brokers = {"broker-a": {0: a.addr}, "broker-b": {0: b.addr}}
    routes = {
        "T": fakes.route_body([("broker-a", 2, 2, 6), ("broker-b", 2, 2, 6)], brokers),
        "TBW102": fakes.route_body([("broker-a", 8, 8, 7)], {"broker-a": {0: a.addr}}),
    }
    ns = await fakes.namesrv_with_routes(routes).start()
    yield SimpleNamespace(a=a, b=b, ns=ns, routes=routes)
    for s in (a, b, ns):
        await s.close()


def _producer(ns_addr: str, **kw: Any) -> Producer:
    cfg = ClientConfig(namesrv_addr=ns_addr, client_ip="10.0.0.7", heartbeat_broker_interval=3600)
    return Producer("pg", config=cfg, **kw)


async def test_send_request_is_java_v2(two_brokers: SimpleNamespace) -> None:
    async with _producer(two_brokers.ns.addr) as p:
        result = await p.send(Message("T", b"hello", tags="TagA", keys="k1 k2"))
        big = await p.send(Message("T", b"x" * 5000))
    assert result.status is SendStatus.SEND_OK
    sends = two_brokers.a.of_code(RequestCode.SEND_MESSAGE_V2) + two_brokers.b.of_code(RequestCode.SEND_MESSAGE_V2)
    assert len(sends) == 2
    first = next(s for s in sends if s.body == b"hello")
    ext = first.ext_fields
    assert first.language == "PYTHON" and first.version == 409
    assert set(ext) == {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "m", "n"}
    assert (ext["a"], ext["b"], ext["c"], ext["d"], ext["f"], ext["h"], ext["j"], ext["k"], ext["m"]) == (
        "pg", "T", "TBW102", "4", "0", "0", "0", "false", "false",
    )  # fmt: skip
    assert ext["n"] in ("broker-a", "broker-b")
    assert not ext["i"].endswith("\x02")  # Java drops the trailing separator
    props = decode_properties(ext["i"])
    assert props["TAGS"] == "TagA" and props["KEYS"] == "k1 k2" and props["WAIT"] == "true"
    assert props["UNIQ_KEY"] == result.msg_id and len(result.msg_id) == 32 and result.msg_id.startswith("0A000007")
    assert len(result.offset_msg_id) == 32
    compressed = next(s for s in sends if s.body != b"hello")
    assert int(compressed.ext_fields["f"]) == 0x301
    assert zlib.decompress(compressed.body) == b"x" * 5000
    assert big.status is SendStatus.SEND_OK


async def test_heartbeat_and_unregister(two_brokers: SimpleNamespace) -> None:
    async with _producer(two_brokers.ns.addr) as p:
        await p.send(Message("T", b"x"))
        await p.instance.send_heartbeat_to_all_brokers()
        client_id = p.client_id
    beats = two_brokers.a.of_code(RequestCode.HEART_BEAT)
    assert beats
    body = orjson.loads(beats[-1].body)
    assert body["clientID"] == client_id and client_id.startswith("10.0.0.7@")
    assert body["producerDataSet"] == [{"groupName": "pg"}] and body["consumerDataSet"] == []
    unreg = two_brokers.a.of_code(RequestCode.UNREGISTER_CLIENT)
    assert unreg and unreg[-1].ext_fields == {"clientID": client_id, "producerGroup": "pg"}


async def test_retriable_error_goes_to_the_other_broker(two_brokers: SimpleNamespace, fakes: SimpleNamespace) -> None:
    two_brokers.a.handlers[RequestCode.SEND_MESSAGE_V2] = fakes.SendRecorder(fail_with=ResponseCode.SYSTEM_ERROR)
    async with _producer(two_brokers.ns.addr) as p:
        for _ in range(6):
            r = await p.send(Message("T", b"x"))
            assert r.message_queue.broker_name == "broker-b"


async def test_non_retriable_error_raises_at_once(two_brokers: SimpleNamespace, fakes: SimpleNamespace) -> None:
    for s in (two_brokers.a, two_brokers.b):
        s.handlers[RequestCode.SEND_MESSAGE_V2] = fakes.SendRecorder(fail_with=ResponseCode.MESSAGE_ILLEGAL)
    async with _producer(two_brokers.ns.addr) as p:
        with pytest.raises(MessageIllegalError):
            await p.send(Message("T", b"x"))
    assert len(two_brokers.a.of_code(310)) + len(two_brokers.b.of_code(310)) == 1


async def test_all_attempts_failing_raise_send_failed(two_brokers: SimpleNamespace, fakes: SimpleNamespace) -> None:
    for s in (two_brokers.a, two_brokers.b):
        s.handlers[RequestCode.SEND_MESSAGE_V2] = fakes.SendRecorder(fail_with=ResponseCode.SERVICE_NOT_AVAILABLE)
    async with _producer(two_brokers.ns.addr) as p:
        with pytest.raises(SendFailedError) as info:
            await p.send(Message("T", b"x"))
    assert len(info.value.brokers_tried) == 3
    assert info.value.brokers_tried[0] != info.value.brokers_tried[1]  # the retry avoids the failed broker


async def test_tbw102_fallback_for_unknown_topic(two_brokers: SimpleNamespace) -> None:
    async with _producer(two_brokers.ns.addr) as p:
        queues = await p.fetch_publish_message_queues("Brand-New")
        r = await p.send(Message("Brand-New", b"x"))
    assert [(q.topic, q.broker_name, q.queue_id) for q in queues] == [("Brand-New", "broker-a", i) for i in range(4)]
    asked = [c.ext_fields["topic"] for c in two_brokers.ns.of_code(RequestCode.GET_ROUTEINFO_BY_TOPIC)]
    assert "Brand-New" in asked and "TBW102" in asked
    send = two_brokers.a.of_code(RequestCode.SEND_MESSAGE_V2)[-1]
    assert send.ext_fields["b"] == "Brand-New" and send.ext_fields["c"] == "TBW102"
    assert r.message_queue.topic == "Brand-New"


async def test_no_route_at_all(fakes: SimpleNamespace) -> None:
    ns = await fakes.namesrv_with_routes({}).start()
    try:
        async with _producer(ns.addr) as p:
            with pytest.raises(NoRouteError):
                await p.send(Message("Nope", b"x"))
    finally:
        await ns.close()


async def test_batch_is_code_320_and_oneway_sets_the_flag(two_brokers: SimpleNamespace) -> None:
    two_brokers.routes["T"] = two_brokers.routes["TBW102"].replace(b"TBW102", b"T")
    async with _producer(two_brokers.ns.addr) as p:
        msgs = [Message("T", f"m{i}".encode(), keys=f"k{i}") for i in range(3)]
        results = await p.send_batch(msgs)
        await p.send_oneway(Message("T", b"one"))
        await asyncio.sleep(0.1)
    assert len(results) == 1 and results[0].msg_id == ",".join(m.uniq_key or "" for m in msgs)
    batch = two_brokers.a.of_code(RequestCode.SEND_BATCH_MESSAGE)[-1]
    assert batch.ext_fields["m"] == "true" and decode_properties(batch.ext_fields["i"]) == {"WAIT": "true"}
    items = decode_batch(batch.body)
    assert [i.body for i in items] == [b"m0", b"m1", b"m2"]
    assert [i.properties["UNIQ_KEY"] for i in items] == [m.uniq_key for m in msgs]
    oneway = [c for c in two_brokers.a.of_code(RequestCode.SEND_MESSAGE_V2) if c.body == b"one"]
    assert oneway and oneway[0].flag & FLAG_ONEWAY


async def test_selector_and_orderly_send(two_brokers: SimpleNamespace) -> None:
    async with _producer(two_brokers.ns.addr) as p:
        queues = await p.fetch_publish_message_queues("T")
        picks = {(await p.send_orderly(Message("T", b"x"), "order-17")).message_queue for _ in range(5)}
        chosen = await p.send(Message("T", b"y"), selector=lambda mqs, m, arg: mqs[arg], arg=3)
        direct = await p.send(Message("T", b"z"), queue=queues[0])
    assert len(picks) == 1
    assert chosen.message_queue == queues[3]
    assert direct.message_queue == queues[0]
    with pytest.raises(InvalidMessageError):
        await _check_invalid(two_brokers.ns.addr)


async def _check_invalid(ns: str) -> None:
    async with _producer(ns) as p:
        await p.send(Message("T", b""))


async def test_async_send_callbacks_and_same_broker_retries(fakes: SimpleNamespace) -> None:
    # broker-a's address refuses connections: an async send retries the same broker, then reports the failure.
    dead = "127.0.0.1:1"
    routes = {"T": fakes.route_body([("broker-a", 1, 1, 6)], {"broker-a": {0: dead}})}
    ns = await fakes.namesrv_with_routes(routes).start()
    errors: list[BaseException] = []
    try:
        async with _producer(ns.addr) as p:
            fut = p.send_async(Message("T", b"x"), on_exception=errors.append)
            with pytest.raises(RemotingConnectError):
                await fut
    finally:
        await ns.close()
    assert len(errors) == 1 and isinstance(errors[0], RemotingConnectError)


async def test_async_send_success_callback(two_brokers: SimpleNamespace) -> None:
    got: list[Any] = []
    async with _producer(two_brokers.ns.addr) as p:
        futs = [p.send_async(Message("T", f"{i}".encode()), on_success=got.append) for i in range(50)]
        results = await asyncio.gather(*futs)
    assert len(got) == 50 and {r.msg_id for r in results} == {r.msg_id for r in got}


async def test_async_send_broker_error_and_flaky_answers(fakes: SimpleNamespace) -> None:
    # The task-less path (route cached, connection open): a broker error code reaches the future and on_exception
    # once, without a retry; a success after it works; an unanswered request times out, its retry on the same
    # broker finds no time left, and the send is reported as timed out.
    answers: list[int | None] = [ResponseCode.SUCCESS, ResponseCode.SYSTEM_BUSY, ResponseCode.SUCCESS, None, None]
    recorder = fakes.SendRecorder()

    def handler(cmd: Any) -> Any:
        code = answers.pop(0)
        if code is None:
            return None
        recorder.fail_with = None if code == ResponseCode.SUCCESS else code
        return recorder(cmd)

    broker = await fakes.FakeServer("broker-a", {RequestCode.SEND_MESSAGE_V2: handler}).start()
    routes = {"T": fakes.route_body([("broker-a", 1, 1, 6)], {"broker-a": {0: broker.addr}})}
    ns = await fakes.namesrv_with_routes(routes).start()
    ok: list[Any] = []
    errors: list[BaseException] = []
    try:
        async with _producer(ns.addr) as p:
            first = await p.send_async(Message("T", b"warm"), on_success=ok.append)  # route + connection
            busy = p.send_async(Message("T", b"busy"), on_success=ok.append, on_exception=errors.append)
            with pytest.raises(BrokerError) as info:
                await busy
            assert info.value.code == ResponseCode.SYSTEM_BUSY
            second = await p.send_async(Message("T", b"again"), on_success=ok.append)
            lost = p.send_async(Message("T", b"lost"), on_exception=errors.append, timeout=0.3)
            with pytest.raises(SendTimeoutError) as lost_info:
                await lost
    finally:
        await ns.close()
        await broker.close()
    assert ok == [first, second] and first.status is SendStatus.SEND_OK and first.msg_id != second.msg_id
    assert len(errors) == 2 and errors[0] is info.value and errors[1] is lost_info.value
    sends = broker.of_code(RequestCode.SEND_MESSAGE_V2)
    assert [s.body for s in sends] == [b"warm", b"busy", b"again", b"lost"]


async def test_async_send_future_cancelled_by_the_caller(two_brokers: SimpleNamespace) -> None:
    called: list[Any] = []
    async with _producer(two_brokers.ns.addr) as p:
        await p.send_async(Message("T", b"warm"))
        fut = p.send_async(Message("T", b"x"), on_success=called.append, on_exception=called.append)
        assert isinstance(fut, asyncio.Future) and not fut.done()
        fut.cancel()
        after = await p.send_async(Message("T", b"y"))  # the cancelled send's answer came before this one's
    assert fut.cancelled() and called == [] and after.status is SendStatus.SEND_OK
