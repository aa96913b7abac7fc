"""Plain ACL on an embedded broker, over the wire: the dangerous requests refused without admin credentials,
allowed ones through, Java's denial answer, one-way refusals silent, hot reload, a malformed reload keeping
the old rules, start-up refusal, the ACL admin codes 50-54, and ACL off ignoring the credential fields."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from rocketq.acl import signature
from rocketq.broker.config import BrokerConfig
from rocketq.broker.controller import BrokerController
from rocketq.client import ClientConfig, Message, Producer, SendStatus
from rocketq.client.errors import SendFailedError
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import ConfigError
from rocketq.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire

ACCOUNTS: dict[str, Any] = {
    "accounts": [
        {"accessKey": "producer1", "secretKey": "producer-secret", "defaultTopicPerm": "DENY",
         "topicPerms": ["TAcl=PUB"], "defaultGroupPerm": "DENY"},
        {"accessKey": "consumer1", "secretKey": "consumer-secret", "defaultTopicPerm": "DENY",
         "topicPerms": ["TAcl=SUB"], "defaultGroupPerm": "DENY", "groupPerms": ["cg=SUB"]},
        {"accessKey": "rocketmq2", "secretKey": "admin-secret", "admin": True},
    ],
}  # fmt: skip
SECRETS = {a["accessKey"]: a["secretKey"] for a in ACCOUNTS["accounts"]}
JAVA_EXC = "org.apache.rocketmq.acl.common.AclException: "


class Signed:
    """A raw client that signs as Java's AclClientRPCHook does (key None: anonymous)."""

    def __init__(self, wire: Wire, key: str | None, secret: str | None = None) -> None:
        self.wire, self.key = wire, key
        self.secret = secret or (SECRETS.get(key, "") if key else "")

    def request(self, code: int, ext: dict[str, Any] | None = None, body: bytes = b"") -> RemotingCommand:
        fields = {k: str(v) for k, v in (ext or {}).items()}
        if self.key is not None:
            signature.sign_request(fields, body, self.key, self.secret)
        return RemotingCommand.request(code, fields, body)

    async def call(self, code: int, ext: dict[str, Any] | None = None, body: bytes = b"") -> RemotingCommand:
        return await self.wire.rc.invoke(self.wire.addr, self.request(code, ext, body), timeout=5.0)

    async def send(self, topic: str, body: bytes = b"x", group: str = "pg") -> RemotingCommand:
        ext = {"a": group, "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0",
               "i": "UNIQ_KEY\x01acl0000000000000000000000000000\x02", "j": "0", "k": "false"}  # fmt: skip
        return await self.call(RequestCode.SEND_MESSAGE_V2, ext, body)


def write_acl(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.fixture
async def acl_cluster(tmp_path: Path) -> AsyncIterator[tuple[EmbeddedCluster, Path]]:
    acl_file = tmp_path / "conf" / "plain_acl.yml"
    acl_file.parent.mkdir()
    write_acl(acl_file, ACCOUNTS)
    async with EmbeddedCluster(
        tmp_path / "cluster", aclEnable=True, aclFilePath=str(acl_file), aclReloadIntervalMills=100
    ) as c:
        yield c, acl_file


@pytest.fixture
async def wire(acl_cluster: tuple[EmbeddedCluster, Path]) -> AsyncIterator[Wire]:
    rc = RemotingClient()
    yield Wire(rc, acl_cluster[0].broker_addr)
    await rc.close()


# The dangerous broker requests, and what each would do (each answered SYSTEM_ERROR if refused).
DANGEROUS: list[tuple[str, int, dict[str, Any], bytes]] = [
    ("read every consumer offset", RequestCode.GET_ALL_CONSUMER_OFFSET, {}, b""),
    ("read the broker config", RequestCode.GET_BROKER_CONFIG, {}, b""),
    ("overwrite another group's offset", RequestCode.UPDATE_CONSUMER_OFFSET,
     {"consumerGroup": "victim", "topic": "TAcl", "queueId": 0, "commitOffset": 99}, b""),
    ("reset offsets", RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
     {"topic": "TAcl", "group": "victim", "timestamp": 0, "isForce": "true"}, b""),
    ("delete a subscription group", RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "victim"}, b""),
    ("set a live topic's permission to 0", RequestCode.UPDATE_AND_CREATE_TOPIC,
     {"topic": "TAcl", "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4, "perm": 0,
      "topicFilterType": "SINGLE_TAG"}, b""),
    ("delete a topic", RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "TAcl"}, b""),
    ("change the broker config", RequestCode.UPDATE_BROKER_CONFIG, {}, b"brokerPermission=0"),
    ("create an account", RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
     {"accessKey": "attacker1", "secretKey": "attacker-secret", "admin": "true"}, b""),
    ("delete an account", RequestCode.DELETE_ACL_CONFIG, {"accessKey": "rocketmq2"}, b""),
    ("white-list everybody", RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": "*"}, b""),
    ("read every secret key", RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}, b""),
]  # fmt: skip


async def test_dangerous_requests_refused_without_admin(acl_cluster: tuple[EmbeddedCluster, Path], wire: Wire) -> None:
    cluster, acl_file = acl_cluster
    admin = Signed(wire, "rocketmq2")
    assert (await admin.call(RequestCode.UPDATE_AND_CREATE_TOPIC, DANGEROUS[5][2] | {"perm": 6})).code == 0
    offsets = cluster.broker.offsets
    before_file = acl_file.read_bytes()
    for who in (None, "producer1", "consumer1"):
        client = Signed(wire, who)
        for what, code, ext, body in DANGEROUS:
            resp = await client.call(code, ext, body)
            assert resp.code == ResponseCode.SYSTEM_ERROR, (who, what, resp.code, resp.remark)
            assert (resp.remark or "").startswith(JAVA_EXC), (who, what, resp.remark)
            if who is None:
                assert "No accessKey is configured" in (resp.remark or ""), what
            elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
                assert "No default permission for " in (resp.remark or ""), (who, what)
            else:
                assert f"Need admin permission for request code={code}, but accessKey={who} is not" in (
                    resp.remark or ""
                ), (who, what, resp.remark)
    # nothing took effect
    topic = cluster.broker.topics.get("TAcl")
    assert topic is not None and topic.perm == 6
    assert offsets.query("victim", "TAcl", 0) in (-1, None)
    assert cluster.broker.config.brokerPermission == 6
    assert acl_file.read_bytes() == before_file
    # the admin may
    assert (await admin.call(RequestCode.GET_BROKER_CONFIG)).code == ResponseCode.SUCCESS
    assert (await admin.call(RequestCode.GET_ALL_CONSUMER_OFFSET)).code == ResponseCode.SUCCESS
    # one dispatcher, the ACL hook first, behind every port the broker serves (main and VIP)
    assert all(server.dispatcher is cluster.broker.dispatcher for server in cluster.broker.servers)
    assert type(cluster.broker.dispatcher.request_hooks[0]).__name__ == "AclGate"
    # and ACL cannot be turned off at run time, not even by an admin
    off = await admin.call(RequestCode.UPDATE_BROKER_CONFIG, {}, b"aclEnable=false")
    assert off.code == ResponseCode.SYSTEM_ERROR and "aclEnable" in (off.remark or "")
    assert cluster.broker.config.aclEnable


async def test_allowed_requests_pass_and_wrong_credentials_fail(
    acl_cluster: tuple[EmbeddedCluster, Path], wire: Wire
) -> None:
    producer, consumer = Signed(wire, "producer1"), Signed(wire, "consumer1")
    assert (await producer.send("TAcl")).code == ResponseCode.SUCCESS
    denied = await consumer.send("TAcl")
    assert denied.code == 1 and "No default permission for topic:TAcl" in (denied.remark or "")
    wrong = await Signed(wire, "producer1", "not-the-secret").send("TAcl")
    assert wrong.code == 1 and "Check signature failed for accessKey=producer1" in (wrong.remark or "")
    unknown = await Signed(wire, "stranger1", "whatever-secret").send("TAcl")
    assert unknown.code == 1 and "No acl config for stranger1" in (unknown.remark or "")
    assert (await Signed(wire, None).send("TAcl")).code == 1
    # consumer: heartbeat (its group and topic, from the body), pull, offset commit
    hb = HeartbeatData("c1", [], [ConsumerData("cg", subscriptions=[SubscriptionData("TAcl")])]).encode()
    assert (await consumer.call(RequestCode.HEART_BEAT, {}, hb)).code == ResponseCode.SUCCESS
    bad_hb = HeartbeatData("c1", [], [ConsumerData("other", subscriptions=[SubscriptionData("TAcl")])]).encode()
    refused = await consumer.call(RequestCode.HEART_BEAT, {}, bad_hb)
    assert refused.code == 1 and "No default permission for group:other" in (refused.remark or "")
    pull = {"consumerGroup": "cg", "topic": "TAcl", "queueId": 0, "queueOffset": 0, "maxMsgNums": 32, "sysFlag": 0,
            "commitOffset": 0, "suspendTimeoutMillis": 0, "subscription": "*", "subVersion": 0}  # fmt: skip
    got = await consumer.call(RequestCode.PULL_MESSAGE, pull)
    assert got.code in (ResponseCode.SUCCESS, 19, 20, 21), got.remark  # found / not found / retry / moved
    assert (await producer.call(RequestCode.PULL_MESSAGE, pull)).code == 1
    commit = {"consumerGroup": "cg", "topic": "TAcl", "queueId": 0, "commitOffset": 1}
    assert (await consumer.call(RequestCode.UPDATE_CONSUMER_OFFSET, commit)).code == ResponseCode.SUCCESS
    # beyond Java (aclStrictResources): another group's offset, a batch send to a topic it may not publish to
    query = {"consumerGroup": "cg", "topic": "TAcl", "queueId": 0}
    assert (await consumer.call(RequestCode.QUERY_CONSUMER_OFFSET, query)).code == ResponseCode.SUCCESS
    other = await consumer.call(RequestCode.QUERY_CONSUMER_OFFSET, query | {"consumerGroup": "victim"})
    assert other.code == 1 and "No default permission for group:victim" in (other.remark or "")
    batch = {"a": "pg", "b": "TAcl", "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": 0, "h": 0, "i": "", "j": 0,
             "k": "false", "m": "true"}  # fmt: skip
    refused_batch = await consumer.call(RequestCode.SEND_BATCH_MESSAGE, batch)
    assert refused_batch.code == 1 and "No default permission for topic:TAcl" in (refused_batch.remark or "")
    # ACL shows in the runtime info
    info = await Signed(wire, "rocketmq2").call(RequestCode.GET_BROKER_RUNTIME_INFO)
    assert orjson.loads(info.body)["table"]["aclEnable"] == "true"


async def test_oneway_refusal_gets_no_answer(acl_cluster: tuple[EmbeddedCluster, Path], wire: Wire) -> None:
    cluster, _ = acl_cluster
    anon = Signed(wire, None)
    cmd = anon.request(RequestCode.UPDATE_CONSUMER_OFFSET,
                       {"consumerGroup": "cg", "topic": "TAcl", "queueId": 0, "commitOffset": 7})  # fmt: skip
    await wire.rc.invoke_oneway(wire.addr, cmd)
    counts = cluster.broker.dispatcher.answer_counts
    for _ in range(100):
        if counts[(RequestCode.UPDATE_CONSUMER_OFFSET, ResponseCode.SYSTEM_ERROR)]:
            break
        await asyncio.sleep(0.02)
    assert counts[(RequestCode.UPDATE_CONSUMER_OFFSET, ResponseCode.SYSTEM_ERROR)] == 1
    assert cluster.broker.offsets.query("cg", "TAcl", 0) in (-1, None)
    # the connection is still in order: the next answer is the next request's
    assert (await Signed(wire, "producer1").send("TAcl")).code == ResponseCode.SUCCESS


async def _until(check: Any, seconds: float = 5.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        if await check():
            return True
        await asyncio.sleep(0.05)
    return False


async def test_hot_reload_and_malformed_reload_keeps_old_rules(
    acl_cluster: tuple[EmbeddedCluster, Path], wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    cluster, acl_file = acl_cluster
    newbie = Signed(wire, "newbie01", "newbie-secret")

    async def newbie_sends() -> bool:
        return (await newbie.send("TAcl")).code == ResponseCode.SUCCESS

    assert not await newbie_sends()
    doc = {"accounts": [*ACCOUNTS["accounts"], {"accessKey": "newbie01", "secretKey": "newbie-secret",
                                               "defaultTopicPerm": "PUB"}]}  # fmt: skip
    write_acl(acl_file, doc)
    assert await _until(newbie_sends), "a new account did not take effect within 5 s"
    # a malformed file: refused, and the rules in force stay (the new account still works)
    acl_file.write_text("accounts:\n  - accessKey: newbie01\n    secretKey: [unclosed\n")
    store = cluster.broker.acl
    assert store is not None
    for _ in range(100):
        if store.refused_reloads:
            break
        await asyncio.sleep(0.05)
    assert store.refused_reloads >= 1
    assert "acl.reload_refused" in caplog.text and str(acl_file) in caplog.text
    assert await newbie_sends()
    assert (await Signed(wire, None).send("TAcl")).code == 1  # never open
    # an unknown key is refused the same way
    write_acl(acl_file, {**doc, "acount": []})
    for _ in range(100):
        if store.refused_reloads >= 2:
            break
        await asyncio.sleep(0.05)
    assert store.refused_reloads >= 2 and await newbie_sends()
    # fixed: the account is gone again
    write_acl(acl_file, ACCOUNTS)

    async def newbie_refused() -> bool:
        return not await newbie_sends()

    assert await _until(newbie_refused)


async def test_acl_admin_codes(acl_cluster: tuple[EmbeddedCluster, Path], wire: Wire) -> None:
    acl_file = acl_cluster[1]
    admin = Signed(wire, "rocketmq2")
    info = await admin.call(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
    assert info.code == 0 and info.ext_fields["brokerName"] == "broker-a"
    assert info.ext_fields["clusterName"] == "DefaultCluster"
    assert orjson.loads(info.ext_fields["version"])["counter"] == 0
    created = await admin.call(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {
        "accessKey": "created1", "secretKey": "created-secret", "admin": "false", "defaultTopicPerm": "DENY",
        "defaultGroupPerm": "SUB", "topicPerms": "TAcl=PUB,TOther=SUB"})  # fmt: skip
    assert created.code == 0, created.remark
    written = yaml.safe_load(acl_file.read_text())
    assert written["dataVersion"][0]["counter"] == 1
    assert any(a["accessKey"] == "created1" and a["topicPerms"] == ["TAcl=PUB", "TOther=SUB"]
               for a in written["accounts"])  # fmt: skip
    assert (await Signed(wire, "created1", "created-secret").send("TAcl")).code == 0  # at once
    info = await admin.call(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
    assert orjson.loads(info.ext_fields["version"])["counter"] == 1
    assert orjson.loads(info.ext_fields["allAclFileVersion"])[str(acl_file)]["counter"] == 1
    bad = await admin.call(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {"accessKey": "short", "secretKey": "x"})
    assert bad.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
    bad = await admin.call(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
                           {"accessKey": "created2", "secretKey": "created-secret", "topicPerms": "T=ALL"})  # fmt: skip
    assert bad.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED and "T=ALL" in (bad.remark or "")
    listed = orjson.loads((await admin.call(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)).body)
    assert {a["accessKey"] for a in listed["plainAccessConfigs"]} == {"producer1", "consumer1", "rocketmq2", "created1"}
    # global white list: everyone from 127.0.0.1 passes, then not
    ok = await admin.call(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": "127.0.0.1,10.0.0.*"})
    assert ok.code == 0, ok.remark
    assert (await Signed(wire, None).send("TOther")).code == 0
    assert yaml.safe_load(acl_file.read_text())["globalWhiteRemoteAddresses"] == ["127.0.0.1", "10.0.0.*"]
    bad = await admin.call(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": "1.2.3.999"})
    assert bad.code == ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
    elsewhere = {"globalWhiteAddrs": "*", "aclFileFullPath": "/etc/passwd"}
    assert (await admin.call(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, elsewhere)).code == 211
    assert (await admin.call(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": ""})).code == 0
    assert (await Signed(wire, None).send("TOther")).code == 1
    # delete
    assert (await admin.call(RequestCode.DELETE_ACL_CONFIG, {"accessKey": "created1"})).code == 0
    assert (await Signed(wire, "created1", "created-secret").send("TAcl")).code == 1
    gone = await admin.call(RequestCode.DELETE_ACL_CONFIG, {"accessKey": "created1"})
    assert gone.code == ResponseCode.DELETE_ACL_CONFIG_FAILED
    assert yaml.safe_load(acl_file.read_text())["dataVersion"][0]["counter"] == 4


@pytest.mark.parametrize(
    "content,names",
    [
        (None, "not found"),
        ("accounts:\n  - {accessKey: short, secretKey: 12345678}\n", "accounts[0]"),
        ("accounts: [\n", "not valid YAML"),
        ("globalWhiteRemoteAddresses: [10.*.*]\n", "globalWhiteRemoteAddresses[0]"),
    ],
)
def test_start_up_refused_on_a_bad_file(tmp_path: Path, content: str | None, names: str) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    if content is not None:
        acl_file.write_text(content)
    cfg = BrokerConfig.from_mapping(
        {"aclEnable": "true", "aclFilePath": str(acl_file), "storePathRootDir": str(tmp_path / "store")}
    )
    with pytest.raises(ConfigError) as err:
        BrokerController(cfg)
    assert "aclFilePath" in str(err.value) and str(acl_file) in str(err.value) and names in str(err.value)


def test_cli_start_up_refusal_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rocketq.cli.main import main

    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text("accounts:\n  - {accessKey: longenough, secretKey: 12345678, admn: true}\n")
    code = main(["broker", "-n", "127.0.0.1:1", f"storePathRootDir={tmp_path / 'store'}", "listenHost=127.0.0.1",
                 "listenPort=0", "aclEnable=true", f"aclFilePath={acl_file}"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "admn: unknown key" in err[0] and str(acl_file) in err[0], err


async def test_acl_off_ignores_credential_fields(tmp_path: Path) -> None:
    async with EmbeddedCluster(tmp_path) as cluster:
        rc = RemotingClient()
        try:
            wire = Wire(rc, cluster.broker_addr)
            cpp = await wire.send("TOpen", b"x", props=None)
            assert cpp.code == 0
            # what the C++ client always sends: empty key, a signature, OnsChannel
            bogus = Signed(wire, "", "")
            req = bogus.request(RequestCode.GET_BROKER_RUNTIME_INFO)
            req.ext_fields["OnsChannel"] = "ALIYUN"
            info = await rc.invoke(wire.addr, req)
            assert info.code == 0 and orjson.loads(info.body)["table"]["aclEnable"] == "false"
            assert (await Signed(wire, "nobody00", "bogus-secret").send("TOpen")).code == 0
            off = await rc.invoke(wire.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}))
            assert off.code == ResponseCode.SYSTEM_ERROR and "aclEnable=false" in (off.remark or "")
        finally:
            await rc.close()


async def test_pop_needs_sub_on_the_topic_and_the_group(acl_cluster: tuple[EmbeddedCluster, Path], wire: Wire) -> None:
    producer, consumer = Signed(wire, "producer1"), Signed(wire, "consumer1")
    assert (await producer.send("TAcl", b"popped")).code == ResponseCode.SUCCESS
    pop = {"consumerGroup": "cg", "topic": "TAcl", "queueId": -1, "maxMsgNums": 32, "invisibleTime": 60000,
           "pollTime": 0, "bornTime": int(time.time() * 1000), "initMode": 0}  # fmt: skip
    got = await consumer.call(RequestCode.POP_MESSAGE, pop)
    assert got.code == ResponseCode.SUCCESS and b"popped" in got.body
    for who, ext in ((producer, pop), (consumer, pop | {"consumerGroup": "other"}), (Signed(wire, None), pop)):
        refused = await who.call(RequestCode.POP_MESSAGE, ext)
        assert refused.code == 1, refused.remark
    ack = {"consumerGroup": "other", "topic": "TAcl", "queueId": 0, "extraInfo": "0 0 60000 0 0 broker-a 0 0",
           "offset": 0}  # fmt: skip
    denied = await consumer.call(RequestCode.ACK_MESSAGE, ack)
    assert denied.code == 1 and "No default permission for group:other" in (denied.remark or "")


async def test_the_sdk_producer_signs_async_sends_on_an_open_connection(
    acl_cluster: tuple[EmbeddedCluster, Path],
) -> None:
    """Once the connection to the broker is open a plain ``send_async`` may go out encoded in one call; with an
    account it must still be a signed command (the broker refuses an unsigned send to TAcl)."""
    cluster, _ = acl_cluster
    config = ClientConfig(namesrv_addr=cluster.namesrv_addr, access_key="producer1", secret_key="producer-secret")
    async with Producer("pg", config=config) as producer:
        await producer.send(Message("TAcl", b"opens the connection"))
        results = await asyncio.gather(*[producer.send_async(Message("TAcl", b"%d" % i)) for i in range(20)])
    assert [r.status for r in results] == [SendStatus.SEND_OK] * 20
    async with Producer("pg", config=ClientConfig(namesrv_addr=cluster.namesrv_addr)) as anonymous:
        with pytest.raises(SendFailedError, match="No accessKey is configured"):
            await anonymous.send(Message("TAcl", b"unsigned"))
