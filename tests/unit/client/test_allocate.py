"""Allocation strategies and the hash selector against outputs of Apache RocketMQ 4.9.8's own Java classes.

``java_gold.jsonl`` was produced by compiling the 4.9.8 sources of ``AllocateMessageQueueAveragely``,
``…AveragelyByCircle``, ``…ConsistentHash`` (+ ``ConsistentHashRouter``), ``AllocateMachineRoomNearby``,
``AllocateMessageQueueByMachineRoom`` and ``SelectMessageQueueByHash`` with a small driver that prints, for
several queue/consumer shapes, what each client id gets (client ids ``192.168.0.<n>@<1000+n>``, sorted; queues
``TopicTest``/``broker-a|b``/0…n-1, sorted like Java's ``Collections.sort``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rocketq.client.allocate import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    allocate_averagely,
    md5_hash,
    mq_java_string,
)
from rocketq.client.selectors import java_hash_code, select_by_hash
from rocketq.protocol.bodies import MessageQueue

GOLD = [json.loads(line) for line in (Path(__file__).parent / "java_gold.jsonl").read_text().splitlines()]


def mqs(topic: str, brokers: list[str], n: int) -> list[MessageQueue]:
    return sorted(MessageQueue(topic, b, i) for b in brokers for i in range(n))


def cids(n: int) -> list[str]:
    return sorted(f"192.168.0.{i + 1}@{1000 + i}" for i in range(n))


def _strategy(name: str):
    kind = name.split("-")[0]
    return {
        "avg": AllocateMessageQueueAveragely(),
        "circle": AllocateMessageQueueAveragelyByCircle(),
        "hash": AllocateMessageQueueConsistentHash(),
        "hash3": AllocateMessageQueueConsistentHash(3),
    }[kind]


SHAPE_CASES = [g for g in GOLD if "case" in g and g["case"].split("-")[0] in ("avg", "circle", "hash", "hash3")]


@pytest.mark.parametrize("case", SHAPE_CASES, ids=[c["case"] for c in SHAPE_CASES])
def test_strategy_matches_java(case: dict) -> None:
    _, shape, n_cid = case["case"].split("-")
    n_q = int(shape.split("x")[0])
    mq_all = mqs("TopicTest", ["broker-a", "broker-b"], n_q)
    cid_all = cids(int(n_cid))
    strategy = _strategy(case["case"])
    for cid in cid_all:
        got = [[m.broker_name, m.queue_id] for m in strategy("g", cid, mq_all, cid_all)]
        assert got == case["result"][cid], cid


def _resolver():
    class R:
        def broker_deploy_in(self, mq: MessageQueue) -> str:
            return mq.broker_name.split("-")[0]

        def consumer_deploy_in(self, client_id: str) -> str:
            return client_id.split("-")[0]

    return R()


@pytest.mark.parametrize("name", ["nearby-avg", "nearby-circle"])
def test_machine_room_nearby_matches_java(name: str) -> None:
    case = next(g for g in GOLD if g.get("case") == name)
    inner = AllocateMessageQueueAveragely() if name == "nearby-avg" else AllocateMessageQueueAveragelyByCircle()
    strategy = AllocateMachineRoomNearby(inner, _resolver())
    mq_all = mqs("T", ["IDC1-b", "IDC2-b", "IDC3-b"], 4)
    cid_all = sorted(["IDC1-c0", "IDC1-c1", "IDC2-c0"])
    for cid in cid_all:
        got = [[m.broker_name, m.queue_id] for m in strategy("g", cid, mq_all, cid_all)]
        assert got == case["result"][cid]
    assert strategy.name == f"MACHINE_ROOM_NEARBY-{inner.name}"


def test_machine_room_matches_java() -> None:
    case = next(g for g in GOLD if g.get("case") == "machine-room")
    strategy = AllocateMessageQueueByMachineRoom({"room1", "room3"})
    mq_all = mqs("T", ["room1@b1", "room2@b2", "room3@b3"], 5)
    cid_all = cids(3)
    for cid in cid_all:
        got = [[m.broker_name, m.queue_id] for m in strategy("g", cid, mq_all, cid_all)]
        assert got == case["result"][cid]


SELECTOR_CASES = [g for g in GOLD if "selector" in g]


@pytest.mark.parametrize("case", SELECTOR_CASES, ids=[str(c["selector"]) for c in SELECTOR_CASES])
def test_select_by_hash_matches_java(case: dict) -> None:
    queues = [MessageQueue("T", "b", i) for i in range(10)]
    assert select_by_hash(queues, None, case["selector"]).queue_id == case["queue"]


def test_java_test_suite_expectations() -> None:
    # AllocateMessageQueueAveragelyTest / AllocateMessageQueueAveragelyByCircleTest in Apache RocketMQ.
    mq_all = [MessageQueue("topic", "brokerName", i) for i in range(10)]
    cid_all = [f"CID_PREFIX{i}" for i in range(4)]
    assert [len(allocate_averagely("", c, mq_all, cid_all)) for c in cid_all] == [3, 3, 2, 2]
    circle = AllocateMessageQueueAveragelyByCircle()
    assert [[m.queue_id for m in circle("", c, mq_all, cid_all)] for c in cid_all] == [
        [0, 4, 8], [1, 5, 9], [2, 6], [3, 7],
    ]  # fmt: skip
    assert circle("", "CID_PREFIX", mq_all, cid_all) == []


def test_unknown_client_gets_nothing_and_bad_input_raises() -> None:
    mq_all = mqs("T", ["b"], 4)
    for strategy in (AllocateMessageQueueAveragely(), AllocateMessageQueueConsistentHash()):
        assert strategy("g", "nobody", mq_all, ["a", "b"]) == []
        with pytest.raises(ValueError):
            strategy("g", "", mq_all, ["a"])
        with pytest.raises(ValueError):
            strategy("g", "a", [], ["a"])
        with pytest.raises(ValueError):
            strategy("g", "a", mq_all, [])


@pytest.mark.parametrize("seed", range(5))
def test_every_queue_allocated_exactly_once(seed: int) -> None:
    rnd = random.Random(seed)
    mq_all = mqs("T", ["a", "b", "c"], rnd.randint(1, 12))
    cid_all = cids(rnd.randint(1, 20))
    for strategy in (AllocateMessageQueueAveragely(), AllocateMessageQueueAveragelyByCircle(),
                     AllocateMessageQueueConsistentHash(rnd.randint(1, 10))):  # fmt: skip
        got = [mq for cid in cid_all for mq in strategy("g", cid, mq_all, cid_all)]
        assert sorted(got) == mq_all


def test_consistent_hash_moves_only_the_removed_consumers_queues() -> None:
    strategy = AllocateMessageQueueConsistentHash(3)
    mq_all = mqs("T", ["a", "b"], 10)
    cid_all = cids(6)
    before = {mq: cid for cid in cid_all for mq in strategy("g", cid, mq_all, cid_all)}
    removed = cid_all[0]
    rest = cid_all[1:]
    after = {mq: cid for cid in rest for mq in strategy("g", cid, mq_all, rest)}
    for mq, cid in before.items():
        if cid != removed:
            assert after[mq] == cid


def test_consistent_hash_primitives() -> None:
    assert mq_java_string(MessageQueue("T", "b", 3)) == "MessageQueue [topic=T, brokerName=b, queueId=3]"
    # MD5("a") = 0cc175b9c0f1b6a8...; Java keeps the first 4 bytes as an unsigned big-endian int.
    assert md5_hash("a") == 0x0CC175B9


def test_by_config_ignores_the_group() -> None:
    chosen = [MessageQueue("T", "b", 1)]
    assert AllocateMessageQueueByConfig(chosen)("g", "x", mqs("T", ["b"], 4), ["x", "y"]) == chosen


def test_java_hash_code() -> None:
    assert java_hash_code("polygenelubricants") == -(2**31)
    assert java_hash_code(7) == 7
    assert java_hash_code(True) == 1231
    assert java_hash_code(2**40) == (2**40 >> 32) ^ 0  # Long.hashCode
