"""ProcessQueue bookkeeping and the push consumer's flow-control decisions (no I/O)."""

from __future__ import annotations

import time

from rocketq.client.message import MessageExt
from rocketq.client.process_queue import ProcessQueue
from rocketq.client.push_consumer import PULL_DELAY_WHEN_CACHE_FLOW_CONTROL, PushConsumer


def msg(offset: int, size: int = 10, max_offset: int | None = None) -> MessageExt:
    m = MessageExt("T", b"x" * size)
    m.queue_offset = offset
    if max_offset is not None:
        m.properties["MAX_OFFSET"] = str(max_offset)
    return m


def test_put_and_remove_commit_the_smallest_cached_offset() -> None:
    pq = ProcessQueue()
    batch = [msg(i) for i in range(5, 10)]
    assert pq.put_messages(batch) is True  # first put dispatches
    assert pq.put_messages([msg(10)]) is False  # already consuming
    assert (pq.msg_count, pq.msg_size, pq.max_span) == (6, 60, 5)
    # Removing out of order keeps the commit offset at the smallest still cached.
    assert pq.remove_messages([batch[2], batch[3]]) == 5
    assert pq.remove_messages([batch[0]]) == 6
    assert pq.remove_messages([batch[1], batch[4], msg(10)]) == 11  # empty → max + 1
    assert (pq.msg_count, pq.msg_size) == (0, 0)
    assert pq.remove_messages([msg(3)]) == -1  # nothing cached


def test_duplicates_are_not_counted_twice_and_acc_count() -> None:
    pq = ProcessQueue()
    pq.put_messages([msg(1), msg(2, max_offset=100)])
    pq.put_messages([msg(2)])
    assert pq.msg_count == 2
    assert pq.msg_acc_cnt == 98


def test_orderly_take_commit_rollback() -> None:
    pq = ProcessQueue()
    pq.put_messages([msg(i) for i in range(4)])
    taken = pq.take_messages(3)
    assert [m.queue_offset for m in taken] == [0, 1, 2]
    pq.rollback()
    assert [m.queue_offset for m in pq.take_messages(2)] == [0, 1]
    assert pq.commit() == 2
    assert pq.msg_count == 2
    again = pq.take_messages(2)
    pq.make_message_to_consume_again(again[:1])
    assert [m.queue_offset for m in pq.messages()] == [2]
    assert pq.commit() == 4  # offset 3 was still in the consuming set
    assert [m.queue_offset for m in pq.take_messages(1)] == [2]
    assert pq.take_messages(5) == []
    assert pq.consuming is False


def test_lock_and_pull_expiry_use_the_clock() -> None:
    now = [100.0]
    pq = ProcessQueue(clock=lambda: now[0])
    assert not pq.is_lock_expired() and not pq.is_pull_expired()
    now[0] += 31
    assert pq.is_lock_expired() and not pq.is_pull_expired()
    now[0] += 100
    assert pq.is_pull_expired()


def test_flow_control_thresholds() -> None:
    c = PushConsumer("g", namesrv_addr="127.0.0.1:1", pull_threshold_for_queue=3, pull_threshold_size_for_queue=1,
                     consume_concurrently_max_span=10)  # fmt: skip
    pq = ProcessQueue()
    pq.put_messages([msg(0), msg(1), msg(2)])
    assert c.flow_control_delay(pq) is None
    pq.put_messages([msg(3)])
    assert c.flow_control_delay(pq) == PULL_DELAY_WHEN_CACHE_FLOW_CONTROL  # count > 3
    pq.clear()
    pq.put_messages([msg(0, size=2 * 1024 * 1024)])
    assert c.flow_control_delay(pq) == PULL_DELAY_WHEN_CACHE_FLOW_CONTROL  # 2 MiB > 1 MiB
    pq.clear()
    pq.put_messages([msg(0), msg(11)])
    assert c.flow_control_delay(pq) == PULL_DELAY_WHEN_CACHE_FLOW_CONTROL  # span 11 > 10
    c.consume_orderly = True
    assert c.flow_control_delay(pq) is None  # the span limit is for concurrent consumption only


def test_running_info_times_are_epoch_milliseconds() -> None:
    """ProcessQueueInfo goes to mqadmin consumerStatus, which prints the times as dates: wall clock, not monotonic."""
    now = [1000.0]
    pq = ProcessQueue(clock=lambda: now[0])
    now[0] += 5.0  # the queue was last pulled, locked and consumed 5 s ago
    before = int(time.time() * 1000)
    info = pq.info()
    for key in ("lastPullTimestamp", "lastLockTimestamp", "lastConsumeTimestamp"):
        assert before - 5000 - 1000 <= int(str(info[key])) <= before - 5000 + 1000, key
