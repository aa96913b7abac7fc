"""The accumulator's pure rules: which messages may join a batch, and how a batch's answer is split."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from rocketq.client import Message, MessageQueue, SendResult, SendStatus
from rocketq.client._accumulator import ProduceAccumulator, split_batch_result
from rocketq.client.errors import InvalidMessageError
from rocketq.errors import ClientError

MQ = MessageQueue("T", "broker-a", 3)


def _accumulator(total: int = 1024) -> ProduceAccumulator:
    owner = SimpleNamespace(send_msg_timeout=3.0, max_message_size=4 * 1024 * 1024, _id_gen=None, _tasks=None,
                            _async_in_flight=set())  # fmt: skip
    return ProduceAccumulator(owner, total_batch_max_bytes=total)  # type: ignore[arg-type]


def test_a_batch_answer_becomes_one_result_per_message() -> None:
    answer = SendResult(SendStatus.SEND_OK, "u1,u2,u3", "o1,o2,o3", MQ, 40, None, "R", False)
    results = split_batch_result(answer, 3)
    assert [(r.msg_id, r.offset_msg_id, r.queue_offset) for r in results] == [
        ("u1", "o1", 40), ("u2", "o2", 41), ("u3", "o3", 42)]  # fmt: skip
    assert all(r.message_queue == MQ and r.region_id == "R" and r.trace_on is False for r in results)


def test_one_id_is_shared_and_a_short_answer_is_refused() -> None:
    single = SendResult(SendStatus.SEND_OK, "u1", "o1", MQ, 5)
    assert split_batch_result(single, 2) == [single, single]
    with pytest.raises(ClientError, match="3 messages names 2 ids"):
        split_batch_result(SendResult(SendStatus.SEND_OK, "u1,u2", "o1,o2", MQ, 5), 3)


async def test_what_java_sends_directly() -> None:
    acc = _accumulator()
    loop = asyncio.get_running_loop()

    def gathers(msg: Message) -> bool:
        return acc.gather(msg, None, None, None, loop, None, True) is not None

    assert gathers(Message("T", b"x", tags="a", keys="k"))
    assert not gathers(Message("T", b"x", delay_level=2))
    assert not gathers(Message("T", b"x", deliver_time_ms=1))
    assert not gathers(Message("%RETRY%g", b"x"))
    assert not gathers(Message("T", b"x", properties={"PGROUP": "tx"}))
    acc.held_bytes = 1024  # the total is held: the next send goes directly
    assert not gathers(Message("T", b"x"))
    for held in acc._open.values():  # no batch is sent: this owner has no task set
        assert held.timer is not None
        held.timer.cancel()


async def test_a_bad_message_fails_its_own_future_and_is_not_held() -> None:
    acc = _accumulator()
    fut = acc.gather(Message("bad topic!", b"x"), None, None, None, asyncio.get_running_loop(), None, True)
    assert fut is not None and isinstance(fut.exception(), InvalidMessageError)
    assert acc.held_bytes == 0
