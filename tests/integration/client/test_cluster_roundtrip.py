"""Producer and consumers against an embedded name server + broker (EmbeddedCluster).

Loops are bounded (``wait_until``) and timers are shortened through ``fast_config``; nothing asserts on elapsed
time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import (
    AdminClient,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    InvalidOffsetError,
    LitePullConsumer,
    Message,
    MessageModel,
    MessageSelector,
    Producer,
    PushConsumer,
    SendStatus,
)
from rocketq.client.errors import NoRouteError
from rocketq.errors import BrokerError

FAST_CONSUMER: dict[str, Any] = {"rebalance_interval": 0.5, "pull_time_delay_when_exception": 0.2}
FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


def push(fast_config: Any, group: str, config: dict[str, Any] | None = None, **kw: Any) -> PushConsumer:
    options = {"consume_from_where": FIRST, **FAST_CONSUMER, **kw}
    return PushConsumer(group, config=fast_config(**(config or {})), **options)


async def wait_until(cond: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(0.05)


async def test_send_and_consume_with_tag_filter(cluster: Any, fast_config: Any) -> None:
    got: list[Any] = []
    consumer = push(fast_config, "cg-tags")
    consumer.subscribe("RoundTrip", "TagA || TagB")
    consumer.register_message_listener(lambda msgs, ctx: got.extend(msgs))
    async with Producer("pg", config=fast_config()) as producer:
        sent = {}
        for i in range(30):
            tag = "ABC"[i % 3]
            body = (f"m{i}-" + "x" * (5000 if i == 4 else 1)).encode()
            r = await producer.send(Message("RoundTrip", body, tags=f"Tag{tag}", keys=f"key-{i}"))
            assert r.status is SendStatus.SEND_OK
            if tag != "C":
                sent[r.msg_id] = body
        await consumer.start()
        try:
            await wait_until(lambda: len({m.msg_id for m in got}) >= len(sent), what="all tagged messages")
        finally:
            await consumer.shutdown()
    by_id = {m.msg_id: m for m in got}
    assert set(by_id) == set(sent)
    assert all(by_id[i].body == b for i, b in sent.items())  # the 5000-byte body was compressed and inflated
    assert all(m.tags in ("TagA", "TagB") and m.topic == "RoundTrip" for m in got)


async def test_consumer_joins_and_leaves_without_losing_messages(cluster: Any, fast_config: Any) -> None:
    seen: dict[str, list[str]] = {"c1": [], "c2": []}

    def make(name: str) -> PushConsumer:
        c = push(fast_config, "cg-join")
        c.subscribe("JoinLeave", "*")
        c.register_message_listener(lambda msgs, ctx: seen[name].extend(m.msg_id for m in msgs))
        return c

    sent: set[str] = set()
    async with Producer("pg", config=fast_config()) as producer:
        async def send(n: int) -> None:
            for _ in range(n):
                sent.add((await producer.send(Message("JoinLeave", b"x"))).msg_id)

        await send(20)
        c1 = make("c1")
        await c1.start()
        await wait_until(lambda: len(set(seen["c1"])) >= 20)
        c2 = make("c2")
        await c2.start()
        # Both members own queues once the broker has told c1 about c2.
        await wait_until(lambda: bool(c1._rebalance and c2._rebalance and c2._rebalance.process_queue_table
                                      and len(c1._rebalance.process_queue_table) < 4))  # fmt: skip
        await send(40)
        await c1.shutdown()  # leaves: its queues move to c2, from c1's committed offsets
        await send(40)
        await wait_until(lambda: set(seen["c1"]) | set(seen["c2"]) >= sent, what="every message consumed")
        await c2.shutdown()
    assert set(seen["c1"]) | set(seen["c2"]) == sent
    assert seen["c2"]


async def test_broadcasting_delivers_everything_to_each_member(cluster: Any, fast_config: Any, tmp_path: Path) -> None:
    seen: dict[str, set[str]] = {"a": set(), "b": set()}
    consumers = []
    for name in seen:
        c = push(fast_config, "cg-broadcast", {"instance_name": f"bc-{name}"}, message_model=MessageModel.BROADCASTING,
                 local_offset_store_dir=str(tmp_path / "offsets"))  # fmt: skip
        c.subscribe("Broadcast", "*")
        c.register_message_listener(lambda msgs, ctx, n=name: seen[n].update(m.msg_id for m in msgs))
        consumers.append(c)
    async with Producer("pg", config=fast_config()) as producer:
        sent = {(await producer.send(Message("Broadcast", f"{i}".encode()))).msg_id for i in range(12)}
        for c in consumers:
            await c.start()
        await wait_until(lambda: seen["a"] >= sent and seen["b"] >= sent)
        for c in consumers:
            await c.shutdown()
    files = sorted((tmp_path / "offsets").rglob("offsets.json"))
    assert len(files) == 2  # one local offset file per client id
    assert seen["a"] == seen["b"] == sent


async def test_consume_from_timestamp(cluster: Any, fast_config: Any) -> None:
    """Start at the messages stored after a point in time.

    A *new* group on a *young* queue is told offset 0 by QUERY_CONSUMER_OFFSET (Java broker behaviour, kept by
    ours), so CONSUME_FROM_TIMESTAMP only applies when the broker answers QUERY_NOT_FOUND. The two reliable ways
    are shown here: the group's offsets reset to the timestamp (what ``mqadmin resetOffsetByTime`` does) before a
    push consumer starts, and a lite pull consumer seeking to the timestamp.
    """
    async with Producer("pg", config=fast_config()) as producer:
        # One queue, so that the expected offsets do not depend on round robin.
        queue = (await producer.send(Message("FromTime", b"old"))).message_queue
        old = [await producer.send(Message("FromTime", b"old"), queue=queue) for _ in range(3)]
        await asyncio.sleep(0.5)  # store times of "old" and "new" far apart (the broker picks the nearer one)
        start_ms = int(time.time() * 1000)
        # Keep start_ms off every store time: on an exact match with several messages stored in the same ms,
        # the (Java 4.9) binary search may land on any of them.
        await asyncio.sleep(0.02)
        new_results = [await producer.send(Message("FromTime", b"new"), queue=queue) for _ in range(4)]
    new = {r.msg_id for r in new_results}
    assert [r.queue_offset for r in old] == [1, 2, 3]
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        offsets = await admin.reset_offset_by_timestamp("cg-time", "FromTime", start_ms)
    assert offsets[queue] == 4
    got: set[str] = set()
    consumer = push(fast_config, "cg-time", consume_from_where=ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
                    consume_timestamp=start_ms)  # fmt: skip
    consumer.subscribe("FromTime", "*")
    consumer.register_message_listener(lambda msgs, ctx: got.update(m.msg_id for m in msgs))
    async with consumer:
        await wait_until(lambda: got >= new)
        await asyncio.sleep(0.3)
    assert got == new

    lite = LitePullConsumer("cg-time-lite", config=fast_config(), auto_commit=False)
    lite.assign([queue])
    async with lite:
        assert await lite.offset_for_timestamp(queue, start_ms) == 4
        await lite.seek_to_timestamp(queue, start_ms)
        polled: list[Any] = []
        async with asyncio.timeout(30):
            while len(polled) < 4:
                polled += await lite.poll(1.0)
    assert [m.msg_id for m in polled] == [r.msg_id for r in new_results]


async def test_failed_message_is_redelivered_from_the_retry_topic(cluster: Any, fast_config: Any) -> None:
    attempts: list[tuple[str, str, int]] = []

    def listener(msgs: list[Any], ctx: Any) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            attempts.append((m.msg_id, m.topic, m.reconsume_times))
        return ConsumeConcurrentlyStatus.RECONSUME_LATER if msgs[0].reconsume_times == 0 \
            else ConsumeConcurrentlyStatus.CONSUME_SUCCESS  # fmt: skip

    consumer = push(fast_config, "cg-retry")
    consumer.subscribe("Retried", "*")
    consumer.register_message_listener(listener)
    async with Producer("pg", config=fast_config()) as producer:
        r = await producer.send(Message("Retried", b"fail once"))
        async with consumer:
            await wait_until(lambda: any(a[2] == 1 for a in attempts), timeout=30)
    first, second = attempts[0], next(a for a in attempts if a[2] == 1)
    assert first == (r.msg_id, "Retried", 0)
    assert second == (r.msg_id, "Retried", 1)  # same UNIQ_KEY, original topic restored from RETRY_TOPIC


async def test_orderly_consumption_keeps_per_key_order(cluster: Any, fast_config: Any) -> None:
    order: dict[str, list[int]] = {}

    def listener(msgs: list[Any], ctx: Any) -> ConsumeOrderlyStatus:
        for m in msgs:
            key, seq = m.body.decode().split(":")
            order.setdefault(key, []).append(int(seq))
        return ConsumeOrderlyStatus.SUCCESS

    consumer = push(fast_config, "cg-orderly")
    consumer.subscribe("Ordered", "*")
    consumer.register_message_listener_orderly(listener)
    async with Producer("pg", config=fast_config()) as producer:
        for seq in range(20):
            for key in ("k1", "k2", "k3"):
                await producer.send_orderly(Message("Ordered", f"{key}:{seq}".encode()), key)
        async with consumer:
            await wait_until(lambda: sum(len(v) for v in order.values()) >= 60)
    assert all(seqs == list(range(20)) for seqs in order.values())


async def test_offsets_are_committed_and_resumed(cluster: Any, fast_config: Any) -> None:
    got: list[str] = []

    def make() -> PushConsumer:
        c = push(fast_config, "cg-resume")
        c.subscribe("Resume", "*")
        c.register_message_listener(lambda msgs, ctx: got.extend(m.body.decode() for m in msgs))
        return c

    async with Producer("pg", config=fast_config()) as producer:
        for i in range(10):
            await producer.send(Message("Resume", f"a{i}".encode()))
        async with make():
            await wait_until(lambda: len(got) >= 10)
        for i in range(5):
            await producer.send(Message("Resume", f"b{i}".encode()))
        async with make():
            await wait_until(lambda: len(got) >= 15)
            await asyncio.sleep(0.3)
    assert sorted(got) == sorted([f"a{i}" for i in range(10)] + [f"b{i}" for i in range(5)])  # no replay
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        progress = await admin.consume_progress("cg-resume", "Resume")
    assert sum(p.lag for p in progress) == 0 and sum(p.consumer_offset for p in progress) == 15


async def test_lite_pull_seek_and_replay(cluster: Any, fast_config: Any) -> None:
    async with Producer("pg", config=fast_config()) as producer:
        queue = (await producer.send(Message("Replay", b"probe"))).message_queue
        for i in range(9):
            await producer.send(Message("Replay", f"r{i}".encode()), queue=queue)
    consumer = LitePullConsumer("cg-lite", config=fast_config(), auto_commit=False, consume_from_where=FIRST)
    consumer.assign([queue])
    async with consumer:
        first: list[Any] = []
        async with asyncio.timeout(30):
            while len(first) < 10:
                first.extend(await consumer.poll(1.0))
        assert [m.queue_offset for m in first] == list(range(10))
        await consumer.commit()
        assert await consumer.committed(queue) == 10
        await consumer.seek(queue, 4)
        replay: list[Any] = []
        async with asyncio.timeout(30):
            while len(replay) < 6:
                replay.extend(await consumer.poll(1.0))
        assert [m.queue_offset for m in replay] == list(range(4, 10))
        await consumer.seek_to_begin(queue)
        again = await consumer.poll(10.0)
        assert again[0].queue_offset == 0
        await consumer.seek_to_end(queue)
        assert await consumer.poll(0.5) == []
        with pytest.raises(InvalidOffsetError):
            await consumer.seek(queue, 11)


async def test_lite_pull_subscribe_shares_queues(cluster: Any, fast_config: Any) -> None:
    async with Producer("pg", config=fast_config()) as producer:
        sent = {(await producer.send(Message("LiteSub", f"{i}".encode()))).msg_id for i in range(16)}
    got: set[str] = set()
    consumers = [
        LitePullConsumer("cg-lite-sub", config=fast_config(), rebalance_interval=0.5, consume_from_where=FIRST)
        for _ in range(2)
    ]
    for c in consumers:
        c.subscribe("LiteSub", "*")
        await c.start()
    try:
        async with asyncio.timeout(30):
            while not got >= sent:
                for c in consumers:
                    got.update(m.msg_id for m in await c.poll(0.2))
        assert all(c.assignment() for c in consumers)
        assert not consumers[0].assignment() & consumers[1].assignment()
    finally:
        for c in consumers:
            await c.shutdown()
    assert got == sent


async def test_async_api_under_a_thousand_concurrent_sends(cluster: Any, fast_config: Any) -> None:
    async with Producer("pg", config=fast_config()) as producer:
        await producer.send(Message("Burst", b"warm-up"))
        callbacks: list[Any] = []
        futures = [producer.send_async(Message("Burst", f"{i}".encode()), on_success=callbacks.append)
                   for i in range(1000)]  # fmt: skip
        results = await asyncio.gather(*futures)
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert len({r.msg_id for r in results}) == 1000 and len(callbacks) == 1000
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        # the broker registers a topic created by a send in the background (Java does it before answering)
        async with asyncio.timeout(30):
            while True:
                try:
                    status = await admin.topic_status("Burst")
                    break
                except NoRouteError:
                    await asyncio.sleep(0.05)
    assert sum(s.max_offset for s in status) == 1001


async def test_batches_split_at_the_size_limit_and_come_back_whole(cluster: Any, fast_config: Any) -> None:
    body = b"b" * 20_000
    async with Producer("pg", config=fast_config(), max_message_size=64 * 1024) as producer:
        msgs = [Message("Batches", body + f"{i:03d}".encode(), keys=f"k{i}") for i in range(10)]
        results = await producer.send_batch(msgs)
    assert len(results) == 4  # 3 + 3 + 3 + 1 messages of ~20 KiB under a 64 KiB limit
    assert sum(len(r.msg_id.split(",")) for r in results) == 10
    assert all(len(r.offset_msg_id.split(",")) == len(r.msg_id.split(",")) for r in results)
    got: dict[str, bytes] = {}
    consumer = push(fast_config, "cg-batch")
    consumer.subscribe("Batches", "*")
    consumer.register_message_listener(lambda msgs, ctx: got.update((m.msg_id, m.body) for m in msgs))
    async with consumer:
        await wait_until(lambda: len(got) >= 10)
    assert got == {m.uniq_key: m.body for m in msgs}


@pytest.mark.parametrize("cluster", [{"enablePropertyFilter": "true"}], indirect=True)
async def test_sql92_subscription(cluster: Any, fast_config: Any) -> None:
    async with Producer("pg", config=fast_config()) as producer:
        for i in range(10):
            m = Message("Sql", f"{i}".encode())
            m.put_user_property("n", str(i))
            await producer.send(m)
    got: list[int] = []
    consumer = push(fast_config, "cg-sql")
    consumer.subscribe("Sql", MessageSelector.by_sql("n >= 7"))
    consumer.register_message_listener(lambda msgs, ctx: got.extend(int(m.body) for m in msgs))
    async with consumer:
        await wait_until(lambda: len(got) >= 3)
        await asyncio.sleep(0.3)
    assert sorted(got) == [7, 8, 9]


async def test_delayed_message(cluster: Any, fast_config: Any) -> None:
    got: list[Any] = []
    consumer = push(fast_config, "cg-delay")
    consumer.subscribe("Delayed", "*")
    consumer.register_message_listener(lambda msgs, ctx: got.extend(msgs))
    async with Producer("pg", config=fast_config()) as producer:
        await producer.send(Message("Delayed", b"warm-up"))
        async with consumer:
            await wait_until(lambda: len(got) >= 1)
            r = await producer.send(Message("Delayed", b"later", delay_level=1))
            await wait_until(lambda: any(m.msg_id == r.msg_id for m in got))
    delayed = next(m for m in got if m.msg_id == r.msg_id)
    assert delayed.topic == "Delayed" and delayed.body == b"later" and delayed.delay_level == 0
    assert delayed.properties.get("REAL_TOPIC") == "Delayed"


async def test_sql92_refused_when_the_broker_has_no_property_filter(cluster: Any, fast_config: Any) -> None:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        await admin.create_topic("SqlOff", read_queue_nums=1, write_queue_nums=1)  # waits for the route
    consumer = push(fast_config, "cg-sql-off")
    consumer.subscribe("SqlOff", MessageSelector.by_sql("n > 1"))
    consumer.register_message_listener(lambda msgs, ctx: None)
    with pytest.raises(BrokerError):
        await consumer.start()
    assert not consumer._running
