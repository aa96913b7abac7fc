"""Where a newly assigned queue starts (Java RebalancePushImpl.computePullFromWhereWithException) and how an
allocation is applied to the process-queue table, with fake offset stores and instances (no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from rocketq.client import ConsumeFromWhere, PushConsumer
from rocketq.client.offset_store import OffsetStore
from rocketq.client.push_consumer import _RebalancePush
from rocketq.client.subscription import build_subscription_data
from rocketq.protocol.bodies import MessageQueue

MQ = MessageQueue("T", "b", 0)
RETRY_MQ = MessageQueue("%RETRY%g", "b", 0)


class FakeStore(OffsetStore):
    def __init__(self, stored: int) -> None:
        super().__init__()
        self.stored = stored
        self.persisted: list[MessageQueue] = []

    async def _read_from_store(self, mq: MessageQueue) -> int:
        return self.stored

    async def persist_all(self, mqs: Any) -> None:
        self.persisted.extend(mqs)

    async def persist(self, mq: MessageQueue) -> None:
        self.persisted.append(mq)


class FakeInstance:
    client_id = "10.0.0.1@1"

    def __init__(self, cids: list[str] | None = None) -> None:
        self.cids = cids or [self.client_id]
        self.heartbeats = 0

    async def max_offset(self, mq: MessageQueue) -> int:
        return 100

    async def search_offset(self, mq: MessageQueue, ts: int) -> int:
        return 40 if ts == 123_456_789_000 else -99

    async def find_consumer_id_list(self, topic: str, group: str) -> list[str]:
        return self.cids

    async def send_heartbeat_to_all_brokers(self) -> None:
        self.heartbeats += 1

    async def update_topic_route(self, topic: str) -> bool:
        return False


def _rebalance(stored: int, where: ConsumeFromWhere, instance: FakeInstance | None = None) -> _RebalancePush:
    consumer = PushConsumer("g", namesrv_addr="127.0.0.1:1", consume_from_where=where,
                            consume_timestamp=123_456_789_000, offset_store=FakeStore(stored))  # fmt: skip
    rb = _RebalancePush(consumer, instance or FakeInstance())  # type: ignore[arg-type]
    consumer.dispatch_pull_requests = lambda reqs: None  # type: ignore[method-assign]
    return rb


@pytest.mark.parametrize(
    ("stored", "where", "mq", "expected"),
    [
        (7, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, MQ, 7),  # a committed offset always wins
        (7, ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, MQ, 7),
        (-1, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, MQ, 100),  # max offset
        (-1, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, RETRY_MQ, 0),  # retry topics start at 0
        (-1, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, MQ, 0),
        (-1, ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, MQ, 40),  # SEARCH_OFFSET_BY_TIMESTAMP
        (-1, ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, RETRY_MQ, 100),
        (-2, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, MQ, -1),  # the broker could not be asked: not now
    ],
)
async def test_compute_pull_from_where(stored: int, where: ConsumeFromWhere, mq: MessageQueue, expected: int) -> None:
    assert await _rebalance(stored, where).compute_pull_from_where(mq) == expected


async def test_allocation_applied_to_process_queue_table() -> None:
    inst = FakeInstance(["10.0.0.1@1", "10.0.0.2@2"])
    rb = _rebalance(3, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, inst)
    rb.subscription_inner["T"] = build_subscription_data("T", "*", sub_version=1)
    rb.topic_subscribe_info_table["T"] = {MessageQueue("T", "b", i) for i in range(4)}
    rb.consumer._running = True
    await rb.rebalance_by_topic("T", False)
    assert sorted(m.queue_id for m in rb.process_queue_table) == [0, 1]  # averagely: first half
    assert inst.heartbeats == 1  # messageQueueChanged announces the new subscription version
    assert rb.subscription_inner["T"].sub_version > 1
    inst.cids = ["10.0.0.0@0", "10.0.0.1@1", "10.0.0.2@2", "10.0.0.3@3"]
    dropped = dict(rb.process_queue_table)
    await rb.rebalance_by_topic("T", False)
    assert sorted(m.queue_id for m in rb.process_queue_table) == [1]
    assert dropped[MessageQueue("T", "b", 0)].dropped and not dropped[MessageQueue("T", "b", 1)].dropped
    store = rb.consumer.offset_store
    assert isinstance(store, FakeStore) and store.persisted == [MessageQueue("T", "b", 0)]  # offset kept before leaving


async def test_clean_expired_messages_sends_back_stuck_ones() -> None:
    from rocketq.client.message import MessageExt
    from rocketq.client.process_queue import ProcessQueue

    rb = _rebalance(0, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
    consumer = rb.consumer
    consumer._rebalance = rb
    consumer.consume_timeout = 1.0
    sent_back: list[int] = []

    async def send_back(msg: MessageExt, delay: int, broker: str | None = None) -> bool:
        sent_back.append(msg.queue_offset)
        return True

    consumer.send_message_back = send_back  # type: ignore[method-assign]
    pq = ProcessQueue()
    msgs = []
    for off, started in ((10, "1"), (11, "1"), (12, None)):
        m = MessageExt("T", b"x")
        m.queue_offset = off
        if started:
            m.properties["CONSUME_START_TIME"] = started  # long ago
        msgs.append(m)
    pq.put_messages(msgs)
    rb.process_queue_table[MQ] = pq
    await consumer.clean_expired_messages()
    assert sent_back == [10, 11]  # stops at the first message whose listener has not started
    assert [m.queue_offset for m in pq.messages()] == [12]
    assert consumer.offset_store is not None and consumer.offset_store.offset_table[MQ] == 12
