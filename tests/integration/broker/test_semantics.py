"""Transactions, delay levels, retry and dead letters over the wire, including broker restarts."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.bodies import HeartbeatData
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.message import SYSFLAG_TX_COMMIT, SYSFLAG_TX_MASK, parse_offset_msg_id
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.server import RemotingDispatcher
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire, records

FAST_DELAYS = {"messageDelayLevel": "1s 1s 1s 1s 1s 2s", "scheduleIntervalMills": 50}
FAST_CHECKS = {"transactionCheckInterval": 200, "transactionTimeOut": 0, "transactionCheckMax": 2}


async def pull_all(wire: Wire, topic: str, queue_id: int = 0, group: str = "cg") -> list[Any]:
    out, offset = [], 0
    while True:
        resp = await wire.pull(topic, queue_id, offset, group=group)
        if resp.code != ResponseCode.SUCCESS:
            return out
        out.extend(records(resp))
        offset = int(resp.ext_fields["nextBeginOffset"])


async def eventually(fn: Any, timeout: float = 10.0) -> Any:
    async with asyncio.timeout(timeout):
        while True:
            value = await fn()
            if value:
                return value
            await asyncio.sleep(0.1)


async def send_half(wire: Wire, topic: str, body: bytes, group: str = "txg", **props: str) -> RemotingCommand:
    resp = await wire.send(topic, body, group=group, props={"TRAN_MSG": "true", "PGROUP": group, **props})
    assert resp.code == 0, resp.remark
    return resp


async def end_tx(wire: Wire, resp: RemotingCommand, decision: int, group: str = "txg", check: bool = False) -> int:
    _, phys = parse_offset_msg_id(resp.ext_fields["msgId"])
    ext = {"producerGroup": group, "tranStateTableOffset": resp.ext_fields["queueOffset"],
           "commitLogOffset": str(phys), "commitOrRollback": str(decision),
           "fromTransactionCheck": "true" if check else "false", "msgId": "x"}  # fmt: skip
    return (await wire.call(RequestCode.END_TRANSACTION, ext)).code


async def test_half_message_invisible_until_commit_and_rollback_never(wire: Wire) -> None:
    committed = await send_half(wire, "TTx", b"commit-me")
    rolled = await send_half(wire, "TTx", b"roll-me-back")
    assert committed.ext_fields["queueId"] == "0"
    assert await pull_all(wire, "TTx") == []
    assert await end_tx(wire, committed, 8) == 0
    assert await end_tx(wire, rolled, 12) == 0
    assert await end_tx(wire, committed, 8) == 0  # a retried commit is idempotent
    msgs = await pull_all(wire, "TTx")
    assert [m.body for m in msgs] == [b"commit-me"]
    m = msgs[0]
    assert m.sys_flag & SYSFLAG_TX_MASK == SYSFLAG_TX_COMMIT
    assert m.prepared_transaction_offset == parse_offset_msg_id(committed.ext_fields["msgId"])[1]
    assert "TRAN_MSG" not in m.properties and "REAL_TOPIC" not in m.properties
    # Wrong group or offset is refused.
    other = await send_half(wire, "TTx", b"x")
    assert await end_tx(wire, other, 8, group="not-the-group") == ResponseCode.SYSTEM_ERROR


@pytest.mark.parametrize("cluster", [FAST_CHECKS], indirect=True)
async def test_check_asks_a_live_producer_which_commits(cluster: EmbeddedCluster) -> None:
    checks: list[RemotingCommand] = []
    d = RemotingDispatcher("producer")
    rc = RemotingClient(d)
    wire = Wire(rc, cluster.broker_addr)

    async def on_check(conn: Any, cmd: RemotingCommand) -> None:
        checks.append(cmd)
        ext = {"producerGroup": "txg", "tranStateTableOffset": cmd.ext_fields["tranStateTableOffset"],
               "commitLogOffset": cmd.ext_fields["commitLogOffset"], "commitOrRollback": "8",
               "fromTransactionCheck": "true", "msgId": cmd.ext_fields.get("msgId", "")}  # fmt: skip
        await wire.call(RequestCode.END_TRANSACTION, ext)

    d.register(RequestCode.CHECK_TRANSACTION_STATE, on_check)
    try:
        assert (await wire.call(RequestCode.HEART_BEAT, body=HeartbeatData("p1", ["txg"]).encode())).code == 0
        await send_half(wire, "TCheck", b"unknown-state")
        msgs = await eventually(lambda: pull_all(wire, "TCheck"))
        assert [m.body for m in msgs] == [b"unknown-state"]
        check = checks[0]
        assert check.is_oneway
        from rocketq.protocol.message import decode_record

        shown = decode_record(check.body)
        assert shown.topic == "TCheck" and shown.body == b"unknown-state"
        await asyncio.sleep(1.0)  # further passes must not commit it twice
        assert len(await pull_all(wire, "TCheck")) == 1
    finally:
        await rc.close()


@pytest.mark.parametrize("cluster", [FAST_CHECKS], indirect=True)
async def test_unanswered_checks_end_in_trans_check_max_time_topic(wire: Wire, cluster: EmbeddedCluster) -> None:
    await send_half(wire, "TNoAnswer", b"orphan")

    async def discarded() -> list[Any]:
        return await pull_all(wire, "TRANS_CHECK_MAX_TIME_TOPIC")

    msgs = await eventually(discarded)
    assert msgs[0].body == b"orphan" and msgs[0].properties["TRANSACTION_CHECK_TIMES"] == "2"
    assert await pull_all(wire, "TNoAnswer") == []


@pytest.mark.parametrize("cluster", [{"transactionTimeOut": 600_000}], indirect=True)
async def test_pending_half_message_survives_restart(wire: Wire, cluster: EmbeddedCluster, rc: RemotingClient) -> None:
    half = await send_half(wire, "TRestart", b"pending")
    broker = await cluster.restart_broker()
    w2 = Wire(rc, broker.config.broker_addr)
    assert await pull_all(w2, "TRestart") == []
    assert await end_tx(w2, half, 8) == 0
    assert [m.body for m in await pull_all(w2, "TRestart")] == [b"pending"]


@pytest.mark.parametrize("cluster", [FAST_DELAYS], indirect=True)
async def test_delay_levels_deliver_later_to_the_real_queue(wire: Wire) -> None:
    t0 = time.monotonic()
    assert (await wire.send("TDelay", b"later", queue_id=1, props={"DELAY": "2", "TAGS": "A"})).code == 0
    assert (await wire.send("TDelay", b"clamped", queue_id=1, props={"DELAY": "99"})).code == 0
    early = await pull_all(wire, "TDelay", 1)
    # nothing is in the real queue before its level's 1 s has passed (on a loaded machine the pull itself may
    # come after that; then what it finds is due, and only an early find would be wrong)
    assert early == [] or time.monotonic() - t0 >= 0.9, early
    msgs = await eventually(lambda: pull_all(wire, "TDelay", 1))
    assert time.monotonic() - t0 >= 0.9
    first = msgs[0]
    assert first.body == b"later" and first.properties["REAL_TOPIC"] == "TDelay" and "DELAY" not in first.properties
    tagged = await wire.pull("TDelay", 1, 0, subscription="A")
    assert [m.body for m in records(tagged)] == [b"later"]  # tags code recomputed on re-put
    everything = await eventually(lambda: _count_at_least(wire, "TDelay", 1, 2))
    assert {m.body for m in everything} == {b"later", b"clamped"}


async def _count_at_least(wire: Wire, topic: str, qid: int, n: int) -> list[Any] | None:
    msgs = await pull_all(wire, topic, qid)
    return msgs if len(msgs) >= n else None


@pytest.mark.parametrize("cluster", [FAST_DELAYS], indirect=True)
async def test_delayed_message_survives_restart(wire: Wire, cluster: EmbeddedCluster, rc: RemotingClient) -> None:
    assert (await wire.send("TDelayR", b"after-restart", props={"DELAY": "6"})).code == 0
    broker = await cluster.restart_broker()
    w2 = Wire(rc, broker.config.broker_addr)
    msgs = await eventually(lambda: pull_all(w2, "TDelayR"))
    assert [m.body for m in msgs] == [b"after-restart"]
    await asyncio.sleep(0.5)
    assert len(await pull_all(w2, "TDelayR")) == 1


@pytest.mark.parametrize("cluster", [FAST_DELAYS], indirect=True)
async def test_send_back_retries_then_dead_letters(wire: Wire) -> None:
    group = {"groupName": "rg", "retryMaxTimes": 2, "retryQueueNums": 1}
    assert (await wire.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=orjson.dumps(group))).code == 0
    sent = await wire.send("TRetry", b"fails", props={"KEYS": "k1"})
    original = (await pull_all(wire, "TRetry"))[0]
    current = original
    for attempt in range(1, 3):
        back = {"offset": str(current.commit_log_offset), "group": "rg", "delayLevel": "0",
                "originMsgId": original.msg_id, "originTopic": "TRetry"}  # fmt: skip
        assert (await wire.call(RequestCode.CONSUMER_SEND_MSG_BACK, back)).code == 0
        retried = await eventually(lambda n=attempt: _count_at_least(wire, "%RETRY%rg", 0, n))
        current = retried[attempt - 1]
        assert current.reconsume_times == attempt
        assert current.properties["RETRY_TOPIC"] == "TRetry"
        # the first failed message's offset id, as Java's broker writes it (not the header's originMsgId)
        assert current.properties["ORIGIN_MESSAGE_ID"] == original.offset_msg_id
        assert current.body == b"fails"
    back = {"offset": str(current.commit_log_offset), "group": "rg", "delayLevel": "0"}
    assert (await wire.call(RequestCode.CONSUMER_SEND_MSG_BACK, back)).code == 0
    dlq = await eventually(lambda: pull_all(wire, "%DLQ%rg"))
    assert dlq[0].body == b"fails" and dlq[0].reconsume_times == 3
    assert sent.code == 0
    # every hand-back is counted under the original topic (the dead letter too), as Java's incSendBackNums
    view = {"statsName": "SNDBCK_PUT_NUMS", "statsKey": "TRetry@rg"}
    counted = await wire.call(RequestCode.VIEW_BROKER_STATS_DATA, view)
    assert counted.code == 0 and orjson.loads(counted.body)["statsDay"]["sum"] == 3


@pytest.mark.parametrize("cluster", [FAST_DELAYS], indirect=True)
async def test_timer_messages_deliver_at_their_time_in_due_order(wire: Wire) -> None:
    now = int(time.time() * 1000)
    assert (await wire.send("TTimer", b"second", props={"TIMER_DELIVER_MS": str(now + 1500)})).code == 0
    assert (await wire.send("TTimer", b"first", props={"TIMER_DELAY_MS": "700"})).code == 0
    assert (await wire.send("TTimer", b"now", props={"TIMER_DELAY_SEC": "0"})).code == 0
    assert [m.body for m in await pull_all(wire, "TTimer")] == [b"now"]
    msgs = await eventually(lambda: _count_at_least(wire, "TTimer", 0, 3))
    assert [m.body for m in msgs] == [b"now", b"first", b"second"]
    assert msgs[2].store_timestamp >= now + 1500  # never early
    assert "TIMER_OUT_MS" not in msgs[2].properties
    bad = await wire.send("TTimer", b"x", props={"TIMER_DELAY_MS": "soon"})
    assert bad.code == ResponseCode.MESSAGE_ILLEGAL


@pytest.mark.parametrize("cluster", [FAST_DELAYS], indirect=True)
async def test_timer_message_survives_restart(wire: Wire, cluster: EmbeddedCluster, rc: RemotingClient) -> None:
    assert (await wire.send("TTimerR", b"timed", props={"TIMER_DELAY_MS": "1500"})).code == 0
    broker = await cluster.restart_broker()
    w2 = Wire(rc, broker.config.broker_addr)
    msgs = await eventually(lambda: pull_all(w2, "TTimerR"))
    assert [m.body for m in msgs] == [b"timed"]
    await asyncio.sleep(0.5)
    assert len(await pull_all(w2, "TTimerR")) == 1


async def test_queue_locks_survive_restart(wire: Wire, cluster: EmbeddedCluster, rc: RemotingClient) -> None:
    from rocketq.protocol.bodies import LockBatchBody, MessageQueue, decode_lock_ok

    mqs = [MessageQueue("TLock", "broker-a", 0)]
    a = await wire.call(RequestCode.LOCK_BATCH_MQ, body=LockBatchBody("g", "A", mqs).encode())
    assert decode_lock_ok(a.body) == mqs
    broker = await cluster.restart_broker()
    w2 = Wire(rc, broker.config.broker_addr)
    b = await w2.call(RequestCode.LOCK_BATCH_MQ, body=LockBatchBody("g", "B", mqs).encode())
    assert decode_lock_ok(b.body) == []  # still A's until its lease runs out
    a2 = await w2.call(RequestCode.LOCK_BATCH_MQ, body=LockBatchBody("g", "A", mqs).encode())
    assert decode_lock_ok(a2.body) == mqs
