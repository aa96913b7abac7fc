"""The broker's PopService end to end on an embedded broker: pop, ack, invisible time, revive, DLQ, FIFO."""

from __future__ import annotations

import asyncio
import time

import pytest

from rocketq.broker.pop.service import PopService
from rocketq.broker.pop.types import PopRequest
from rocketq.codes import ResponseCode
from rocketq.protocol.bodies import TopicConfig
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire

pytestmark = pytest.mark.parametrize("cluster", [{"reviveInterval": 50}], indirect=True)


def one_queue_topic(cluster: EmbeddedCluster, topic: str, queues: int = 1) -> None:
    cluster.broker.topics.update(TopicConfig(topic, read_queue_nums=queues, write_queue_nums=queues))


async def send(wire: Wire, topic: str, n: int, *, queue_id: int = 0, tag: str | None = None) -> None:
    for i in range(n):
        props = {"TAGS": tag} if tag else {}
        assert (await wire.send(topic, f"m{i}".encode(), queue_id=queue_id, props=props)).code == 0


async def wait_until(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def bodies(outcome: object) -> list[bytes]:
    return [m.record.body for m in outcome.messages]  # type: ignore[attr-defined]


async def test_each_message_goes_to_one_popper_and_acked_ones_stay_gone(cluster: EmbeddedCluster, wire: Wire) -> None:
    one_queue_topic(cluster, "PopT")
    await send(wire, "PopT", 20)
    pop: PopService = cluster.broker.pop_service
    outcomes = await asyncio.gather(*(pop.pop(PopRequest("g1", "PopT", max_nums=5, invisible_ms=60_000))
                                      for _ in range(4)))  # fmt: skip
    seen = [b for o in outcomes for b in bodies(o)]
    assert sorted(seen) == sorted(f"m{i}".encode() for i in range(20))  # 20 distinct, none twice
    for o in outcomes:
        for m in o.messages:
            assert pop.ack("g1", "PopT", m.handle).code == ResponseCode.SUCCESS
    again = await pop.pop(PopRequest("g1", "PopT", invisible_ms=60_000))
    assert again.code == ResponseCode.POLLING_TIMEOUT and not again.messages
    assert [c.inflight for c in pop.inflight("g1")] == [0] or pop.inflight("g1") == []
    cluster.broker.revive.revive_due()
    assert (await pop.pop(PopRequest("g1", "PopT", invisible_ms=60_000))).messages == []


async def test_an_unacked_message_comes_back_with_its_delivery_attempt_counted(
    cluster: EmbeddedCluster, wire: Wire
) -> None:
    one_queue_topic(cluster, "RevT")
    await send(wire, "RevT", 2)
    pop: PopService = cluster.broker.pop_service
    first = await pop.pop(PopRequest("g2", "RevT", max_nums=2, invisible_ms=300))
    assert bodies(first) == [b"m0", b"m1"] and [m.reconsume_times for m in first.messages] == [0, 0]
    assert pop.ack("g2", "RevT", first.messages[0].handle).code == ResponseCode.SUCCESS
    counts = pop.inflight("g2")
    assert [(c.topic, c.inflight) for c in counts] == [("RevT", 1)]
    # long polling: parked until the revive puts m1 into the retry topic
    back = await pop.pop(PopRequest("g2", "RevT", invisible_ms=60_000, poll_ms=5_000))
    assert bodies(back) == [b"m1"]
    m = back.messages[0]
    assert (m.reconsume_times, m.handle.retry, m.origin_topic) == (1, True, "RevT")
    assert m.record.topic == "%RETRY%g2_RevT"
    assert pop.ack("g2", "RevT", m.handle).code == ResponseCode.SUCCESS
    assert pop.inflight("g2")[0].inflight == 0


async def test_change_invisible_gives_a_new_handle_and_delays_the_return(cluster: EmbeddedCluster, wire: Wire) -> None:
    one_queue_topic(cluster, "ChgT")
    await send(wire, "ChgT", 1)
    pop: PopService = cluster.broker.pop_service
    first = await pop.pop(PopRequest("g3", "ChgT", invisible_ms=200))
    changed = pop.change_invisible("g3", "ChgT", first.messages[0].handle, 60_000)
    assert changed.code == ResponseCode.SUCCESS and changed.handle is not None
    assert changed.handle != first.messages[0].handle and changed.handle.invisible_ms == 60_000
    await asyncio.sleep(0.4)  # past the first invisible time: the old checkpoint was acked by the change
    cluster.broker.revive.revive_due()
    assert (await pop.pop(PopRequest("g3", "ChgT", invisible_ms=60_000))).messages == []
    assert pop.ack("g3", "ChgT", changed.handle).code == ResponseCode.SUCCESS
    assert pop.inflight("g3")[0].inflight == 0


async def test_after_max_attempts_the_message_is_in_the_dlq(cluster: EmbeddedCluster, wire: Wire) -> None:
    one_queue_topic(cluster, "DlqT")
    group = cluster.broker.groups.find_or_create("g4")
    assert group is not None
    group.retry_max_times = 1  # two deliveries, then the dead-letter queue
    await send(wire, "DlqT", 1)
    pop: PopService = cluster.broker.pop_service
    attempts = []
    for _ in range(2):
        got = await pop.pop(PopRequest("g4", "DlqT", invisible_ms=100, poll_ms=5_000))
        attempts.extend(m.reconsume_times + 1 for m in got.messages)
    assert attempts == [1, 2]
    await wait_until(lambda: cluster.broker.topics.get("%DLQ%g4") is not None
                     and cluster.broker.store.get_max_offset_in_queue("%DLQ%g4", 0) == 1)  # fmt: skip
    rec = pop.read("%DLQ%g4", 0, 0)
    assert rec is not None and rec.body == b"m0" and rec.properties["RETRY_TOPIC"] == "DlqT"
    assert (await pop.pop(PopRequest("g4", "DlqT", invisible_ms=100, poll_ms=300))).messages == []


async def test_fifo_blocks_the_queue_until_the_popped_message_is_acked(cluster: EmbeddedCluster, wire: Wire) -> None:
    one_queue_topic(cluster, "FifoT")
    await send(wire, "FifoT", 3)
    pop: PopService = cluster.broker.pop_service
    first = await pop.pop(PopRequest("g5", "FifoT", max_nums=1, invisible_ms=60_000, order=True))
    assert bodies(first) == [b"m0"] and first.messages[0].handle.orderly
    blocked = await pop.pop(PopRequest("g5", "FifoT", max_nums=1, invisible_ms=60_000, order=True))
    assert blocked.messages == []  # m1 waits for m0
    assert pop.ack("g5", "FifoT", first.messages[0].handle).code == ResponseCode.SUCCESS
    nxt = await pop.pop(PopRequest("g5", "FifoT", max_nums=2, invisible_ms=200, order=True))
    assert bodies(nxt) == [b"m1", b"m2"]
    await asyncio.sleep(0.3)  # not acked: after the invisible time the same messages, same order, attempt 2
    again = await pop.pop(PopRequest("g5", "FifoT", max_nums=2, invisible_ms=60_000, order=True))
    assert bodies(again) == [b"m1", b"m2"] and [m.reconsume_times for m in again.messages] == [1, 1]


async def test_pending_pops_survive_a_restart(cluster: EmbeddedCluster, wire: Wire) -> None:
    one_queue_topic(cluster, "RstT")
    await send(wire, "RstT", 4)
    pop: PopService = cluster.broker.pop_service
    # invisible long enough that a restart on a loaded machine does not outlast it (the revive would then have
    # handled the pending pop before the check below)
    got = await pop.pop(PopRequest("g6", "RstT", max_nums=4, invisible_ms=3_000))
    assert len(got.messages) == 4
    for m in got.messages[:2]:
        assert pop.ack("g6", "RstT", m.handle).code == ResponseCode.SUCCESS
    broker = await cluster.restart_broker()
    pop = broker.pop_service
    assert len(pop.pending) == 1
    back: list[bytes] = []
    deadline = time.monotonic() + 15
    while len(back) < 2 and time.monotonic() < deadline:
        back += bodies(await pop.pop(PopRequest("g6", "RstT", invisible_ms=60_000, poll_ms=1_000)))
    assert sorted(back) == [b"m2", b"m3"]
    assert (await pop.pop(PopRequest("g6", "RstT", invisible_ms=60_000, poll_ms=200))).messages == []


async def test_bad_pops_are_refused(cluster: EmbeddedCluster, wire: Wire) -> None:
    pop: PopService = cluster.broker.pop_service
    assert (await pop.pop(PopRequest("g7", "NoSuchT"))).code == ResponseCode.TOPIC_NOT_EXIST
    one_queue_topic(cluster, "BadT")
    # Java 5.3.3: INVALID_PARAMETER (29) for both
    assert (await pop.pop(PopRequest("g7", "BadT", max_nums=33))).code == ResponseCode.INVALID_PARAMETER
    assert (await pop.pop(PopRequest("g7", "BadT", queue_id=5))).code == ResponseCode.INVALID_PARAMETER
    assert (await pop.pop(PopRequest("g7", "BadT", invisible_ms=0))).code == ResponseCode.SYSTEM_ERROR


async def test_the_admin_client_sees_what_a_pop_group_has_in_flight(cluster: EmbeddedCluster, wire: Wire) -> None:
    from rocketq.client import AdminClient

    one_queue_topic(cluster, "ViewT")
    await send(wire, "ViewT", 3)
    pop: PopService = cluster.broker.pop_service
    got = await pop.pop(PopRequest("g8", "ViewT", max_nums=2, invisible_ms=60_000))
    assert pop.ack("g8", "ViewT", got.messages[0].handle).code == ResponseCode.SUCCESS
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        rows = await admin.pop_inflight("g8")
        everyone = await admin.pop_inflight()
    assert [(r.group, r.topic, r.inflight, r.invisible, r.ready) for r in rows] == [("g8", "ViewT", 1, 1, 1)]
    assert rows[0].broker_addr == cluster.broker_addr and rows[0] in everyone
