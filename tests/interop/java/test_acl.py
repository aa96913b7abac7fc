"""ACL 1.0 from Apache RocketMQ's own Java side: the 4.9.7 client with ``AclClientRPCHook`` and stock mqadmin's
ACL commands against a broker with ``aclEnable=true`` and one ``plain_acl.yml`` (``acl_accounts.PLAIN_ACL``).

The driver's ``acl`` scenario (tests/interop/java/src/AclScenarios.java) runs many cases in one JVM: an allowed
account sends, push-consumes and pull-consumes; a wrong secret, an unknown key, no credentials, a topic or a
group the account lacks are refused with Java's code 1 and remark. mqadmin (one MqadminBatch JVM, signing
with the admin account of its ``conf/tools.yml``) creates the topics and runs updateAclConfig,
clusterAclConfigVersion, deleteAccessConfig and updateGlobalWhiteAddr, each checked by its effect.

Runs against rocketq; ``ROCKETQ_JAVA_REFERENCE=1`` runs the same tests against a Java 4.9.7 name server and
broker given the same file (the assertions are the reference's behaviour). A 4.9.7 broker applies
updateAclConfig and deleteAccessConfig to its memory at once, but updateGlobalWhiteAddr only rewrites the file:
its file watcher (a 5 s poll) applies it, so the test waits for the effect.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from acl_accounts import (
    ACL_EXCEPTION,
    ADMIN,
    DRIVER_GROUP,
    DRIVER_TOPIC,
    GROUP,
    OTHER_GROUP,
    OTHER_TOPIC,
    PLAIN_ACL,
    TOPIC,
    USER,
    WHITE,
)
from javaharness import run_driver, run_java
from mqadmin import MqadminSession

from rocketq.codes import RequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.testing import EmbeddedCluster
from rocketq.testing.java import JavaCluster, rocketmq_home

pytestmark = pytest.mark.asyncio(loop_scope="module")

NO_KEY = "No accessKey is configured"
SENT = 4
# updateGlobalWhiteAddr reaches a 4.9.7 broker's memory only through its file watcher (a 5 s poll): it just
# rewrites the file. A check that follows an ACL change is retried until it ends as expected, this long at most.
RELOAD_WAIT_MS = 20_000


@dataclass(frozen=True)
class AclServer:
    """The broker under test (rocketq's, or Java's in reference mode): its addresses and its account file."""

    namesrv_addr: str
    broker_addr: str
    acl_file: Path


def acl_file_of(server: AclServer) -> Path:
    return server.acl_file


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[AclServer]:
    base = tmp_path_factory.mktemp("acl")
    if os.environ.get("ROCKETQ_JAVA_REFERENCE") == "1":
        java = JavaCluster(base / "java-cluster", plain_acl=PLAIN_ACL)
        await asyncio.to_thread(java.start)
        try:
            yield AclServer(java.namesrv_addr, java.broker_addr, java.acl_file)
        finally:
            java.stop()
        return
    acl_file = base / "plain_acl.yml"
    acl_file.write_text(PLAIN_ACL)
    async with EmbeddedCluster(base / "cluster", aclEnable=True, aclFilePath=str(acl_file)) as cluster:
        yield AclServer(cluster.namesrv_addr, cluster.broker_addr, acl_file)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def admin(server: AclServer, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[MqadminSession]:
    """One mqadmin JVM signing with the admin account; the topics exist once it is handed out."""
    base = tmp_path_factory.mktemp("acl-mqadmin")
    tools = f"accessKey: {ADMIN[0]}\nsecretKey: {ADMIN[1]}\n"
    async with MqadminSession(base / "user-home", rocketmq_home=rocketmq_home(base / "home", {
        "conf/tools.yml": tools,
    })) as mq:  # fmt: skip
        for topic in (TOPIC, OTHER_TOPIC, DRIVER_TOPIC):
            await mq.ok("updateTopic", "-b", server.broker_addr, "-t", topic, "-r", "2", "-w", "2")
        yield mq


async def cases(server: AclServer, tmp_path: Path, *items: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Runs the driver's ``acl`` scenario; its lines by case name."""
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(list(items)))
    lines = await run_driver(
        "acl", "--namesrv", server.namesrv_addr, "--cases", str(path), "--timeout", "90",
        home=tmp_path / "java-home", timeout=120,
    )  # fmt: skip
    assert lines and lines[-1].get("done") and not lines[-1].get("error"), lines[-3:]
    return {x["name"]: x for x in lines if x.get("event") == "case"}


def case(name: str, mode: str, creds: tuple[str, str] | None, *, topic: str = TOPIC, group: str = GROUP,
         count: int = 0, wait_ms: int = 0, expect: str | None = None) -> dict[str, Any]:  # fmt: skip
    """One driver case; ``expect`` ("ok"/"refused") retries it for up to RELOAD_WAIT_MS until it ends so."""
    c: dict[str, Any] = {"name": name, "mode": mode, "topic": topic, "group": group, "count": count, "waitMs": wait_ms}
    if expect is not None:
        c["expect"], c["retryMs"] = expect, RELOAD_WAIT_MS
    if creds is not None:
        c["accessKey"], c["secretKey"] = creds
    return c


def refused_with(line: dict[str, Any], message: str) -> bool:
    """Java's denial: code 1 (SYSTEM_ERROR) and the AclException's text (then the throwing frame)."""
    return line.get("code") == 1 and str(line.get("remark", "")).startswith(ACL_EXCEPTION + message)


def push_refused_with(line: dict[str, Any], message: str) -> bool:
    """A push consumer's own heartbeat (request code 34) was refused, and nothing arrived."""
    remark = line["refusals"].get("34", "")
    return line["received"] == 0 and str(remark).startswith(ACL_EXCEPTION + message)


WRONG = (USER[0], "not-the-secret")
UNKNOWN = ("nobody-at-all", "whatever-secret")
DENIALS: list[tuple[str, tuple[str, str] | None, str, str, str]] = [
    # name, credentials, topic, group, Java's message
    ("wrong-secret", WRONG, TOPIC, GROUP, f"Check signature failed for accessKey={USER[0]}"),
    ("unknown-key", UNKNOWN, TOPIC, GROUP, f"No acl config for {UNKNOWN[0]}"),
    ("no-credentials", None, TOPIC, GROUP, NO_KEY),
    ("lacks-topic", USER, OTHER_TOPIC, GROUP, f"No default permission for topic:{OTHER_TOPIC}"),
    ("lacks-group", USER, TOPIC, OTHER_GROUP, f"No default permission for group:{OTHER_GROUP}"),
]


async def test_java_client_allowed_and_refused(server: AclServer, admin: MqadminSession, tmp_path: Path) -> None:
    items = [case("send-ok", "send", USER, count=SENT)]
    items += [case(f"send-{n}", "send", cr, topic=t, count=1) for n, cr, t, _g, _m in DENIALS if n != "lacks-group"]
    items += [case("push-ok", "push", USER, count=SENT, wait_ms=60_000)]
    items += [case(f"push-{n}", "push", cr, topic=t, group=g, wait_ms=1500) for n, cr, t, g, _m in DENIALS]
    items += [case("pull-ok", "pull", USER)]
    items += [case(f"pull-{n}", "pull", cr, topic=t, group=g) for n, cr, t, g, _m in DENIALS]
    got = await cases(server, tmp_path, *items)

    assert got["send-ok"]["sent"] == SENT and "code" not in got["send-ok"], got["send-ok"]
    # (a Java broker answers a consumer-list request before the first heartbeat with code 1 too: not ACL's)
    acl_refusals = [r for r in got["push-ok"]["refusals"].values() if str(r).startswith(ACL_EXCEPTION)]
    assert got["push-ok"]["received"] == SENT and not acl_refusals, got["push-ok"]
    # Only the allowed sends were stored: the pull reads exactly them.
    assert got["pull-ok"]["received"] == SENT and "code" not in got["pull-ok"], got["pull-ok"]
    for name, _creds, _topic, _group, message in DENIALS:
        if name != "lacks-group":  # a producer's group is not a resource of SEND_MESSAGE(_V2)
            send = got[f"send-{name}"]
            assert send["sent"] == 0 and refused_with(send, message), send
        assert push_refused_with(got[f"push-{name}"], message), got[f"push-{name}"]
        assert refused_with(got[f"pull-{name}"], message), got[f"pull-{name}"]


async def test_every_send_kind_consume_and_look_up_signed(
    server: AclServer, admin: MqadminSession, tmp_path: Path
) -> None:
    """The driver's "send" scenario signed as the user: sync, async, oneway and batch sends, a push consumer,
    viewMessage by offset msgId and by unique id, queryMessage by key. A 4.9.7 client signs QUERY_MESSAGE (both
    of the latter) over ``_UNIQUE_KEY_QUERY``, which a Java broker refuses (docs/compatibility.md, deliberate
    differences); rocketq accepts it."""
    rc, out, err = await run_java(
        "RocketqDriver", "send", "--namesrv", server.namesrv_addr, "--topic", DRIVER_TOPIC, "--group", DRIVER_GROUP,
        "--count", "2", "--timeout", "60", "--access-key", USER[0], "--secret-key", USER[1],
        home=tmp_path / "java-home", timeout=120,
    )  # fmt: skip
    lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    sent = [x for x in lines if x.get("event") == "sent"]
    assert sorted(x["mode"] for x in sent) == ["async", "async", "batch", "batch", "oneway", "oneway", "sync", "sync"]
    received = {x["keys"] for x in lines if x.get("event") == "received"}
    assert received == {x["keys"] for x in sent}
    viewed = sorted(x["consumer"] for x in lines if x.get("event") == "viewed")
    if os.environ.get("ROCKETQ_JAVA_REFERENCE") == "1":
        # viewMessage(topic, uniqueId) is a QUERY_MESSAGE too: only the look-up by offset msgId works there; the
        # client turns the refusal into "no message" (test_acl_differential pins the broker's answer)
        assert rc == 1 and viewed == ["offsetMsgId"], (rc, viewed)
        assert "CODE: 208" in lines[-1]["error"], lines[-1]
        return
    assert rc == 0 and lines[-1] == {"done": True, "scenario": "send", "complete": True}, err[-3000:]
    assert viewed == ["key", "offsetMsgId", "uniqKey"]


async def test_admin_requests_need_an_admin_account(server: AclServer, tmp_path: Path) -> None:
    """Stock mqadmin signing as the plain user may not create a topic: UPDATE_AND_CREATE_TOPIC is an admin code."""
    tools = f"accessKey: {USER[0]}\nsecretKey: {USER[1]}\n"
    user_home = rocketmq_home(tmp_path / "user-rmq-home", {"conf/tools.yml": tools})
    async with MqadminSession(tmp_path / "user", rocketmq_home=user_home) as user:
        run = await user.run("updateTopic", "-b", server.broker_addr, "-t", "AclUserMadeTopic")
    assert run.failed
    assert f"Need admin permission for request code=17, but accessKey={USER[0]} is not" in run.stderr, run.stderr


def acl_version(run_stdout: str) -> int:
    """clusterAclConfigVersion's #AclConfigVersionNum column (the one data row)."""
    rows = [line.split() for line in run_stdout.splitlines() if line.strip() and not line.startswith("#")]
    data = [r for r in rows if len(r) >= 5 and not r[0].startswith("get")]
    assert len(data) == 1, run_stdout
    return int(data[0][4])


def acl_listing(stdout: str) -> tuple[set[str], str]:
    """getAclConfig's printout: the accessKeys of the accounts (``%-1s %-18s: %s`` lines) and the global white
    list as printed (``%-20s: %s``)."""
    keys, white = set(), ""
    for line in stdout.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "accessKey":
            keys.add(value.strip())
        elif name.strip() == "globalWhiteRemoteAddresses":
            white = value.strip()
    return keys, white


async def test_mqadmin_acl_commands(server: AclServer, admin: MqadminSession, tmp_path: Path) -> None:
    broker = server.broker_addr
    newcomer = ("aclNewcomer", "newcomer-secret")
    before = acl_version((await admin.ok("clusterAclConfigVersion", "-b", broker)).stdout)

    await admin.ok("updateAclConfig", "-b", broker, "-a", newcomer[0], "-s", newcomer[1], "-i", "PUB", "-u", "SUB")
    after = acl_version((await admin.ok("clusterAclConfigVersion", "-b", broker)).stdout)
    assert after > before
    accounts = {a["accessKey"]: a for a in yaml.safe_load(acl_file_of(server).read_text())["accounts"]}
    assert accounts[newcomer[0]]["secretKey"] == newcomer[1]
    assert accounts[newcomer[0]]["defaultTopicPerm"] == "PUB"
    listed = await admin.ok("getAclConfig", "-b", broker)
    assert acl_listing(listed.stdout) == ({ADMIN[0], USER[0], WHITE[0], newcomer[0]}, "[10.10.103.*]"), listed.stdout
    got = await cases(server, tmp_path, case("newcomer", "send", newcomer, count=1, expect="ok"))
    assert got["newcomer"]["sent"] == 1, got["newcomer"]

    await admin.ok("deleteAccessConfig", "-b", broker, "-a", newcomer[0])
    accounts = {a["accessKey"]: a for a in yaml.safe_load(acl_file_of(server).read_text())["accounts"]}
    assert newcomer[0] not in accounts and USER[0] in accounts
    (tmp_path / "2").mkdir()
    got = await cases(server, tmp_path / "2", case("deleted", "send", newcomer, count=1, expect="refused"))
    assert refused_with(got["deleted"], f"No acl config for {newcomer[0]}"), got["deleted"]

    # From a globally white-listed address even an unsigned request passes every check.
    assert (await unsigned_max_offset(server)).code == 1
    await admin.ok("updateGlobalWhiteAddr", "-b", broker, "-g", "127.0.0.1")
    try:
        assert yaml.safe_load(acl_file_of(server).read_text())["globalWhiteRemoteAddresses"] == ["127.0.0.1"]
        answer = await unsigned_max_offset(server, until_code=0)
        assert answer.code == 0, answer.remark
    finally:
        await admin.ok("updateGlobalWhiteAddr", "-b", broker, "-g", "10.10.103.*")
    answer = await unsigned_max_offset(server, until_code=1)
    assert answer.code == 1 and answer.remark.startswith(ACL_EXCEPTION + NO_KEY), answer.remark


async def unsigned_max_offset(server: AclServer, until_code: int | None = None) -> RemotingCommand:
    """An unsigned GET_MAX_OFFSET (rocketq's RemotingClient); with ``until_code``, asked again every 250 ms
    until it is answered with that code, RELOAD_WAIT_MS at most."""
    rc = RemotingClient()
    try:
        for _ in range(RELOAD_WAIT_MS // 250):
            cmd = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": "0"})
            answer = await rc.invoke(server.broker_addr, cmd, timeout=10)
            if until_code is None or answer.code == until_code:
                break
            await asyncio.sleep(0.25)
        return answer
    finally:
        await rc.close()
