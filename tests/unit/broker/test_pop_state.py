"""The POP service's pure pieces: receipt handles, checkpoint records, pending checkpoints, FIFO queues."""

from __future__ import annotations

import pytest

from rocketq.broker.pop.checkpoints import PendingCheckpoints
from rocketq.broker.pop.fifo import OrderQueue
from rocketq.broker.pop.records import Checkpoint, CkKey, ack_json, parse_ack, revived_json
from rocketq.broker.pop.types import ReceiptHandle


def test_a_handle_is_javas_extra_info_and_reads_back() -> None:
    h = ReceiptHandle(5, 1700000000000, 30000, 3, True, "broker-a", 1, 7)
    assert h.text() == "5 1700000000000 30000 3 1 broker-a 1 7"
    assert ReceiptHandle.parse(h.text()) == h
    assert ReceiptHandle.parse(h.text() + " 12345") == h  # gRPC appends the commit-log offset
    assert h.expires_at == 1700000030000 and not h.orderly


@pytest.mark.parametrize("text", ["", "1 2 3", "a b c d 0 bn 1 2", "1 2 3 4 7 bn 1 2"])
def test_anything_else_is_refused_with_a_reason(text: str) -> None:
    with pytest.raises(ValueError, match="receipt handle"):
        ReceiptHandle.parse(text)


def test_checkpoint_and_ack_records_round_trip() -> None:
    key = CkKey("g", "T", 2, 10, 1000)
    ck = Checkpoint(key, 500, [10, 12, 13], 4, "broker-a", revive_offset=9)
    back = Checkpoint.from_json(ck.to_json(), 9)
    assert back == ck and back.due_ms == 1500
    assert parse_ack(ack_json(key, 12, "broker-a")) == (key, 12)
    assert parse_ack(revived_json(key)) == (key, -1)


def test_pending_checkpoints_settle_by_ack_and_come_due_by_time() -> None:
    pending = PendingCheckpoints()
    a = Checkpoint(CkKey("g", "T", 0, 0, 1000), 100, [0, 1], 0, "b", revive_offset=3)
    b = Checkpoint(CkKey("g", "T", 0, 2, 1000), 500, [2], 0, "b", revive_offset=5)
    pending.add(a)
    pending.add(b)
    assert pending.lowest_stored(0) == 3 and pending.counts(1050) == {("g", "T"): (3, 3)}
    assert pending.ack(a.key, 0) and not pending.ack(a.key, 0)  # an offset is settled once
    assert pending.pop_due(1099) == []
    assert pending.pop_due(1100) == [(a, [1])]
    pending.remove(a.key)
    assert pending.lowest_stored(0) == 5 and pending.next_due_ms() == 1500
    assert pending.ack(b.key, 2) and len(pending) == 0 and pending.lowest_stored(0) is None


def test_an_ack_of_every_offset_before_the_restart_leaves_nothing_pending() -> None:
    pending = PendingCheckpoints()
    pending.add(Checkpoint(CkKey("g", "T", 0, 0, 1), 1, [0, 1], 0, "b", 0), acked={0, 1})
    assert len(pending) == 0


def test_a_fifo_queue_is_blocked_until_acked_or_expired_and_commits_in_order() -> None:
    q = OrderQueue()
    assert q.handed_out(0, now_ms=1000, invisible_ms=100, attempt_id="a") == 1
    q.handed_out(1, now_ms=1000, invisible_ms=100, attempt_id="a")
    assert q.blocked(1050, "b") and not q.blocked(1050, "a")  # the same request retried may read again
    assert not q.blocked(1100, "b")  # expired
    assert q.ack(1) == 0  # offset 0 still un-acked: the commit stays at 0
    assert q.handed_out(0, now_ms=1200, invisible_ms=100, attempt_id="c") == 2  # delivered again, counted
    assert q.change(0, 1200, 5000) and q.blocked(1300, "d")
    assert q.ack(0) == 2 and q.popped == {}  # all acked: past them
