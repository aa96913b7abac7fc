"""POP over the wire (Java 5.x's remoting codes) against a real ``rocketq standalone``, and kill -9 while
messages are in flight: after the restart every un-acked message comes back, no acked one does."""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import time
from pathlib import Path

import pytest

from rocketq.remoting.client import RemotingClient
from rocketq.testing.process import StandaloneProcess
from rocketq.testing.wire import Wire, pop_handles

pytestmark = pytest.mark.crash

SETTINGS = ["flushDiskType=SYNC_FLUSH", "reviveInterval=50", "consumerOffsetPersistIntervalMills=60000"]
WAIT = 30.0  # a bound on waiting, not a threshold


async def create_topic(wire: Wire, topic: str) -> None:
    ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6,
           "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}  # fmt: skip
    assert (await wire.call(17, ext)).code == 0


async def pop_until(wire: Wire, topic: str, group: str, want: int, invisible_ms: int) -> list[tuple[bytes, str, int]]:
    """(body, extraInfo, queue id) of ``want`` messages, popping with long polling until they came."""
    got: list[tuple[bytes, str, int]] = []
    deadline = time.monotonic() + WAIT
    while len(got) < want:
        assert time.monotonic() < deadline, f"popped {len(got)} of {want}"
        resp = await wire.pop(topic, group, invisible_ms=invisible_ms, poll_ms=1_000)
        assert resp.code in (0, 210), (resp.code, resp.remark)  # 210: POLLING_TIMEOUT
        if resp.code == 0:
            got += [(rec.body, h, rec.queue_id) for rec, h in pop_handles(resp)]
    return got


async def test_wire_pop_ack_and_bad_handles(tmp_path: Path) -> None:
    server = await StandaloneProcess.start(tmp_path, "reviveInterval=50")
    rc = RemotingClient()
    try:
        wire = Wire(rc, server.broker_addr)
        await create_topic(wire, "WPopT")
        for i in range(4):
            assert (await wire.send("WPopT", f"w{i}".encode(), queue_id=i % 2)).code == 0
        got = await pop_until(wire, "WPopT", "wg", 4, 60_000)
        assert sorted(b for b, _, _ in got) == [b"w0", b"w1", b"w2", b"w3"]
        for _, handle, qid in got[1:]:
            offset = int(handle.split(" ")[-1])
            assert (await wire.ack("WPopT", "wg", qid, handle, offset)).code == 0
        # the first by BATCH_ACK_MESSAGE, its offsets as Java sends them: base64 of BitSet.toByteArray()
        _, handle, qid = got[0]
        so, pt, it, rq = (int(x) for x in handle.split(" ")[:4])
        bit = int(handle.split(" ")[-1]) - so
        mask = base64.b64encode((1 << bit).to_bytes(bit // 8 + 1, "little")).decode()
        body = json.dumps({"acks": [{"c": "wg", "t": "WPopT", "r": "0", "so": so, "q": qid, "rq": rq, "pt": pt,
                                     "it": it, "b": mask}]}).encode()  # fmt: skip
        assert (await wire.call(200151, {}, body)).code == 0
        empty = await wire.pop("WPopT", "wg")  # nothing left, no long polling: POLLING_TIMEOUT
        # with the four header fields Java's client decodes on 209/210 too
        assert empty.code == 210 and {k: empty.ext_fields[k] for k in ("popTime", "invisibleTime", "reviveQid",
                                                                        "restNum")} == dict.fromkeys(
            ("popTime", "invisibleTime", "reviveQid", "restNum"), "0")  # fmt: skip
        late_pop = {"consumerGroup": "wg", "topic": "WPopT", "queueId": -1, "maxMsgNums": 1, "invisibleTime": 60000,
                    "pollTime": 0, "bornTime": 1, "initMode": 1}  # fmt: skip
        late = await wire.call(200050, late_pop)
        assert late.code == 210 and "timeout too much" in (late.remark or "")
        # a client's mistakes are answered, and the broker goes on
        assert (await wire.ack("WPopT", "wg", 0, "not a handle", 0)).code == 13  # MESSAGE_ILLEGAL
        assert (await wire.pop("WPopT", "wg", max_nums=33)).code == 29  # INVALID_PARAMETER, as Java
        group_cfg = await wire.call(352, {"group": "wg"})
        assert group_cfg.code == 0 and b'"consumeMessageOrderly":false' in group_cfg.body
        bad = await wire.call(200050, {"consumerGroup": "wg", "topic": "WPopT"})  # fields missing
        assert bad.code != 0 and bad.remark
        assert (await wire.pop("NoSuchTopic", "wg")).code == 17  # TOPIC_NOT_EXIST
    finally:
        await rc.close()
        await server.stop()


async def test_inflight_pops_survive_kill_9(tmp_path: Path) -> None:
    server = await StandaloneProcess.start(tmp_path, *SETTINGS)
    rc = RemotingClient()
    try:
        wire = Wire(rc, server.broker_addr)
        await create_topic(wire, "KPopT")
        for i in range(10):
            assert (await wire.send("KPopT", f"k{i}".encode(), queue_id=i % 2)).code == 0
        got = await pop_until(wire, "KPopT", "kg", 10, 2_000)
        acked = set()
        for body, handle, qid in got[::2]:  # every other one acked
            assert (await wire.ack("KPopT", "kg", qid, handle, int(handle.split(" ")[-1]))).code == 0
            acked.add(body)
        unacked = {b for b, _, _ in got} - acked
        server.proc.send_signal(signal.SIGKILL)  # before the offsets' periodic persist (60 s) ran
        await server.proc.wait()
    finally:
        await rc.close()
    server = await StandaloneProcess.start(tmp_path, *SETTINGS)
    rc = RemotingClient()
    try:
        wire = Wire(rc, server.broker_addr)
        back = await pop_until(wire, "KPopT", "kg", len(unacked), 60_000)
        assert sorted(b for b, _, _ in back) == sorted(unacked)  # each un-acked one, once
        await asyncio.sleep(2.5)  # past the first invisible time again: nothing else may come
        assert (await wire.pop("KPopT", "kg", poll_ms=500)).code == 210
    finally:
        await rc.close()
        await server.stop()


async def test_peek_notification_and_polling_info(tmp_path: Path) -> None:
    server = await StandaloneProcess.start(tmp_path, "reviveInterval=50")
    rc = RemotingClient()
    try:
        wire = Wire(rc, server.broker_addr)
        await create_topic(wire, "NPopT")
        group = {"consumerGroup": "ng", "topic": "NPopT", "queueId": -1}
        waiting = asyncio.ensure_future(wire.call(200054, group | {"pollTime": 5000, "bornTime": 0}, timeout=10))
        deadline = time.monotonic() + WAIT
        while True:  # the notification is parked: POLLING_INFO counts it
            info = await wire.call(200055, group | {"queueId": 0})
            assert info.code == 0
            if info.ext_fields["pollingNum"] == "1":
                break
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        assert (await wire.send("NPopT", b"n0", queue_id=1)).code == 0
        woken = await waiting
        assert (woken.code, woken.ext_fields["hasMsg"]) == (0, "true")
        peeked = await wire.call(200052, group | {"maxMsgNums": 8})
        assert peeked.code == 0 and b"n0" in peeked.body
        # a peek hands nothing out: the message is still there to pop
        got = await pop_until(wire, "NPopT", "ng", 1, 60_000)
        assert [b for b, _, _ in got] == [b"n0"]
        empty = await wire.call(200054, group | {"pollTime": 0, "bornTime": 0})
        assert (empty.code, empty.ext_fields["hasMsg"]) == (0, "false")
    finally:
        await rc.close()
        await server.stop()
