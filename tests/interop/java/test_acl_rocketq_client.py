"""rocketq's client with ACL credentials against a broker with ``aclEnable=true`` (plain_acl.yml of
``rocketq.testing.acl.AclAccounts``): an allowed account sends, push-consumes and pull-consumes; a wrong
secret, an unknown key, no credentials, a topic or a group the account lacks are refused with the broker's
denial (code 1, Java's remark). Against the Java 4.9.7 broker as the reference."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocketq.cli.main import main as cli_main
from rocketq.client import (
    AdminClient,
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    LitePullConsumer,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PushConsumer,
    SendFailedError,
    SendStatus,
)
from rocketq.client.lowlevel import MQClientAPI, RemotingClient
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError
from rocketq.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.testing import EmbeddedCluster
from rocketq.testing.acl import AclAccounts, AclJavaCluster

A = AclAccounts()


@dataclass
class AclTarget:
    namesrv_addr: str
    broker_addr: str
    broker_name: str
    cluster_name: str
    kind: str = "java"


def config(target: AclTarget, access_key: str | None = None, secret_key: str | None = None) -> ClientConfig:
    return ClientConfig(namesrv_addr=target.namesrv_addr, access_key=access_key, secret_key=secret_key)


def user(target: AclTarget) -> ClientConfig:
    return config(target, A.user_key, A.user_secret)


@pytest.fixture(params=[pytest.param("java", marks=pytest.mark.java), "rocketq"])
async def target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AclTarget]:
    """The same plain_acl.yml enforced by the Java 4.9.7 broker (the reference) or by rocketq's broker."""
    async with contextlib.AsyncExitStack() as stack:
        if request.param == "java":
            java: AclJavaCluster = request.getfixturevalue("java_acl_cluster")
            t = AclTarget(java.namesrv_addr, java.broker_addr, java.broker_name, java.cluster_name)
        else:
            acl_file = tmp_path / "plain_acl.yml"
            acl_file.write_text(A.yaml())
            ours = await stack.enter_async_context(
                EmbeddedCluster(tmp_path / "cluster", aclEnable=True, aclFilePath=str(acl_file)))
            t = AclTarget(ours.namesrv_addr, ours.broker_addr, ours.broker.config.brokerName,
                          ours.broker.config.brokerClusterName, "rocketq")  # fmt: skip
        # creating a topic is an admin request (code 17): the admin account's signature is checked here too
        async with AdminClient(config=config(t, A.admin_key, A.admin_secret)) as admin:
            for topic in (A.topic, A.other_topic):
                await admin.create_topic(topic, cluster=t.cluster_name, read_queue_nums=2, write_queue_nums=2)
        yield t


async def send_one(target: AclTarget, cfg: ClientConfig, topic: str, body: bytes) -> MessageQueue:
    async with Producer(f"pg-{uuid.uuid4().hex[:6]}", config=cfg, send_msg_timeout=10.0) as producer:
        result = await producer.send(Message(topic, body))
    assert result.status is SendStatus.SEND_OK
    return result.message_queue


async def test_allowed_account_sends_and_push_consumes(target: AclTarget) -> None:
    body = f"push-{uuid.uuid4().hex}".encode()
    got: asyncio.Queue[MessageExt] = asyncio.Queue()

    def listener(msgs: list[MessageExt], _ctx: object) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            got.put_nowait(m)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(A.group, config=user(target), consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                            rebalance_interval=2.0)  # fmt: skip
    consumer.subscribe(A.topic, "*")
    consumer.register_message_listener(listener)
    await consumer.start()
    try:
        await send_one(target, user(target), A.topic, body)
        async with asyncio.timeout(90):
            while (await got.get()).body != body:
                pass
    finally:
        await consumer.shutdown()


async def test_allowed_account_pull_consumes(target: AclTarget) -> None:
    body = f"pull-{uuid.uuid4().hex}".encode()
    mq = await send_one(target, user(target), A.topic, body)
    consumer = LitePullConsumer(A.group, config=user(target), poll_timeout=1.0)
    consumer.assign([mq])
    await consumer.start()
    try:
        await consumer.seek_to_begin(mq)
        bodies: list[bytes] = []
        for _ in range(60):  # one-second polls
            bodies += [m.body for m in await consumer.poll(timeout=1.0)]
            if body in bodies:
                break
        assert body in bodies
    finally:
        await consumer.shutdown()


async def test_security_token_is_sent_and_signed(target: AclTarget) -> None:
    """A token travels as the ``SecurityToken`` extField and is part of the signed text: the broker, which
    signs every extField it receives, accepts it."""
    cfg = ClientConfig(namesrv_addr=target.namesrv_addr, access_key=A.user_key, secret_key=A.user_secret,
                       security_token="session-token-1")  # fmt: skip
    await send_one(target, cfg, A.topic, b"with a token")


async def test_query_by_unique_key_is_signed_as_the_broker_checks(target: AclTarget) -> None:
    """QUERY_MESSAGE with ``_UNIQUE_KEY_QUERY``: the broker leaves that field out of the signed text (Java 4.9.4+'s
    own client signs it and is refused); rocketq's client leaves it out too, so the query passes."""
    async with Producer(f"pg-{uuid.uuid4().hex[:6]}", config=user(target), send_msg_timeout=10.0) as producer:
        sent = await producer.send(Message(A.topic, b"find me"))
    async with AdminClient(config=user(target)) as admin:
        found: list[MessageExt] = []
        for _ in range(100):  # the broker's index is built asynchronously
            try:
                found = await admin.query_message_by_id(sent.msg_id, A.topic)
            except BrokerError as exc:
                assert "signature" not in (exc.remark or ""), exc.remark
            if found:
                break
            await asyncio.sleep(0.1)
    assert [m.body for m in found] == [b"find me"]


@pytest.mark.parametrize(
    ("access_key", "secret_key", "remark"),
    [
        (A.user_key, "wrong-secret-1", f"Check signature failed for accessKey={A.user_key}"),
        ("unknown-key-1", "some-secret-1", "No acl config for unknown-key-1"),
        (None, None, "No accessKey is configured"),
    ],
    ids=["wrong-secret", "unknown-key", "no-credentials"],
)
async def test_bad_credentials_are_refused(
    target: AclTarget, access_key: str | None, secret_key: str | None, remark: str
) -> None:
    cfg = config(target, access_key, secret_key)
    with pytest.raises(SendFailedError, match=remark):
        await send_one(target, cfg, A.topic, b"never stored")
    with pytest.raises(BrokerError, match=remark) as info:
        await pull(target, cfg, A.group, A.topic)
    assert info.value.code == ResponseCode.SYSTEM_ERROR  # Java's denial code, not 16 NO_PERMISSION
    with pytest.raises(BrokerError, match=remark):
        await heartbeat(target, cfg, A.group, A.topic)


async def test_topic_the_account_lacks_is_refused(target: AclTarget) -> None:
    denial = f"No default permission for topic:{A.other_topic}"
    with pytest.raises(SendFailedError, match=denial):
        await send_one(target, user(target), A.other_topic, b"never stored")
    with pytest.raises(BrokerError, match=denial):
        await pull(target, user(target), A.group, A.other_topic)
    with pytest.raises(BrokerError, match=denial):  # a push consumer's subscription, as its heartbeat says it
        await heartbeat(target, user(target), A.group, A.other_topic)


async def test_group_the_account_lacks_is_refused(target: AclTarget) -> None:
    denial = f"No default permission for group:{A.other_group}"
    with pytest.raises(BrokerError, match=denial):
        await pull(target, user(target), A.other_group, A.topic)
    with pytest.raises(BrokerError, match=denial):
        await heartbeat(target, user(target), A.other_group, A.topic)


async def test_admin_request_needs_an_admin_account(target: AclTarget) -> None:
    async with AdminClient(config=user(target)) as admin:
        with pytest.raises(BrokerError, match="Need admin permission for request code=17"):
            await admin.create_topic(f"AclNew{uuid.uuid4().hex[:6]}", broker_addr=target.broker_addr)


# -- the consumers' requests, one at a time (a consumer logs a refused pull or heartbeat and tries again) --


async def _api_call(cfg: ClientConfig, fn: object) -> object:
    creds = cfg.credentials()
    remoting = RemotingClient(before_request=creds.sign if creds else None)
    try:
        api = MQClientAPI(remoting, cfg.namesrv_list())
        return await fn(api)  # type: ignore[operator]
    finally:
        await remoting.close()


async def pull(target: AclTarget, cfg: ClientConfig, group: str, topic: str) -> None:
    header = PullMessageRequestHeader(consumer_group=group, topic=topic, queue_id=0, queue_offset=0, max_msg_nums=1,
                                      subscription="*")  # fmt: skip
    await _api_call(cfg, lambda api: api.pull_message(target.broker_addr, header, target.broker_name, 10.0))


async def heartbeat(target: AclTarget, cfg: ClientConfig, group: str, topic: str) -> None:
    consumer = ConsumerData(group, consume_type="CONSUME_PASSIVELY",
                            subscriptions=[SubscriptionData(topic=topic, sub_string="*")])  # fmt: skip
    data = HeartbeatData(client_id=f"acl-test-{uuid.uuid4().hex[:6]}", consumers=[consumer])
    await _api_call(cfg, lambda api: api.send_heartbeat(target.broker_addr, data, 10.0))



# -- the command line: credentials from flags or the environment, the acl commands --------------------------


async def rocketq(target: AclTarget, *argv: str, **env: str) -> tuple[int, str, str]:
    """``rocketq ARGV -n NAMESRV`` (its ``main``, in a thread: a process per command would cost seconds) with
    ``env`` as the only ROCKETQ_* variables; returns the exit code, stdout and stderr."""
    saved = dict(os.environ)
    out, err = io.StringIO(), io.StringIO()

    def call() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                return cli_main([*argv, "-n", target.namesrv_addr])
            except SystemExit as exc:  # argparse's usage errors
                return int(exc.code or 0)

    try:
        for k in [k for k in os.environ if k.startswith("ROCKETQ_") and k != "ROCKETQ_JAVA_CACHE"]:
            del os.environ[k]
        os.environ.update(env)
        rc = await asyncio.to_thread(call)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert "Traceback" not in err.getvalue()
    return rc, out.getvalue(), err.getvalue()


USER_ENV = {"ROCKETQ_ACCESS_KEY": A.user_key, "ROCKETQ_SECRET_KEY": A.user_secret}
# rocketq's broker keeps the ACL admin requests (50-54) for admin accounts (aclStrictAdmin, docs/security.md);
# Java's lets any signed account call them
ADMIN_ENV = {"ROCKETQ_ACCESS_KEY": A.admin_key, "ROCKETQ_SECRET_KEY": A.admin_secret}


async def test_cli_signs_with_flags_or_environment(target: AclTarget) -> None:
    rc, out, err = await rocketq(target, "send", "-t", A.topic, "-b", "from-env", "--json", **USER_ENV)
    assert rc == 0, err
    assert json.loads(out)[0]["sendStatus"] == "SEND_OK"
    rc, out, err = await rocketq(target, "send", "-t", A.topic, "-b", "from-flags", "--json",
                                 "--access-key", A.user_key, "--secret-key", A.user_secret)  # fmt: skip
    assert rc == 0, err
    # a flag wins over the environment
    rc, out, err = await rocketq(target, "send", "-t", A.topic, "--secret-key", "wrong-secret-1", **USER_ENV)
    assert (rc, out) == (1, "") and f"Check signature failed for accessKey={A.user_key}" in err
    rc, out, err = await rocketq(target, "send", "-t", A.topic)
    assert (rc, out) == (1, "") and "No accessKey is configured" in err
    rc, out, err = await rocketq(target, "send", "-t", A.topic, ROCKETQ_ACCESS_KEY=A.user_key)
    assert (rc, out) == (2, "") and "need both access_key and secret_key" in err


async def test_cli_acl_commands(target: AclTarget) -> None:
    account = f"cli-{uuid.uuid4().hex[:8]}"

    async def accounts() -> dict[str, dict[str, object]]:
        rc, out, err = await rocketq(target, "acl", "list", "--json", **ADMIN_ENV)
        assert rc == 0, err
        [broker] = json.loads(out)
        assert broker["brokerAddr"] == target.broker_addr
        return {a["accessKey"]: a for a in broker["plainAccessConfigs"]}

    before = await accounts()
    assert set(before) >= {A.admin_key, A.user_key} and account not in before
    assert all(a["secretKey"] in ("", "******") for a in before.values())  # secrets are not printed
    rc, out, err = await rocketq(target, "acl", "version", "--json", **ADMIN_ENV)
    assert rc == 0, err
    [version] = json.loads(out)
    assert (version["brokerAddr"], version["clusterName"]) == (target.broker_addr, target.cluster_name)
    rc, _, err = await rocketq(target, "acl", "update", "-a", account, "-s", "cli-secret-1",
                               "--default-topic-perm", "pub", "--topic-perm", "T1=SUB", "--topic-perm", "T2=PUB|SUB",
                               **ADMIN_ENV)  # fmt: skip
    assert rc == 0, err
    created = (await accounts())[account]
    assert (created["defaultTopicPerm"], created["topicPerms"], created["admin"]) == ("PUB", ["T1=SUB", "T2=PUB|SUB"],
                                                                                      False)  # fmt: skip
    rc, _, err = await rocketq(target, "acl", "update", "-a", account, "--admin", **ADMIN_ENV)
    assert rc == 0, err
    updated = (await accounts())[account]
    assert updated["admin"] is True and updated["topicPerms"] == ["T1=SUB", "T2=PUB|SUB"]  # the rest unchanged
    rc, _, err = await rocketq(target, "acl", "delete", "-a", account, **ADMIN_ENV)
    assert rc == 0, err
    assert account not in await accounts()
    rc, out, err = await rocketq(target, "acl", "update", "-a", account, "--topic-perm", "T1=READ", **ADMIN_ENV)
    assert (rc, out) == (2, "") and "not a permission" in err


async def test_cli_white_list_lets_an_unsigned_client_in(target: AclTarget) -> None:
    if target.kind == "java":
        # Java 4.9.7 writes the white list only to a file under its ROCKETMQ_HOME; this Java broker's file is
        # elsewhere (AclJavaCluster leaves the shared home alone), so it answers 211: shown, not hidden
        rc, out, err = await rocketq(target, "acl", "white-list", "-g", "127.0.0.1", **ADMIN_ENV)
        assert (rc, out) == (1, "") and "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED" in err
        return
    with pytest.raises(SendFailedError, match="No accessKey is configured"):
        await send_one(target, config(target), A.topic, b"unsigned")
    rc, _, err = await rocketq(target, "acl", "white-list", "-g", "10.9.8.*,127.0.0.1", **ADMIN_ENV)
    assert rc == 0, err
    rc, out, err = await rocketq(target, "acl", "list", "--json", **ADMIN_ENV)
    assert rc == 0, err
    assert json.loads(out)[0]["globalWhiteAddrs"] == ["10.9.8.*", "127.0.0.1"]
    await send_one(target, config(target), A.topic, b"unsigned but white-listed")  # no credentials at all
    rc, _, err = await rocketq(target, "acl", "white-list", "-g", "", **ADMIN_ENV)
    assert rc == 0, err
    with pytest.raises(SendFailedError, match="No accessKey is configured"):
        await send_one(target, config(target), A.topic, b"unsigned again")


# -- the Spark connector: accessKey/secretKey/securityToken options -------------------------------------------


async def test_spark_sink_and_source_sign_with_their_options(target: AclTarget) -> None:
    pa = pytest.importorskip("pyarrow")
    from rocketq.spark._offsets import QueueRange
    from rocketq.spark._options import SinkOptions, SourceOptions
    from rocketq.spark._read import ReadTask, read_range
    from rocketq.spark.sink import SinkRowError, write_partition

    account = {"accessKey": A.user_key, "secretKey": A.user_secret}
    body = f"spark-{uuid.uuid4().hex}".encode()
    batch = pa.RecordBatch.from_pydict({"body": [body]})
    sink = SinkOptions.parse({"nameServer": target.namesrv_addr, "topic": A.topic, **account}, streaming=False)
    written = await asyncio.to_thread(write_partition, iter([batch]), ["body"], sink, streaming=False)
    assert written.rows == 1
    unsigned = SinkOptions.parse({"nameServer": target.namesrv_addr, "topic": A.topic}, streaming=False)
    with pytest.raises(SinkRowError, match="No accessKey is configured"):
        await asyncio.to_thread(write_partition, iter([batch]), ["body"], unsigned, streaming=False)

    def read_all(opts: SourceOptions, ends: dict[int, int]) -> list[bytes]:
        out: list[bytes] = []
        for qid, end in ends.items():
            task = ReadTask(QueueRange(A.topic, target.broker_name, qid, 0, end), target.broker_addr, opts)
            for b in read_range(task):
                out += b.column("body").to_pylist()
        return out

    ends = {qid: await max_offset(target, qid) for qid in (0, 1)}
    source = SourceOptions.parse({"nameServer": target.namesrv_addr, "topic": A.topic, "consumerGroup": A.group,
                                  **account}, streaming=False)  # fmt: skip
    assert body in await asyncio.to_thread(read_all, source, ends)
    denied = SourceOptions.parse({"nameServer": target.namesrv_addr, "topic": A.topic, "consumerGroup": A.group,
                                  "accessKey": A.user_key, "secretKey": "wrong-secret-1"}, streaming=False)  # fmt: skip
    with pytest.raises(BrokerError, match="Check signature failed"):
        await asyncio.to_thread(read_all, denied, ends)


async def max_offset(target: AclTarget, queue_id: int) -> int:
    mq = MessageQueue(A.topic, target.broker_name, queue_id)
    return await _api_call(user(target), lambda api: api.get_max_offset(target.broker_addr, mq, 10.0))  # type: ignore[return-value]
