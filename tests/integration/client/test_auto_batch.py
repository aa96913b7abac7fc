"""Auto-batching in the producer (RocketMQ 5.1 ``autoBatch``) against an embedded name server + broker, and its
requests on the wire against a scripted broker.

What a user relies on: far fewer requests than sends, each send settled with its own result (id, offset id,
queue offset) that names the message as the broker stored it, the orderly, delayed and transactional paths
untouched, and nothing held back at shutdown. Nothing here asserts on elapsed time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

from rocketq.client import (
    ClientConfig,
    InvalidMessageError,
    LitePullConsumer,
    LocalTransactionState,
    Message,
    MessageQueue,
    Producer,
    SendStatus,
    TransactionProducer,
)
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.message import decode_batch, decode_properties, make_offset_msg_id

from .test_cluster_roundtrip import FIRST


async def _stored(fast_config: Any, queues: set[MessageQueue], count: int, group: str) -> dict[str, Any]:
    """Every message of ``queues``, by its id, read back from the broker."""
    consumer = LitePullConsumer(group, config=fast_config(), auto_commit=False, consume_from_where=FIRST)
    consumer.assign(queues)
    got: dict[str, Any] = {}
    async with consumer:
        async with asyncio.timeout(30):
            while len(got) < count:
                for m in await consumer.poll(1.0):
                    got[m.msg_id] = m
    return got


async def test_async_sends_share_requests_and_get_their_own_results(cluster: Any, fast_config: Any) -> None:
    producer = Producer("pg-auto", config=fast_config(), auto_batch=True, batch_max_bytes=8 * 1024)
    async with producer:
        await producer.send(Message("AutoBatch", b"route"))  # a lone send: the delay sends it
        bodies = [f"m{i:03d}-".encode() + b"x" * 1000 for i in range(200)]
        futures = [producer.send_async(Message("AutoBatch", body, keys=f"k{i}")) for i, body in enumerate(bodies)]
        results = await asyncio.gather(*futures)
        acc = producer._accumulator
        assert acc.messages_batched == 201
        assert acc.batches_sent <= 40  # 8 KiB of 1 KiB bodies: ~8 per request, not one each
        assert acc.held_bytes == 0
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert len({r.msg_id for r in results}) == 200
    assert len({r.offset_msg_id for r in results}) == 200
    stored = await _stored(fast_config, {r.message_queue for r in results}, 200, "cg-auto-async")
    for result, body in zip(results, bodies, strict=True):
        msg = stored[result.msg_id]
        assert msg.body == body
        assert msg.offset_msg_id == result.offset_msg_id
        assert (msg.queue_id, msg.queue_offset) == (result.message_queue.queue_id, result.queue_offset)


async def test_sync_sends_to_one_queue_keep_their_order(cluster: Any, fast_config: Any) -> None:
    async with Producer("pg-auto-sync", config=fast_config(), auto_batch=True) as producer:
        queue = (await producer.send(Message("AutoSync", b"probe"))).message_queue
        sends = [producer.send(Message("AutoSync", f"s{i}".encode()), queue=queue) for i in range(50)]
        results = await asyncio.gather(*sends)
        assert producer._accumulator.batches_sent < 10
    offsets = [r.queue_offset for r in results]
    assert offsets == list(range(offsets[0], offsets[0] + 50))
    assert {r.message_queue for r in results} == {queue}
    stored = await _stored(fast_config, {queue}, 51, "cg-auto-sync")
    assert [stored[r.msg_id].body for r in results] == [f"s{i}".encode() for i in range(50)]


async def test_orderly_delayed_and_timed_sends_go_directly(cluster: Any, fast_config: Any) -> None:
    async with Producer("pg-auto-direct", config=fast_config(), auto_batch=True) as producer:
        for i in range(5):
            r = await producer.send_orderly(Message("AutoDirect", f"o{i}".encode()), "order-1")
            assert r.status is SendStatus.SEND_OK
        await producer.send(Message("AutoDirect", b"later", delay_level=1))
        await producer.send(Message("AutoDirect", b"own timeout"), timeout=5.0)
        await producer.send_oneway(Message("AutoDirect", b"oneway"))
        assert producer._accumulator.batches_sent == 0


async def test_transaction_half_messages_are_not_batched(cluster: Any, fast_config: Any) -> None:
    listener = SimpleNamespace(execute_local_transaction=lambda msg, arg: LocalTransactionState.COMMIT_MESSAGE,
                               check_local_transaction=lambda msg: LocalTransactionState.COMMIT_MESSAGE)  # fmt: skip
    producer = TransactionProducer("pg-auto-tx", listener, config=fast_config(), auto_batch=True)
    async with producer:
        result = await producer.send_message_in_transaction(Message("AutoTx", b"tx"), None)
        assert result.local_transaction_state is LocalTransactionState.COMMIT_MESSAGE
        assert producer._accumulator.batches_sent == 0


async def test_shutdown_sends_what_is_held(cluster: Any, fast_config: Any) -> None:
    producer = Producer("pg-auto-close", config=fast_config(), auto_batch=True, batch_max_delay_ms=30_000)
    async with producer:
        await producer.fetch_publish_message_queues("AutoClose")
        futures = [producer.send_async(Message("AutoClose", f"c{i}".encode())) for i in range(10)]
        await asyncio.sleep(0)
        assert not any(f.done() for f in futures)  # held: the delay is 30 s and 10 small bodies are under 32 KiB
    results = [f.result() for f in futures]
    assert producer._accumulator.batches_sent == 1
    stored = await _stored(fast_config, {r.message_queue for r in results}, 10, "cg-auto-close")
    assert sorted(m.body for m in stored.values()) == sorted(f"c{i}".encode() for i in range(10))


async def test_a_bad_message_fails_alone(cluster: Any, fast_config: Any) -> None:
    async with Producer("pg-auto-bad", config=fast_config(), auto_batch=True) as producer:
        good = [producer.send_async(Message("AutoBad", f"g{i}".encode())) for i in range(3)]
        bad = producer.send_async(Message("AutoBad", b""))
        with pytest.raises(InvalidMessageError):
            await bad
        with pytest.raises(InvalidMessageError):
            await producer.send(Message("AutoBad", b""))
        assert all(r.status is SendStatus.SEND_OK for r in await asyncio.gather(*good))


def test_knobs_are_checked_by_name() -> None:
    with pytest.raises(ValueError, match="batch_max_delay_ms"):
        Producer("pg", auto_batch=True, batch_max_delay_ms=0)
    with pytest.raises(ValueError, match="batch_max_bytes"):
        Producer("pg", auto_batch=True, batch_max_bytes=3 * 1024 * 1024)
    with pytest.raises(ValueError, match="total_batch_max_bytes"):
        Producer("pg", total_batch_max_bytes=0)


# -- on the wire, against a scripted broker -------------------------------------------------------------------


def _batch_answer(cmd: RemotingCommand) -> RemotingCommand:
    """SEND_BATCH_MESSAGE answered as a broker does: one offset id per stored message, comma-joined."""
    count = len(decode_batch(cmd.body))
    ids = ",".join(make_offset_msg_id(("127.0.0.1", 10911), 100 * i) for i in range(count))
    ext = {"msgId": ids, "queueId": cmd.ext_fields.get("e", "0"), "queueOffset": "7", "MSG_REGION": "DefaultRegion"}
    return cmd.response(ResponseCode.SUCCESS, ext_fields=ext)


@pytest.fixture
async def one_broker(fakes: SimpleNamespace) -> AsyncIterator[SimpleNamespace]:
    recorder = _batch_answer
    broker = await fakes.FakeServer("broker-a", {RequestCode.SEND_MESSAGE_V2: fakes.SendRecorder(),
                                                 RequestCode.SEND_BATCH_MESSAGE: recorder}).start()  # fmt: skip
    brokers = {"broker-a": {0: broker.addr}}
    ns = await fakes.namesrv_with_routes({"T": fakes.route_body([("broker-a", 1, 1, 6)], brokers)}).start()
    yield SimpleNamespace(broker=broker, ns=ns, recorder=recorder)
    for s in (broker, ns):
        await s.close()


def _producer(ns_addr: str, **kw: Any) -> Producer:
    cfg = ClientConfig(namesrv_addr=ns_addr, client_ip="10.0.0.7", heartbeat_broker_interval=3600)
    return Producer("pg", config=cfg, auto_batch=True, **kw)


async def test_the_batch_request_carries_tag_keys_and_each_message(one_broker: SimpleNamespace) -> None:
    async with _producer(one_broker.ns.addr) as p:
        futures = [p.send_async(Message("T", f"b{i}".encode(), tags="TagA", keys=[f"k{i}", "shared"]))
                   for i in range(4)]  # fmt: skip
        results = await asyncio.gather(*futures)
    [req] = one_broker.broker.of_code(RequestCode.SEND_BATCH_MESSAGE)
    assert req.ext_fields["m"] == "true"
    props = decode_properties(req.ext_fields["i"])
    assert props["TAGS"] == "TagA"
    assert set(props["KEYS"].split(" ")) == {"k0", "k1", "k2", "k3", "shared"}
    inner = decode_batch(req.body)
    assert [m.body for m in inner] == [f"b{i}".encode() for i in range(4)]
    assert [r.msg_id for r in results] == [m.properties["UNIQ_KEY"] for m in inner]
    assert [r.queue_offset for r in results] == [7, 8, 9, 10]
    assert len({r.offset_msg_id for r in results}) == 4


async def test_a_failed_batch_fails_each_send(fakes: SimpleNamespace) -> None:
    broker = await fakes.FakeServer("broker-a", {
        RequestCode.SEND_BATCH_MESSAGE: fakes.SendRecorder(fail_with=ResponseCode.MESSAGE_ILLEGAL)}).start()
    brokers = {"broker-a": {0: broker.addr}}
    ns = await fakes.namesrv_with_routes({"T": fakes.route_body([("broker-a", 1, 1, 6)], brokers)}).start()
    try:
        failures: list[BaseException] = []
        async with _producer(ns.addr) as p:
            futures = [p.send_async(Message("T", b"x"), on_exception=failures.append) for _ in range(3)]
            plain = p.send(Message("T", b"y"))
            with pytest.raises(BrokerError):
                await plain
            await asyncio.wait(futures)
        assert len(failures) == 3
        assert all(isinstance(e, BrokerError) and e.code == ResponseCode.MESSAGE_ILLEGAL for e in failures)
        assert p._accumulator.held_bytes == 0
    finally:
        await broker.close()
        await ns.close()
