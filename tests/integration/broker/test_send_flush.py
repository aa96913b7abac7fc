"""The send path under SYNC_FLUSH: answers wait for the flush, WAIT=false does not, completions batch per hop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

from rocketq.broker.processors import send as send_processor
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.message import BatchItem, encode_batch, encode_properties
from rocketq.store import PutMessageResult, PutMessageStatus
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire, records

SYNC = pytest.mark.parametrize("cluster", [{"flushDiskType": "SYNC_FLUSH"}], indirect=True)

Held = list[tuple[int, Callable[[bool], None]]]


def hold_flushes(cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch) -> Held:
    """Flush requests are kept, not served: the test decides when (and how) each one completes."""
    held: Held = []
    monkeypatch.setattr(cluster.broker.store, "request_flush", lambda end, cb: held.append((end, cb)))
    return held


async def wait_for(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(5):
        while not predicate():
            await asyncio.sleep(0.005)


def sends(wire: Wire, n: int, props: dict[str, str] | None = None) -> list[asyncio.Task[RemotingCommand]]:
    return [asyncio.create_task(wire.send("TFlush", f"m{i}".encode(), props=props)) for i in range(n)]


@SYNC
async def test_answer_waits_for_the_flush_and_one_hop_carries_a_batch(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await wire.send("TFlush", b"warm-up")).code == ResponseCode.SUCCESS  # topic and connection exist
    held = hold_flushes(cluster, monkeypatch)
    send = cluster.broker.put_ack
    tasks = sends(wire, 20)
    store = cluster.broker.store
    # plain sends are stored in runs, each run one flush request for its last byte: wait until all 20 are in
    await wait_for(lambda: store.get_max_offset_in_queue("TFlush", 0) == 21 and bool(held)
                   and max(end for end, _ in held) == store.get_max_phy_offset())  # fmt: skip
    await asyncio.sleep(0.05)
    assert not any(t.done() for t in tasks)  # stored, not yet durable: nobody is answered
    assert 1 <= len(held) <= 20

    hops, replies = send.flush_hops, send.flush_replies
    for _, cb in held:  # one flush covering every request, completing them back to back
        cb(True)
    answers = await asyncio.gather(*tasks)
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * 20
    assert all({"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"} <= set(a.ext_fields) for a in answers)
    assert sorted(int(a.ext_fields["queueOffset"]) for a in answers) == list(range(1, 21))
    assert send.flush_hops == hops + 1
    assert send.flush_replies == replies + len(held)  # one completion per flush request (a run or a send)


@SYNC
async def test_completions_from_the_flush_thread_and_failures(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = hold_flushes(cluster, monkeypatch)
    tasks = sends(wire, 10)
    await wait_for(lambda: len(held) == 10)

    def complete() -> None:  # as the store's group-commit thread does: the first half flushed, then a timeout
        for i, (_, cb) in enumerate(held):
            cb(i < 5)

    worker = threading.Thread(target=complete)
    worker.start()
    answers = await asyncio.gather(*tasks)
    worker.join()
    codes = [a.code for a in answers]
    assert codes[:5] == [ResponseCode.SUCCESS] * 5
    assert codes[5:] == [ResponseCode.FLUSH_DISK_TIMEOUT] * 5
    assert all("queueOffset" in a.ext_fields and "MSG_REGION" in a.ext_fields for a in answers)


@SYNC
async def test_wait_false_is_answered_without_waiting_for_the_flush(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = hold_flushes(cluster, monkeypatch)
    async with asyncio.timeout(5):
        resp = await wire.send("TFlush", b"fire and forget", props={"WAIT": "false"})
    assert resp.code == ResponseCode.SUCCESS and "msgId" in resp.ext_fields
    assert len(held) == 1  # the flush was still requested (Java wakes the flush service)

    waiting = sends(wire, 1)  # WAIT=true still waits
    await wait_for(lambda: len(held) == 2)
    await asyncio.sleep(0.05)
    assert not waiting[0].done()
    held[1][1](True)
    assert (await waiting[0]).code == ResponseCode.SUCCESS


@SYNC
async def test_wait_false_message_is_stored_and_flushed(wire: Wire, cluster: EmbeddedCluster) -> None:
    resp = await wire.send("TFlush", b"no wait", props={"WAIT": "false"})
    assert resp.code == ResponseCode.SUCCESS
    store = cluster.broker.store
    await wait_for(lambda: store.commit_log.mfq.flushed_where >= store.get_max_phy_offset())
    pulled = await wire.pull("TFlush", int(resp.ext_fields["queueId"]), int(resp.ext_fields["queueOffset"]))
    assert pulled.code == ResponseCode.SUCCESS


async def test_topic_checks_are_not_cached_for_refused_names(wire: Wire) -> None:
    for _ in range(2):
        assert (await wire.send("bad topic!", b"x")).code == ResponseCode.SYSTEM_ERROR
        assert (await wire.send("SCHEDULE_TOPIC_XXXX", b"x")).code == ResponseCode.NO_PERMISSION
        assert (await wire.send("TGood", b"x")).code == ResponseCode.SUCCESS


async def test_store_failures_map_to_java_codes(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = cluster.broker.store
    cases = [
        (PutMessageStatus.CREATE_MAPEDFILE_FAILED, ResponseCode.SYSTEM_ERROR, "create mapped file failed"),
        (PutMessageStatus.MESSAGE_ILLEGAL, ResponseCode.MESSAGE_ILLEGAL, "illegal"),
        (PutMessageStatus.SERVICE_NOT_AVAILABLE, ResponseCode.SERVICE_NOT_AVAILABLE, "service not available"),
        (PutMessageStatus.UNKNOWN_ERROR, ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
    ]
    for n, (status, code, remark) in enumerate(cases):
        monkeypatch.setattr(store, "put_message", lambda msg, status=status: PutMessageResult(status))
        monkeypatch.setattr(store, "put_plain_messages", lambda msgs, host, status=status: [status] * len(msgs))
        # a topic's first send is stored on its own (the topic is created then); the next ones in runs
        for path in ("single", "run"):
            resp = await wire.send(f"TFail{n}", b"x")
            assert resp.code == code and remark in (resp.remark or ""), (path, status, resp.code, resp.remark)
            assert "MSG_REGION" in resp.ext_fields


async def test_a_bug_in_the_run_path_answers_instead_of_losing_sends(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await wire.send("TBug", b"first")).code == ResponseCode.SUCCESS  # the topic exists: sends take runs
    service = cluster.broker.send_service

    def broken(*args: object) -> object:
        raise RuntimeError("run bug")

    monkeypatch.setattr(send_processor, "plain_send_v2", broken)  # the V2 fast read, then the header way:
    monkeypatch.setattr(service, "prepare_plain", broken)  # both broken, the send goes the general way, stored
    assert (await wire.send("TBug", b"second")).code == ResponseCode.SUCCESS
    monkeypatch.undo()
    monkeypatch.setattr(cluster.broker.store, "put_plain_messages", broken)  # answered, not lost
    resp = await wire.send("TBug", b"third")
    assert resp.code == ResponseCode.SYSTEM_ERROR and "run bug" in (resp.remark or "")
    monkeypatch.undo()
    assert (await wire.send("TBug", b"fourth")).code == ResponseCode.SUCCESS
    bodies = [m.body for m in records(await wire.pull("TBug", 0, 0))]
    assert bodies == [b"first", b"second", b"fourth"]


@SYNC
async def test_batch_with_wait_false_is_answered_without_waiting(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await wire.send("TFlush", b"warm-up")).code == ResponseCode.SUCCESS
    held = hold_flushes(cluster, monkeypatch)
    items = [BatchItem(0, f"b{i}".encode(), {"UNIQ_KEY": f"BATCHKEY{i}"}) for i in range(3)]

    async def batch(wait: str) -> RemotingCommand:
        ext = {"a": "pg", "b": "TFlush", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0",
               "i": encode_properties({"WAIT": wait}), "j": "0", "k": "false", "m": "true"}
        return await wire.call(RequestCode.SEND_BATCH_MESSAGE, ext, encode_batch(items))

    async with asyncio.timeout(5):
        resp = await batch("false")
    assert resp.code == ResponseCode.SUCCESS and len(resp.ext_fields["msgId"].split(",")) == 3
    waiting = asyncio.create_task(batch("true"))
    await wait_for(lambda: len(held) == 2)
    await asyncio.sleep(0.05)
    assert not waiting.done()  # WAIT=true (the default) waits for the flush
    held[1][1](True)
    assert (await waiting).code == ResponseCode.SUCCESS
