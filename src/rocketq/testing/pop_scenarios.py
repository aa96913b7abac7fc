"""POP scenarios run by ``SimpleConsumer`` against any broker (Java 5.3.3, the reference, and rocketq's):
the same steps and the same expectations, so a difference between the brokers fails the same assertion.

Each scenario takes the name server address and the cluster name, makes its own topic and group, asserts what
a 5.x consumer relies on, and returns what it observed that the brokers may legitimately differ on (for the
tests to print or compare). Every wait is bounded: ``receive_until`` gives up after ``rounds`` receives.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from rocketq.client import (
    AdminClient,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    Message,
    MessageExt,
    PopPushConsumer,
    Producer,
)
from rocketq.client.simple_consumer import MessageView, SimpleConsumer
from rocketq.errors import BrokerError
from rocketq.protocol.message import PROP_SHARDING_KEY

__all__ = [
    "SCENARIOS",
    "batch_ack",
    "change_invisible",
    "fifo_from_group",
    "fifo_order",
    "push_concurrently",
    "push_orderly",
    "receive_ack",
    "receive_until",
    "redelivery",
    "tag_filter",
]

#: receive's long-poll time in these scenarios, seconds: short, so an empty receive returns soon
AWAIT = 0.5


async def _topic(ns: str, cluster: str, queues: int = 4) -> str:
    topic = f"Pop-{uuid.uuid4().hex[:10]}"
    async with AdminClient(namesrv_addr=ns) as admin:
        await admin.create_topic(topic, cluster=cluster, read_queue_nums=queues, write_queue_nums=queues)
    return topic


async def _send(ns: str, topic: str, bodies: list[bytes], group_key: str | None = None) -> list[int]:
    """Send ``bodies`` in order; their queue offsets."""
    props = {PROP_SHARDING_KEY: group_key} if group_key else None
    async with Producer(f"pp-{topic}", namesrv_addr=ns, send_msg_timeout=10.0) as producer:
        return [(await producer.send(Message(topic, b, properties=props))).queue_offset for b in bodies]


def _consumer(ns: str, topic: str, *, fifo: bool = False) -> SimpleConsumer:
    return SimpleConsumer(f"pc-{topic}", namesrv_addr=ns, subscriptions={topic: "*"}, await_duration=AWAIT,
                          fifo=fifo, init_mode="MIN")  # fmt: skip


async def receive_until(
    consumer: SimpleConsumer, count: int, invisible: float, rounds: int = 60, max_messages: int = 32
) -> list[MessageView]:
    """Receive until ``count`` messages came (or ``rounds`` receives of up to ``AWAIT`` s each did not)."""
    got: list[MessageView] = []
    for _ in range(rounds):
        got += await consumer.receive(max_messages, invisible)
        if len(got) >= count:
            break
    return got


async def _nothing_for(consumer: SimpleConsumer, rounds: int, invisible: float = 30.0) -> list[MessageView]:
    got: list[MessageView] = []
    for _ in range(rounds):
        got += await consumer.receive(32, invisible)
    return got


async def receive_ack(ns: str, cluster: str) -> dict[str, Any]:
    """Three messages received once each, with their handles and offsets; after the acks nothing comes back."""
    topic = await _topic(ns, cluster)
    bodies = [b"m0", b"m1", b"m2"]
    await _send(ns, topic, bodies)
    async with _consumer(ns, topic) as consumer:
        got = await receive_until(consumer, 3, invisible=30.0)
        assert sorted(m.body for m in got) == bodies, [m.body for m in got]
        for m in got:
            assert m.topic == topic and m.delivery_attempt == 1
            h = m.handle
            assert (h.broker_name, h.queue_id, h.queue_offset, h.retry) == (m.broker_name, m.queue_id,
                                                                           m.queue_offset, "0")  # fmt: skip
            await consumer.ack(m)
        again = await _nothing_for(consumer, 3)
        assert again == [], [m.body for m in again]
    return {"handles": [m.receipt_handle for m in got]}


async def redelivery(ns: str, cluster: str, invisible: float = 2.0) -> dict[str, Any]:
    """An un-acked message comes back after its invisible time, attempt 2, under the subscribed topic (it is
    read from ``%RETRY%<group>_<topic>``); acking the redelivered copy settles it."""
    topic = await _topic(ns, cluster)
    await _send(ns, topic, [b"once"])
    async with _consumer(ns, topic) as consumer:
        [first] = await receive_until(consumer, 1, invisible=invisible)
        [second] = await receive_until(consumer, 1, invisible=30.0, rounds=80)
        assert second.body == b"once" and second.msg_id == first.msg_id
        assert second.topic == topic, second.topic
        assert second.delivery_attempt == 2, second.delivery_attempt
        assert second.handle.retry == "1", second.receipt_handle
        await consumer.ack(second)
        again = await _nothing_for(consumer, 3)
        assert again == [], [(m.body, m.delivery_attempt) for m in again]
    return {"first": first.receipt_handle, "second": second.receipt_handle}


async def batch_ack(ns: str, cluster: str) -> dict[str, Any]:
    """Six messages over two queues acked with BATCH_ACK_MESSAGE (Java's body, its BitSet as base64): none
    comes back, not even after their invisible time."""
    topic = await _topic(ns, cluster, queues=2)
    bodies = [f"a{i}".encode() for i in range(6)]
    await _send(ns, topic, bodies)
    async with _consumer(ns, topic) as consumer:
        got = await receive_until(consumer, 6, invisible=2.0)
        assert sorted(m.body for m in got) == bodies, [m.body for m in got]
        await consumer.batch_ack(got)
        again = await _nothing_for(consumer, 8)
        assert again == [], [(m.body, m.delivery_attempt) for m in again]
    return {"handles": [m.receipt_handle for m in got]}


async def change_invisible(ns: str, cluster: str) -> dict[str, Any]:
    """change_invisible_duration gives a new handle that acks; the message does not come back at its first
    invisible time. What an ack with the old handle gets is recorded (brokers differ: see the tests)."""
    topic = await _topic(ns, cluster)
    await _send(ns, topic, [b"slow"])
    async with _consumer(ns, topic) as consumer:
        [m] = await receive_until(consumer, 1, invisible=2.0)
        old = MessageView(m.topic, m.body, dict(m.properties))
        await consumer.change_invisible_duration(m, 30.0)
        assert m.receipt_handle != old.receipt_handle
        h = m.handle
        assert (h.ck_offset, h.queue_offset, h.invisible_ms) == (m.queue_offset, m.queue_offset, 30000)
        old_ack: str
        try:
            await consumer.ack(old)
            old_ack = "SUCCESS"
        except BrokerError as exc:
            old_ack = f"{exc.code} {exc}"
        await consumer.ack(m)
        again = await _nothing_for(consumer, 4)
        assert again == [], [(x.body, x.delivery_attempt) for x in again]
    return {"old_handle_ack": old_ack, "old": old.receipt_handle, "new": m.receipt_handle}


async def fifo_order(ns: str, cluster: str) -> dict[str, Any]:
    """An orderly pop of a one-queue topic: messages in queue order; the queue gives nothing more while they
    are un-acked; un-acked ones come back from the same position with attempt 2; acked, the next ones come."""
    topic = await _topic(ns, cluster, queues=1)
    offsets = await _send(ns, topic, [f"f{i}".encode() for i in range(5)], group_key="g1")
    async with _consumer(ns, topic, fifo=True) as consumer:
        first = await receive_until(consumer, 1, invisible=30.0, max_messages=2)
        assert [m.body for m in first] == [b"f0", b"f1"], [m.body for m in first]
        assert [m.queue_offset for m in first] == offsets[:2]
        assert first[0].message_group == "g1" and first[0].handle.orderly
        blocked = await _nothing_for(consumer, 2)
        assert blocked == [], [m.body for m in blocked]
        for m in first:
            await consumer.ack(m)
        second = await receive_until(consumer, 1, invisible=2.0, max_messages=2)
        assert [m.body for m in second] == [b"f2", b"f3"], [m.body for m in second]
        # not acked: after 2 s the same two again, delivered a second time
        again = await receive_until(consumer, 1, invisible=30.0, max_messages=2, rounds=80)
        assert [(m.body, m.delivery_attempt) for m in again] == [(b"f2", 2), (b"f3", 2)], [
            (m.body, m.delivery_attempt) for m in again
        ]
        for m in again:
            await consumer.ack(m)
        last = await receive_until(consumer, 1, invisible=30.0)
        assert [m.body for m in last] == [b"f4"], [m.body for m in last]
        await consumer.ack(last[0])
    return {"orderly_handle": first[0].receipt_handle}


async def _until(check: Any, seconds: float) -> None:
    """Wait (in 50 ms steps, up to ``seconds``) until ``check()`` holds."""
    async with asyncio.timeout(seconds):
        while not check():
            await asyncio.sleep(0.05)


async def push_concurrently(ns: str, cluster: str) -> dict[str, Any]:
    """PopPushConsumer with a concurrent listener: every message handed over; one refused the first time comes
    back (delivery 2, via the retry topic, under the subscribed topic) after its back-off, then is acked."""
    topic = await _topic(ns, cluster)
    await _send(ns, topic, [b"p0", b"p1", b"p2"])
    calls: list[tuple[bytes, int, str]] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        [m] = msgs
        calls.append((m.body, m.reconsume_times, m.topic))
        if m.body == b"p1" and m.reconsume_times == 0:
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PopPushConsumer(f"pc-{topic}", listener, namesrv_addr=ns, subscriptions={topic: "*"},
                               await_duration=AWAIT, pop_delay_levels=(1,), init_mode="MIN")  # fmt: skip
    async with consumer:
        await _until(lambda: len(calls) >= 4, 60)
        await asyncio.sleep(3 * AWAIT)  # nothing more may come
    assert sorted(calls) == [(b"p0", 0, topic), (b"p1", 0, topic), (b"p1", 1, topic), (b"p2", 0, topic)], calls
    return {"calls": calls}


async def push_orderly(ns: str, cluster: str) -> dict[str, Any]:
    """PopPushConsumer orderly on a one-queue topic: a suspended message comes back before anything after it."""
    topic = await _topic(ns, cluster, queues=1)
    await _send(ns, topic, [f"o{i}".encode() for i in range(4)], group_key="g")
    seen: list[tuple[bytes, int]] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        [m] = msgs
        seen.append((m.body, m.reconsume_times))
        if m.body == b"o1" and m.reconsume_times == 0:
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    consumer = PopPushConsumer(f"pc-{topic}", listener, namesrv_addr=ns, subscriptions={topic: "*"}, orderly=True,
                               await_duration=AWAIT, suspend_time=1.0, init_mode="MIN")  # fmt: skip
    async with consumer:
        await _until(lambda: len(seen) >= 5, 60)
        await asyncio.sleep(3 * AWAIT)
    assert [b for b, _ in seen] == [b"o0", b"o1", b"o1", b"o2", b"o3"], seen
    assert seen[2][1] == 1, seen
    return {"seen": seen}


async def tag_filter(ns: str, cluster: str) -> dict[str, Any]:
    """A tag subscription gets only its tags; the others are never handed out (not even later)."""
    topic = await _topic(ns, cluster, queues=1)
    async with Producer(f"pp-{topic}", namesrv_addr=ns, send_msg_timeout=10.0) as producer:
        for i, tag in enumerate(["A", "B", "A", "C"]):
            await producer.send(Message(topic, f"t{i}".encode(), tags=tag))
    consumer = SimpleConsumer(f"pc-{topic}", namesrv_addr=ns, subscriptions={topic: "A || C"}, await_duration=AWAIT,
                              init_mode="MIN")  # fmt: skip
    async with consumer:
        got = await receive_until(consumer, 3, invisible=2.0)
        assert sorted((m.body, m.tags) for m in got) == [(b"t0", "A"), (b"t2", "A"), (b"t3", "C")], got
        for m in got:
            await consumer.ack(m)
        again = await _nothing_for(consumer, 6)
        assert again == [], [(m.body, m.tags) for m in again]
    return {}


async def fifo_from_group(ns: str, cluster: str) -> dict[str, Any]:
    """``fifo=None``: a group made with ``consumeMessageOrderly`` pops orderly (handles on revive queue 999),
    another group of the same topic concurrently."""
    topic = await _topic(ns, cluster, queues=1)
    orderly_group = f"pco-{topic}"
    async with AdminClient(namesrv_addr=ns) as admin:
        await admin.update_subscription_group(orderly_group, cluster=cluster, consume_message_orderly=True)
    await _send(ns, topic, [b"q0"])
    seen = {}
    for group in (orderly_group, f"pcc-{topic}"):
        async with SimpleConsumer(group, namesrv_addr=ns, subscriptions={topic: "*"}, await_duration=AWAIT,
                                  init_mode="MIN") as consumer:  # fmt: skip
            [m] = await receive_until(consumer, 1, invisible=30.0)
            seen[group] = (consumer.fifo, m.handle.orderly)
            await consumer.ack(m)
    assert seen == {orderly_group: (True, True), f"pcc-{topic}": (False, False)}, seen
    return {"seen": seen}


SCENARIOS = {
    "receive_ack": receive_ack,
    "redelivery": redelivery,
    "change_invisible": change_invisible,
    "batch_ack": batch_ack,
    "tag_filter": tag_filter,
    "fifo_order": fifo_order,
    "fifo_from_group": fifo_from_group,
    "push_concurrently": push_concurrently,
    "push_orderly": push_orderly,
}
