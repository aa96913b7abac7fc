"""Request-reply over the wire: SEND_REPLY_MESSAGE(_V2) pushed to the requester as PUSH_REPLY_MESSAGE_TO_CLIENT."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.bodies import HeartbeatData
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import ReplyMessageRequestHeader
from rocketq.protocol.message import decode_properties
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.server import RemotingDispatcher
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire, records

REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"


class Requester:
    """A client that heartbeats as a producer and takes (or refuses) the replies pushed to it."""

    def __init__(self, cluster: EmbeddedCluster, client_id: str, answer: int = ResponseCode.SUCCESS) -> None:
        self.client_id = client_id
        self.pushed: list[RemotingCommand] = []
        self.answer = answer
        dispatcher = RemotingDispatcher("requester")
        dispatcher.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self._on_push)
        self.rc = RemotingClient(dispatcher)
        self.wire = Wire(self.rc, cluster.broker_addr)

    def _on_push(self, conn: Any, cmd: RemotingCommand) -> RemotingCommand:
        self.pushed.append(cmd)
        return cmd.response(self.answer, None if self.answer == ResponseCode.SUCCESS else "not now")

    async def heartbeat(self) -> None:
        resp = await self.wire.call(RequestCode.HEART_BEAT, body=HeartbeatData(self.client_id, ["req-pg"]).encode())
        assert resp.code == ResponseCode.SUCCESS


@pytest.fixture
async def requester(cluster: EmbeddedCluster) -> AsyncIterator[Requester]:
    r = Requester(cluster, "10.0.0.1@requester")
    await r.heartbeat()
    yield r
    await r.rc.close()


def reply_props(client_id: str | None, correlation: str = "corr-1") -> dict[str, str]:
    props = {"CORRELATION_ID": correlation, "MSG_TYPE": "reply", "TTL": "3000"}
    if client_id is not None:
        props["REPLY_TO_CLIENT"] = client_id
    return props


async def stored_replies(wire: Wire) -> list[Any]:
    resp = await wire.pull(REPLY_TOPIC, 0, 0)
    return records(resp) if resp.code == ResponseCode.SUCCESS else []


@pytest.mark.parametrize("v2", [True, False], ids=["SEND_REPLY_MESSAGE_V2", "SEND_REPLY_MESSAGE"])
async def test_reply_is_pushed_to_the_requesting_client_and_stored(wire: Wire, requester: Requester, v2: bool) -> None:
    code = RequestCode.SEND_REPLY_MESSAGE_V2 if v2 else RequestCode.SEND_REPLY_MESSAGE
    resp = await wire.send(REPLY_TOPIC, b"the answer", queue_id=-1, props=reply_props(requester.client_id),
                           v2=v2, code=code, group="replier-pg")  # fmt: skip
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert resp.ext_fields["msgId"] != "0" and resp.ext_fields["queueId"] == "0"
    assert resp.ext_fields["MSG_REGION"] and resp.ext_fields["TRACE_ON"]
    [push] = requester.pushed
    header = ReplyMessageRequestHeader.from_ext(push.ext_fields)
    assert header.topic == REPLY_TOPIC and header.producer_group == "replier-pg"
    assert push.body == b"the answer"
    props = decode_properties(header.properties or "")
    assert props["CORRELATION_ID"] == "corr-1" and props["REPLY_TO_CLIENT"] == requester.client_id
    assert int(props["PUSH_REPLY_TIME"]) >= header.born_timestamp
    assert header.born_host.startswith("127.0.0.1:") and header.store_host.startswith("127.0.0.1:")
    [stored] = await stored_replies(wire)  # storeReplyMessageEnable (default true)
    assert stored.body == b"the answer" and stored.properties["CORRELATION_ID"] == "corr-1"


@pytest.mark.parametrize(
    ("client_id", "remark"),
    [("10.0.0.9@nobody", "channel of <10.0.0.9@nobody> not found"), (None, "[REPLY_TO_CLIENT] is null")],
)
async def test_reply_nobody_waits_for_is_a_system_error_but_stored(
    wire: Wire, requester: Requester, client_id: str | None, remark: str
) -> None:
    resp = await wire.send(REPLY_TOPIC, b"late", queue_id=0, props=reply_props(client_id),
                           code=RequestCode.SEND_REPLY_MESSAGE_V2)  # fmt: skip
    assert resp.code == ResponseCode.SYSTEM_ERROR and remark in (resp.remark or "")
    assert requester.pushed == []
    assert [m.body for m in await stored_replies(wire)] == [b"late"]


async def test_reply_refused_by_the_requester_is_a_system_error(cluster: EmbeddedCluster, wire: Wire) -> None:
    refusing = Requester(cluster, "10.0.0.2@refusing", answer=ResponseCode.SYSTEM_ERROR)
    try:
        await refusing.heartbeat()
        resp = await wire.send(REPLY_TOPIC, b"x", props=reply_props(refusing.client_id),
                               code=RequestCode.SEND_REPLY_MESSAGE_V2)  # fmt: skip
        assert resp.code == ResponseCode.SYSTEM_ERROR and "fail" in (resp.remark or "")
        assert len(refusing.pushed) == 1
    finally:
        await refusing.rc.close()


async def test_reply_checked_like_any_send(wire: Wire, requester: Requester) -> None:
    resp = await wire.send(REPLY_TOPIC, b"x", queue_id=5, props=reply_props(requester.client_id),
                           code=RequestCode.SEND_REPLY_MESSAGE_V2)  # fmt: skip
    assert resp.code == ResponseCode.SYSTEM_ERROR and "queueId[5] is illegal" in (resp.remark or "")
    resp = await wire.send("SCHEDULE_TOPIC_XXXX", b"x", props=reply_props(requester.client_id),
                           code=RequestCode.SEND_REPLY_MESSAGE_V2)  # fmt: skip
    assert resp.code == ResponseCode.NO_PERMISSION
    assert requester.pushed == []


@pytest.mark.parametrize("cluster", [{"storeReplyMessageEnable": False}], indirect=True)
async def test_reply_not_stored_when_disabled(wire: Wire, requester: Requester) -> None:
    resp = await wire.send(REPLY_TOPIC, b"only pushed", props=reply_props(requester.client_id),
                           code=RequestCode.SEND_REPLY_MESSAGE_V2)  # fmt: skip
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["msgId"] == "0"
    assert resp.ext_fields["queueOffset"] == "0"
    assert [p.body for p in requester.pushed] == [b"only pushed"]
    assert await stored_replies(wire) == []
