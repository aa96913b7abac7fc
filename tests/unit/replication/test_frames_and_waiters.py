"""The HA frames (4.9's layout, big-endian) and SYNC_MASTER's grouped waits."""

from __future__ import annotations

import asyncio
import threading

import pytest

from rocketq.replication.frames import TransferReader, encode_report, encode_transfer_header, last_report
from rocketq.replication.waiters import ReplicaWaiters


def test_a_report_is_eight_big_endian_bytes_and_the_last_complete_one_counts() -> None:
    assert encode_report(0x0102030405060708) == bytes(range(1, 9))
    buf = encode_report(10) + encode_report(20) + b"\x00\x00\x00"
    assert last_report(buf) == (20, 16)  # the partial third report stays for the next read
    assert last_report(b"\x00" * 7) == (None, 0)


def test_transfer_frames_are_split_out_of_any_chunking() -> None:
    header = encode_transfer_header(4096, 5)
    assert header == (4096).to_bytes(8, "big") + (5).to_bytes(4, "big")
    stream = header + b"hello" + encode_transfer_header(4101, 0) + encode_transfer_header(4101, 2) + b"ab"
    reader = TransferReader()
    got = []
    for i in range(0, len(stream), 5):  # arbitrary TCP chunking
        got += reader.feed(stream[i : i + 5])
    assert [(t.offset, t.body) for t in got] == [(4096, b"hello"), (4101, b""), (4101, b"ab")]


def test_a_negative_body_size_is_refused() -> None:
    with pytest.raises(ValueError):
        TransferReader().feed(encode_transfer_header(0, -1))


async def test_one_ack_completes_every_wait_it_covers_and_the_rest_time_out() -> None:
    loop = asyncio.get_running_loop()
    waiters = ReplicaWaiters(loop, timeout_s=0.2)
    results: dict[int, bool] = {}
    for off in (100, 300, 200, 400):
        waiters.add(off, lambda ok, off=off: results.__setitem__(off, ok))
    waiters.ack(250)
    assert results == {100: True, 200: True}
    waiters.ack(150)  # acks never go back
    assert waiters.acked == 250
    waiters.ack(300)
    assert results[300] is True
    for _ in range(200):
        if 400 in results:
            break
        await asyncio.sleep(0.02)
    assert results[400] is False  # no slave reached it in time: FLUSH_SLAVE_TIMEOUT
    waiters.add(50, lambda ok: results.__setitem__(50, ok))  # already acknowledged: answered at once
    assert results[50] is True
    waiters.close()


async def test_a_wait_added_from_another_thread_is_answered_on_the_loop() -> None:
    loop = asyncio.get_running_loop()
    waiters = ReplicaWaiters(loop, timeout_s=5)
    done = asyncio.Event()
    seen: list[tuple[bool, bool]] = []

    def cb(ok: bool) -> None:
        seen.append((ok, threading.current_thread() is threading.main_thread()))
        done.set()

    t = threading.Thread(target=waiters.add, args=(10, cb))
    t.start()
    t.join()
    await asyncio.sleep(0)
    waiters.ack(10)
    await asyncio.wait_for(done.wait(), 5)
    assert seen == [(True, True)]
    waiters.close()


async def test_closing_fails_the_pending_waits() -> None:
    waiters = ReplicaWaiters(asyncio.get_running_loop(), timeout_s=60)
    seen: list[bool] = []
    waiters.add(10, seen.append)
    waiters.close()
    waiters.add(20, seen.append)
    assert seen == [False, False]
