"""What SimpleConsumer sends, against scripted brokers (``conftest.FakeServer``): the heartbeat, POP_MESSAGE's
header and its rotation over the readable masters, ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME naming the retry
topic for a redelivered message, and the handle rebuilt from the change's answer."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from rocketq.client import SimpleConsumer
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.message import MessageRecord, encode_record

GROUP = "wire-g"
RETRY = f"%RETRY%{GROUP}_T"


def _pop_answer(cmd: RemotingCommand) -> RemotingCommand:
    """One message read from the group's retry topic, offset 4 of its queue 0, delivered once before."""
    rec = MessageRecord(RETRY, b"again", queue_id=0, queue_offset=4, reconsume_times=1,
                        properties={"UNIQ_KEY": "K1", "__SHARDINGKEY": "grp"})  # fmt: skip
    ext = {"popTime": "1000", "invisibleTime": cmd.ext_fields["invisibleTime"], "reviveQid": "3", "restNum": "0",
           "startOffsetInfo": "1 0 4", "msgOffsetInfo": "1 0 4"}  # fmt: skip
    return cmd.response(ResponseCode.SUCCESS, ext_fields=ext, body=encode_record(rec))


async def test_requests_on_the_wire(fakes: SimpleNamespace) -> None:
    b1 = await fakes.FakeServer("b1", {RequestCode.POP_MESSAGE: _pop_answer}).start()
    empty = {RequestCode.POP_MESSAGE: lambda c: c.response(ResponseCode.POLLING_TIMEOUT, "none")}
    b2 = await fakes.FakeServer("b2", empty).start()
    b3 = await fakes.FakeServer("b3", empty).start()
    route = fakes.route_body([("b1", 4, 4, 6), ("b2", 4, 4, 6), ("b3", 4, 4, 2)],  # b3: write only
                             {"b1": {0: b1.addr}, "b2": {0: b2.addr}, "b3": {0: b3.addr}})  # fmt: skip
    ns = await fakes.namesrv_with_routes({"T": route}).start()
    consumer = SimpleConsumer(GROUP, namesrv_addr=ns.addr, subscriptions={"T": "A || B"}, await_duration=0.2,
                              fifo=True)  # fmt: skip
    try:
        async with consumer:
            hb = b1.of_code(RequestCode.HEART_BEAT)[0]  # sent by start(); the timer may add more
            [data] = json.loads(hb.body)["consumerDataSet"]
            assert (data["groupName"], data["consumeType"], data["messageModel"]) == (GROUP, "CONSUME_ACTIVELY",
                                                                                      "CLUSTERING")  # fmt: skip
            assert [s["topic"] for s in data["subscriptionDataSet"]] == ["T"]

            [m] = await consumer.receive(8, 15.0)
            assert await consumer.receive(8, 15.0) == []  # b2's turn; b3 has no readable queue
            [m2] = await consumer.receive(8, 15.0)  # b1 again
            assert not b3.of_code(RequestCode.POP_MESSAGE)
            pop = b1.of_code(RequestCode.POP_MESSAGE)[0].ext_fields
            assert {k: pop[k] for k in ("consumerGroup", "topic", "queueId", "maxMsgNums", "invisibleTime",
                                        "pollTime", "initMode", "expType", "exp", "order", "bname")} == {
                "consumerGroup": GROUP, "topic": "T", "queueId": "-1", "maxMsgNums": "8", "invisibleTime": "15000",
                "pollTime": "200", "initMode": "1", "expType": "TAG", "exp": "A || B", "order": "true", "bname": "b1",
            }  # fmt: skip
            assert int(pop["bornTime"]) > 0

            assert (m.topic, m.body, m.delivery_attempt, m.message_group, m.queue_offset) == ("T", b"again", 2, "grp",
                                                                                              4)  # fmt: skip
            assert m.receipt_handle == "4 1000 15000 3 1 b1 0 4"

            b1.handlers[RequestCode.CHANGE_MESSAGE_INVISIBLETIME] = lambda c: c.response(
                ResponseCode.SUCCESS, ext_fields={"popTime": "2000", "invisibleTime": "7000", "reviveQid": "5"}
            )
            await consumer.change_invisible_duration(m, 7.0)
            [ch] = b1.of_code(RequestCode.CHANGE_MESSAGE_INVISIBLETIME)
            assert {k: ch.ext_fields[k] for k in ("consumerGroup", "topic", "queueId", "extraInfo", "offset",
                                                  "invisibleTime")} == {
                "consumerGroup": GROUP, "topic": RETRY, "queueId": "0", "extraInfo": "4 1000 15000 3 1 b1 0 4",
                "offset": "4", "invisibleTime": "7000",
            }  # fmt: skip
            assert m.receipt_handle == "4 2000 7000 5 1 b1 0 4"

            await consumer.ack(m)
            [ack] = b1.of_code(RequestCode.ACK_MESSAGE)
            assert {k: ack.ext_fields[k] for k in ("consumerGroup", "topic", "queueId", "extraInfo", "offset")} == {
                "consumerGroup": GROUP, "topic": RETRY, "queueId": "0", "extraInfo": "4 2000 7000 5 1 b1 0 4",
                "offset": "4",
            }  # fmt: skip

            b1.handlers[RequestCode.ACK_MESSAGE] = lambda c: c.response(ResponseCode.NO_MESSAGE, "offset is illegal")
            with pytest.raises(BrokerError) as err:
                await consumer.ack(m2)
            assert err.value.code == ResponseCode.NO_MESSAGE
            with pytest.raises(ValueError):
                await consumer.receive(33)
            with pytest.raises(ValueError):
                await consumer.change_invisible_duration(m2, 0)
    finally:
        for s in (b1, b2, b3, ns):
            await s.close()


@pytest.mark.parametrize(("answer", "order"), [
    ((ResponseCode.SUCCESS, b'{"groupName":"wire-g","consumeMessageOrderly":true}'), "true"),
    ((ResponseCode.SUCCESS, b'{"groupName":"wire-g","consumeMessageOrderly":false}'), "false"),
    ((ResponseCode.REQUEST_CODE_NOT_SUPPORTED, b""), "false"),
])  # fmt: skip
async def test_fifo_asked_from_the_group(fakes: SimpleNamespace, answer: tuple[int, bytes], order: str) -> None:
    """``fifo=None``: GET_SUBSCRIPTIONGROUP_CONFIG (352) to the broker of the first pop decides ``order``."""
    code, body = answer
    b1 = await fakes.FakeServer("b1", {
        RequestCode.POP_MESSAGE: lambda c: c.response(ResponseCode.POLLING_TIMEOUT, "none"),
        RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: lambda c: c.response(code, None, body=body),
    }).start()  # fmt: skip
    ns = await fakes.namesrv_with_routes({"T": fakes.route_body([("b1", 1, 1, 6)], {"b1": {0: b1.addr}})}).start()
    try:
        async with SimpleConsumer(GROUP, namesrv_addr=ns.addr, subscriptions={"T": "*"}, await_duration=0) as c:
            assert c.fifo is None
            await c.receive(1)
            await c.receive(1)
        [ask] = b1.of_code(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG)
        assert ask.ext_fields["group"] == GROUP
        assert [p.ext_fields["order"] for p in b1.of_code(RequestCode.POP_MESSAGE)] == [order, order]
    finally:
        await b1.close()
        await ns.close()
