"""Admin requests that walk every queue of a topic run in slices: other clients are answered meanwhile, and a
broker stop during the walk ends it. No timing: the tests look at the order things happen in.

The large topic is put straight into the topic manager, so the tests do not depend on the request gate's
maximum queue count.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import orjson
import pytest

from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.broker.messaging import admin as admin_service
from rocketq.broker.processors import admin as admin_processors
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import RemotingError
from rocketq.protocol.bodies import TopicConfig
from rocketq.store import MessageStore
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire

QUEUES = 100_000  # its topic stats answer stays under the client's 16 MiB frame limit

WALKS = {
    "topic-stats": (RequestCode.GET_TOPIC_STATS_INFO, {"topic": "TBig"}),
    "consume-stats": (RequestCode.GET_CONSUME_STATS, {"consumerGroup": "gBig", "topic": "TBig"}),
    "broker-consume-stats": (RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false"}),
    "reset-offset": (RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                     {"topic": "TBig", "group": "gBig", "timestamp": "-1", "isForce": "true"}),
}  # fmt: skip


def count_queue_visits(store: MessageStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every walk asks the store for each queue's max offset: counting those calls shows how far it got."""
    visits = [0]
    original: Callable[[str, int], int] = store.get_max_offset_in_queue

    def counted(topic: str, queue_id: int) -> int:
        if topic == "TBig":
            visits[0] += 1
        return original(topic, queue_id)

    monkeypatch.setattr(store, "get_max_offset_in_queue", counted)
    return visits


async def started(visits: list[int], walk: asyncio.Task[object]) -> None:
    """Wait (turning the loop) until the walk has visited a queue."""
    async with asyncio.timeout(120):
        while visits[0] == 0 and not walk.done():
            await asyncio.sleep(0.001)


@pytest.mark.parametrize("walk", sorted(WALKS))
async def test_a_small_request_is_answered_while_a_large_walk_runs(
    walk: str, wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = cluster.broker
    assert (await wire.send("TSmall", b"m")).code == 0
    broker.topics.update(TopicConfig("TBig", QUEUES, QUEUES))
    broker.groups.update(SubscriptionGroupConfig("gBig"))
    broker.offsets.commit("gBig", "TBig", 0, 0)  # the group's topics are the ones it has offsets on
    visits = count_queue_visits(broker.store, monkeypatch)
    code, ext = WALKS[walk]
    big = asyncio.create_task(wire.call(code, ext, timeout=300))
    await started(visits, big)
    small = await wire.call(RequestCode.GET_MAX_OFFSET, {"topic": "TSmall", "queueId": "0"})
    # one connection answers in the order answers are written: the walk had not answered yet
    assert small.code == 0 and small.ext_fields["offset"] == "1"
    assert not big.done() and visits[0] < QUEUES
    answer = await big
    assert answer.code == 0, answer.remark
    assert visits[0] >= QUEUES  # the walk did visit every queue
    if walk == "reset-offset":
        assert len(broker.offsets.offsets_of("gBig", "TBig")) == QUEUES


async def test_a_broker_stop_ends_a_walk_and_a_cancelled_reset_changes_nothing(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = cluster.broker
    broker.topics.update(TopicConfig("TBig", QUEUES, QUEUES))
    broker.offsets.commit("gBig", "TBig", 0, 0)
    visits = count_queue_visits(broker.store, monkeypatch)
    code, ext = WALKS["reset-offset"]
    big = asyncio.create_task(wire.call(code, ext, timeout=300))
    await started(visits, big)
    assert await broker.shutdown() is True
    assert visits[0] < QUEUES  # the stop did not wait for the walk to finish
    with pytest.raises(RemotingError):
        await big  # its connection closed unanswered
    assert broker.offsets.offsets_of("gBig", "TBig") == {0: 0}  # a reset is committed whole or not at all
    settled = visits[0]
    await asyncio.sleep(0.05)
    assert visits[0] == settled  # and the walk does not go on behind the stop's back


async def test_query_consume_queue_answers_at_most_its_maximum_of_units(
    wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(admin_processors, "QUERY_CONSUME_QUEUE_MAX_COUNT", 2)
    for i in range(3):
        assert (await wire.send("TCq", f"m{i}".encode(), queue_id=0)).code == 0
    ask = {"topic": "TCq", "queueId": 0, "index": 0, "count": 2**31 - 1}
    resp = await wire.call(RequestCode.QUERY_CONSUME_QUEUE, ask)
    assert resp.code == 0 and len(orjson.loads(resp.body)["queueData"]) == 2


async def test_a_walk_over_more_queues_than_any_answer_could_hold_is_refused_at_once(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = cluster.broker
    broker.topics.update(TopicConfig("TBig", 2**31 - 1, 2**31 - 1))  # what a topic made before any cap holds
    broker.groups.update(SubscriptionGroupConfig("gBig"))
    broker.offsets.commit("gBig", "TBig", 0, 0)
    visits = count_queue_visits(broker.store, monkeypatch)
    for code, ext in WALKS.values():
        resp = await wire.call(code, ext)
        assert resp.code == ResponseCode.SYSTEM_ERROR and "walks at most" in (resp.remark or ""), code
    assert visits[0] == 0 and broker.offsets.offsets_of("gBig", "TBig") == {0: 0}


async def test_broker_consume_stats_over_every_group_is_bounded_in_total(
    wire: Wire, cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each group's walk is under the per-topic cap, together they are not: the wire fuzzer's junk groups with
    # offsets on 1024-queue topics built gigabytes of rows for one GET_BROKER_CONSUME_STATS
    monkeypatch.setattr(admin_service, "WALK_MAX_QUEUES", 10)
    broker = cluster.broker
    broker.topics.update(TopicConfig("TFour", 4, 4))
    for i in range(3):
        broker.groups.update(SubscriptionGroupConfig(f"gMany{i}"))
        broker.offsets.commit(f"gMany{i}", "TFour", 0, 0)
    resp = await wire.call(RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false"})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "more than 10 queues" in (resp.remark or "")
    # one group (or a smaller broker) is still answered
    resp = await wire.call(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "gMany0", "topic": "TFour"})
    assert resp.code == ResponseCode.SUCCESS and resp.body.count(b"\"queueId\"") == 4
