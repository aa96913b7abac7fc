"""The client's side of a dead master: the address a pull or an offset request goes to (Java
``findBrokerAddressInSubscribe``), and the route refresh a broker connection failure triggers (debounced per
topic)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketq.client._instance import ClientInstance
from rocketq.client._route import TopicPublishInfo
from rocketq.client._route_cache import RouteCache
from rocketq.client._route_refresh import FailureRefresh
from rocketq.client.config import ClientConfig
from rocketq.client.errors import BrokerNotFoundError
from rocketq.client.message import Message, MessageQueue
from rocketq.client.producer import _SYNC, Producer
from rocketq.protocol.route import BrokerData, QueueData, TopicRouteData


def _route(*brokers: BrokerData) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=tuple(QueueData(b.broker_name, 2, 2, 6) for b in brokers), broker_datas=brokers
    )


def test_subscribe_address_exact_then_next_slave_then_any() -> None:
    cache = RouteCache()
    # the slaves listed before the master: "any" still means the lowest id, as Java's HashMap order gives
    cache.put("T", _route(BrokerData("c", "a", {2: "s2:1", 1: "s1:1", 0: "m:1"}), BrokerData("c", "b", {3: "s3:1"})))
    assert cache.subscribe_addr("a", 0) == ("m:1", False)
    assert cache.subscribe_addr("a", 1) == ("s1:1", True)
    assert cache.subscribe_addr("b", 2) == ("s3:1", True)  # id 2 missing: id 3 (next slave)
    assert cache.subscribe_addr("b", 0, only_this_broker=True) is None  # offsets try the master alone first
    assert cache.subscribe_addr("b", 0) == ("s3:1", True)  # ... then any address: the slave
    # the master gone from the route: a pull suggested to the master goes to the slave
    cache.put("T", _route(BrokerData("c", "a", {2: "s2:1", 1: "s1:1"})))
    assert cache.subscribe_addr("a", 0) == ("s1:1", True)
    assert cache.master_addr("a") is None
    assert cache.subscribe_addr("zz", 0) is None


async def test_failures_refresh_at_once_then_at_most_once_per_interval() -> None:
    calls: list[str] = []
    done = asyncio.Event()
    tasks: set[asyncio.Task[None]] = set()

    async def refresh(topic: str) -> bool:
        calls.append(topic)
        if len(calls) == 3:
            done.set()
        return True  # changed: no follow-up

    def spawn(coro: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        tasks.add(task)

    debounce = FailureRefresh(refresh, spawn, interval=0.2)
    for _ in range(5):  # a burst of failures on two topics
        debounce.trigger(["A", "B"])
    await asyncio.sleep(0)
    assert sorted(calls) == ["A", "B"]  # the first refresh of each runs at once
    debounce.trigger(["A"])  # within the interval: folded into one later refresh
    debounce.trigger(["A"])
    async with asyncio.timeout(10):
        await done.wait()
    await asyncio.gather(*tasks)
    assert sorted(calls) == ["A", "A", "B"] and debounce.count == 3


class _Recorder:
    def __init__(self) -> None:
        self.triggered: list[list[str]] = []

    def trigger(self, topics: list[str]) -> None:
        self.triggered.append(topics)


def test_a_broker_failure_names_the_topics_whose_routes_hold_it(monkeypatch: pytest.MonkeyPatch) -> None:
    instance = ClientInstance(ClientConfig(namesrv_addr="127.0.0.1:9"))
    recorder = _Recorder()
    monkeypatch.setattr(instance, "failure_refresh", recorder)
    instance.routes.put("T1", _route(BrokerData("c", "a", {0: "m:1", 1: "s:1"})))
    instance.routes.put("T2", _route(BrokerData("c", "b", {0: "m2:1"})))
    instance.routes.put("T3", _route(BrokerData("c", "a", {0: "m:1"}), BrokerData("c", "b", {0: "m2:1"})))
    instance.broker_unreachable("m:1")
    instance.broker_unreachable("127.0.0.1:9")  # a name server: no route names it
    assert recorder.triggered == [["T1", "T3"]]
    assert instance.remoting.on_connect_failed == instance.broker_unreachable


def test_the_refresh_on_failure_can_be_turned_off() -> None:
    instance = ClientInstance(ClientConfig(namesrv_addr="127.0.0.1:9", failure_route_refresh_interval=0))
    assert instance.remoting.on_connect_failed is None and not instance.dispatcher.close_listeners


async def test_an_unchanged_route_is_fetched_once_more_after_the_interval() -> None:
    calls: list[str] = []
    tasks: list[asyncio.Task[None]] = []

    async def refresh(topic: str) -> bool:
        calls.append(topic)
        return False  # the name server has not dropped the broker yet

    debounce = FailureRefresh(refresh, lambda coro, name: tasks.append(asyncio.ensure_future(coro)), interval=0.05)
    debounce.trigger(["A"])
    async with asyncio.timeout(10):
        while len(tasks) < 2 or not all(t.done() for t in tasks):
            await asyncio.sleep(0.01)
    assert calls == ["A", "A"] and len(tasks) == 2  # one follow-up, not a loop


class _NoMaster:
    """A client instance whose route has lost the master of every group (a failover in progress)."""

    def find_broker_address_in_publish(self, broker_name: str) -> None:
        return None

    async def update_topic_route(self, topic: str, **_: object) -> bool:
        return False  # the name server no longer has the topic (its new master lacks it)


async def test_a_send_to_a_group_without_master_forgets_the_cached_queues() -> None:
    """The next send looks the topic up again (and may fall back to the default topic's route, so the new master
    auto-creates it) instead of retrying the stale queues until the 30 s poll."""
    producer = Producer("PG_FO")
    producer._instance, producer._running = _NoMaster(), True  # type: ignore[assignment]
    stale = TopicPublishInfo([MessageQueue("T", "broker-a", 0)], have_topic_router_info=True)
    producer.topic_publish_info_table["T"] = stale
    with pytest.raises(BrokerNotFoundError):
        await producer._send_kernel(Message("T", b"x"), MessageQueue("T", "broker-a", 0), _SYNC, 3.0)
    fresh = producer.topic_publish_info_table["T"]
    assert fresh is not stale and not fresh.ok() and not fresh.have_topic_router_info
