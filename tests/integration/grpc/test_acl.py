"""ACL on the gRPC endpoint: the 5.x clients' MQv2-HMAC-SHA1 authorization against the broker's accounts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
from tests.integration.grpc.conftest import Client, message, settings_producer

from rocketq.grpc.auth import sign
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.protocol.bodies import TopicConfig
from rocketq.testing.acl import AclAccounts
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")
ACCOUNTS = AclAccounts()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EmbeddedCluster]:
    base: Path = tmp_path_factory.mktemp("grpc-acl")
    (base / "plain_acl.yml").write_text(ACCOUNTS.yaml())
    async with EmbeddedCluster(base / "cluster", grpcServerEnable=True, aclEnable=True,
                               aclFilePath=str(base / "plain_acl.yml")) as c:  # fmt: skip
        for topic in (ACCOUNTS.topic, ACCOUNTS.other_topic):
            c.broker.topics.update(TopicConfig(topic, 2, 2))
        yield c


def signed(cluster: EmbeddedCluster, key: str, secret: str, *, upper: bool = False) -> Client:
    assert cluster.broker.grpc is not None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    signature = sign(stamp, secret)
    header = f"MQv2-HMAC-SHA1 Credential={key}, SignedHeaders=x-mq-date-time, " \
             f"Signature={signature.upper() if upper else signature}"  # fmt: skip
    return Client(f"127.0.0.1:{cluster.broker.grpc.port}", extra=[("x-mq-date-time", stamp), ("authorization", header)])


async def route(client: Client, topic: str) -> int:
    try:
        resp = await client.stub.QueryRoute(svc.QueryRouteRequest(topic=pb.Resource(name=topic)), metadata=client.md())
        return int(resp.status.code)
    finally:
        await client.close()


async def test_unsigned_and_badly_signed_requests_are_unauthorized(acl_cluster: EmbeddedCluster) -> None:
    assert acl_cluster.broker.grpc is not None
    assert await route(Client(f"127.0.0.1:{acl_cluster.broker.grpc.port}"), ACCOUNTS.topic) == pb.UNAUTHORIZED
    assert await route(signed(acl_cluster, ACCOUNTS.user_key, "wrong"), ACCOUNTS.topic) == pb.UNAUTHORIZED
    assert await route(signed(acl_cluster, "nobody", "x"), ACCOUNTS.topic) == pb.UNAUTHORIZED


async def test_accounts_get_what_their_permissions_allow(acl_cluster: EmbeddedCluster) -> None:
    user = (ACCOUNTS.user_key, ACCOUNTS.user_secret)
    assert await route(signed(acl_cluster, *user), ACCOUNTS.topic) == pb.OK
    assert await route(signed(acl_cluster, *user, upper=True), ACCOUNTS.topic) == pb.OK  # Node signs in upper case
    assert await route(signed(acl_cluster, *user), ACCOUNTS.other_topic) == pb.UNAUTHORIZED
    admin = (ACCOUNTS.admin_key, ACCOUNTS.admin_secret)
    assert await route(signed(acl_cluster, *admin), ACCOUNTS.other_topic) == pb.OK
    client = signed(acl_cluster, *user)
    try:
        ok = await client.stub.SendMessage(svc.SendMessageRequest(messages=[message(ACCOUNTS.topic)]),
                                           metadata=client.md())  # fmt: skip
        denied = await client.stub.SendMessage(svc.SendMessageRequest(messages=[message(ACCOUNTS.other_topic)]),
                                               metadata=client.md())  # fmt: skip
        assert ok.status.code == pb.OK and denied.status.code == pb.UNAUTHORIZED
    finally:
        await client.close()


async def test_telemetry_settings_are_checked_too(acl_cluster: EmbeddedCluster) -> None:
    client = signed(acl_cluster, ACCOUNTS.user_key, ACCOUNTS.user_secret)
    try:
        call = client.stub.Telemetry(metadata=client.md())
        await call.write(settings_producer([ACCOUNTS.topic]))
        assert (await asyncio.wait_for(call.read(), 10)).status.code == pb.OK
        await call.write(settings_producer([ACCOUNTS.other_topic]))
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await asyncio.wait_for(call.read(), 10)
        assert "No default permission" in str(info.value.details())
    finally:
        await client.close()
