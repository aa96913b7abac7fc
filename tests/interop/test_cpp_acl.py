"""The Apache C++ client (``rocketmq==0.4.4``, ``set_session_credentials``) against a broker with
``aclEnable=true`` (``rocketq.testing.acl.AclAccounts``' plain_acl.yml): an allowed account sends,
push-consumes and pull-consumes; a wrong secret, an unknown key, no credentials (the client then signs with an
empty key), a topic or a group the account lacks are refused. The C++ client reports a refused request only in
its log, where the broker's remark is quoted: the tests read it there."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cppharness import Driver, start_driver, wait_until

from rocketq.client import AdminClient, ClientConfig
from rocketq.testing import EmbeddedCluster
from rocketq.testing.acl import AclAccounts, AclJavaCluster

A = AclAccounts()
USER = ("--access-key", A.user_key, "--secret-key", A.user_secret)


@dataclass
class AclTarget:
    namesrv_addr: str
    cluster_name: str


@pytest.fixture(params=[pytest.param("java", marks=pytest.mark.java), "rocketq"])
async def target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AclTarget]:
    """The same plain_acl.yml enforced by the Java 4.9.7 broker (the reference) or by rocketq's broker."""
    async with contextlib.AsyncExitStack() as stack:
        if request.param == "java":
            java: AclJavaCluster = request.getfixturevalue("java_acl_cluster")
            t = AclTarget(java.namesrv_addr, java.cluster_name)
        else:
            acl_file = tmp_path / "plain_acl.yml"
            acl_file.write_text(A.yaml())
            ours = await stack.enter_async_context(
                EmbeddedCluster(tmp_path / "cluster", aclEnable=True, aclFilePath=str(acl_file)))
            t = AclTarget(ours.namesrv_addr, ours.broker.config.brokerClusterName)
        admin_cfg = ClientConfig(namesrv_addr=t.namesrv_addr, access_key=A.admin_key, secret_key=A.admin_secret)
        async with AdminClient(config=admin_cfg) as admin:
            for topic in (A.topic, A.other_topic):
                await admin.create_topic(topic, cluster=t.cluster_name, read_queue_nums=2, write_queue_nums=2)
        yield t


def cpp_log(home: Path) -> str:
    """Everything the C++ client logged under ``home`` (``$HOME/logs/rocketmq-cpp``)."""
    logs = home / "logs" / "rocketmq-cpp"
    return "".join(p.read_text(errors="replace") for p in sorted(logs.glob("*"))) if logs.is_dir() else ""


async def refused(driver: Driver, home: Path, remark: str) -> None:
    """The broker's refusal ``remark`` reaches the C++ client (its log quotes it); then the driver is stopped."""
    try:
        await wait_until(lambda: remark in cpp_log(home), 60, f"{driver.name}: {remark!r} in the C++ log", step=0.2)
    finally:
        await driver.kill()
    assert not driver.messages, driver.messages[:3]


async def test_allowed_account_sends_push_and_pull_consumes(
    target: AclTarget, drivers: list[Driver], tmp_path: Path
) -> None:
    ns, tag = target.namesrv_addr, uuid.uuid4().hex[:8]
    producer = await start_driver("produce", "--topic", A.topic, "--group", f"pg-{tag}", "--count", "4",
                                  "--body", f"{tag}-{{i}}", "--timeout", "60", *USER, namesrv=ns,
                                  home=tmp_path / "p")  # fmt: skip
    drivers.append(producer)
    assert await producer.wait(90) == 0, producer.errors()[:3]
    sent = {m["msg_id"] for m in producer.messages if m["status"] == "OK"}
    assert len(sent) == 4
    # --expect 0: the consumers run until killed (the shared brokers' topic also holds other tests' messages,
    # which a count would include); done when all four of ours arrived
    for command in ("push-consume", "pull-consume"):
        consumer = await start_driver(command, "--topic", A.topic, "--group", A.group, "--expect", "0",
                                      "--timeout", "120", *USER, namesrv=ns, home=tmp_path / command)  # fmt: skip
        drivers.append(consumer)
        try:
            await wait_until(lambda c=consumer: sent <= {m["msg_id"] for m in c.messages}, 100, f"{command} of 4")  # type: ignore[misc]
        finally:
            await consumer.kill()


@pytest.mark.parametrize(
    ("credentials", "remark"),
    [
        (("--access-key", A.user_key, "--secret-key", "wrong-secret-1"),
         f"Check signature failed for accessKey={A.user_key}"),
        (("--access-key", "unknown-key-1", "--secret-key", "some-secret-1"), "No acl config for unknown-key-1"),
        ((), "No acl config for ,"),  # the C++ client's default: an empty AccessKey, signed with an empty secret
    ],
    ids=["wrong-secret", "unknown-key", "no-credentials"],
)
async def test_bad_credentials_are_refused(
    target: AclTarget, drivers: list[Driver], tmp_path: Path, credentials: tuple[str, ...], remark: str
) -> None:
    ns = target.namesrv_addr
    producer = await start_driver("produce", "--topic", A.topic, "--group", "pg-bad", "--count", "1",
                                  "--timeout", "60", *credentials, namesrv=ns, home=tmp_path / "p")  # fmt: skip
    drivers.append(producer)
    assert await producer.wait(90) == 1
    assert remark in cpp_log(tmp_path / "p")
    for command in ("push-consume", "pull-consume"):
        home = tmp_path / command
        consumer = await start_driver(command, "--topic", A.topic, "--group", A.group, "--expect", "1",
                                      "--timeout", "90", *credentials, namesrv=ns, home=home)  # fmt: skip
        drivers.append(consumer)
        await refused(consumer, home, remark)


async def test_topic_and_group_the_account_lacks_are_refused(
    target: AclTarget, drivers: list[Driver], tmp_path: Path
) -> None:
    ns = target.namesrv_addr
    producer = await start_driver("produce", "--topic", A.other_topic, "--group", "pg-other", "--count", "1",
                                  "--timeout", "60", *USER, namesrv=ns, home=tmp_path / "p")  # fmt: skip
    drivers.append(producer)
    assert await producer.wait(90) == 1
    assert f"No default permission for topic:{A.other_topic}" in cpp_log(tmp_path / "p")
    cases = [("push-consume", A.topic, A.other_group), ("pull-consume", A.topic, A.other_group),
             ("pull-consume", A.other_topic, A.group)]  # fmt: skip
    for n, (command, topic, group) in enumerate(cases):
        home = tmp_path / f"c{n}"
        consumer = await start_driver(command, "--topic", topic, "--group", group, "--expect", "1",
                                      "--timeout", "90", *USER, namesrv=ns, home=home)  # fmt: skip
        drivers.append(consumer)
        lacking = f"group:{group}" if group == A.other_group else f"topic:{topic}"
        await refused(consumer, home, f"No default permission for {lacking}")
