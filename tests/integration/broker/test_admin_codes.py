"""The admin request codes Apache RocketMQ's mqadmin relies on, over the wire (tests/interop/java runs mqadmin
itself against them): each answer's body in the shape 4.9's admin client decodes."""

from __future__ import annotations

import orjson

from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.bodies import HeartbeatData
from rocketq.testing.wire import Wire


async def test_producer_connections_of_an_unknown_group_are_an_error(wire: Wire) -> None:
    none = await wire.call(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "nobody"})
    assert none.code == ResponseCode.SYSTEM_ERROR and none.remark == "the producer group[nobody] not exist"
    assert (await wire.call(RequestCode.HEART_BEAT, body=HeartbeatData("p1", ["pg1"], []).encode())).code == 0
    conns = await wire.call(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "pg1"})
    assert conns.code == 0 and [c["clientId"] for c in orjson.loads(conns.body)["connectionSet"]] == ["p1"]
