"""A topic created by a send is known to the name servers before that send is answered (Java's
``createTopicInSendMessageMethod`` registers before it stores): a consumer started on the SEND_OK finds a route.
"""

from __future__ import annotations

import asyncio

import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.remoting.client import RemotingClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire


async def route_code(rc: RemotingClient, namesrv: str, topic: str) -> int:
    from rocketq.protocol.command import RemotingCommand

    cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    return (await rc.invoke(namesrv, cmd, timeout=5.0)).code


# a long send-queue wait: the broker runs in the test's own process, and on a loaded machine (CI runs three test
# passes on two cores) a first send, which registers its new topic before it is stored, may wait past the default
# 200 ms and be refused with SYSTEM_BUSY — this test is about the route, not flow control
@pytest.mark.parametrize("cluster", [{"waitTimeMillsInSendQueue": 10000}], indirect=True)
async def test_after_the_first_send_ok_the_route_exists_100_of_100(
    wire: Wire, cluster: EmbeddedCluster, rc: RemotingClient
) -> None:
    found = 0
    for i in range(100):
        topic = f"TRouteFirst{i}"
        assert await route_code(rc, cluster.namesrv_addr, topic) == ResponseCode.TOPIC_NOT_EXIST
        assert (await wire.send(topic, b"first")).code == ResponseCode.SUCCESS
        found += await route_code(rc, cluster.namesrv_addr, topic) == ResponseCode.SUCCESS
    assert found == 100


async def test_sends_racing_the_registration_are_answered_after_it_too(
    wire: Wire, cluster: EmbeddedCluster, rc: RemotingClient
) -> None:
    # Twenty sends in flight to one new topic: whichever is answered first, the route is already there.
    topic = "TRouteRace"
    tasks = [asyncio.create_task(wire.send(topic, f"m{i}".encode())) for i in range(20)]
    first = await next(asyncio.as_completed(tasks))
    assert first.code == ResponseCode.SUCCESS
    assert await route_code(rc, cluster.namesrv_addr, topic) == ResponseCode.SUCCESS
    assert all(a.code == ResponseCode.SUCCESS for a in await asyncio.gather(*tasks))
    offsets = sorted(int(a.ext_fields["queueOffset"]) for a in await asyncio.gather(*tasks))
    assert offsets == list(range(20))  # all stored once, in one queue
