"""Name server protection (rocketq.namesrv.protection): with an account file, every request that changes the
name server needs a signed admin account; reads stay open; the broker signs its registrations.

Signatures here are computed in the test from the reference's algorithm (every extField but Signature, sorted
by key, values concatenated, then the body; HMAC-SHA1, base64), not with the project's signer."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import hmac
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.client import AdminClient, ClientConfig, Message, Producer, SendStatus
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import ConfigError
from rocketq.namesrv import NamesrvConfig, NamesrvServer
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.testing.cluster import EmbeddedCluster

ADMIN = ("NamesrvAdmin", "admin-secret-1")
STRANGER = ("Stranger1", "whatever1")
USER = ("NamesrvUser1", "user-secret-1")
BROKER = ("BrokerA-account", "broker-secret-1")
DENIED = "org.apache.rocketmq.acl.common.AclException: "

ACCOUNTS = f"""
accounts:
  - accessKey: {ADMIN[0]}
    secretKey: {ADMIN[1]}
    admin: true
  - accessKey: {BROKER[0]}
    secretKey: {BROKER[1]}
    admin: true
  - accessKey: {USER[0]}
    secretKey: {USER[1]}
    admin: false
"""


def sign(ext: dict[str, str], body: bytes | None, account: tuple[str, str]) -> dict[str, str]:
    fields = {k: v for k, v in ext.items() if k != "Signature"}
    fields["AccessKey"] = account[0]
    content = "".join(fields[k] for k in sorted(fields)).encode() + (body or b"")
    digest = hmac.new(account[1].encode(), content, hashlib.sha1).digest()
    return {**fields, "Signature": base64.b64encode(digest).decode()}


@dataclasses.dataclass
class Attack:
    """One dangerous request: its fields and body, and how to see that it took effect."""

    code: int
    ext: dict[str, str]
    body: bytes | None = None


def attacks(cluster: EmbeddedCluster) -> dict[str, Attack]:
    broker = cluster.broker
    reg = broker.registration
    body = reg._register_body()
    fake = dataclasses.replace(reg._register_header(body), broker_addr="203.0.113.66:10911")  # the attacker
    ident = {"brokerName": broker.config.brokerName, "clusterName": broker.config.brokerClusterName}
    return {
        "register a fake master": Attack(RequestCode.REGISTER_BROKER, fake.to_ext(), body),
        "unregister the broker": Attack(RequestCode.UNREGISTER_BROKER,
                                        {**ident, "brokerAddr": broker.config.broker_addr, "brokerId": "0"}),
        "wipe write permission": Attack(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": ident["brokerName"]}),
        "add write permission": Attack(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": ident["brokerName"]}),
        "delete a topic's route": Attack(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "Guarded"}),
        "put order config": Attack(RequestCode.PUT_KV_CONFIG,
                                   {"namespace": "ORDER_TOPIC_CONFIG", "key": "Guarded", "value": "broker-z:8"}),
        "delete kv config": Attack(RequestCode.DELETE_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "Kept"}),
        "expire every broker": Attack(RequestCode.UPDATE_NAMESRV_CONFIG, {}, b"brokerChannelExpiredTime=90000\n"),
        "keep a broker alive": Attack(RequestCode.QUERY_DATA_VERSION, {**fake.to_ext()}, body),
    }  # fmt: skip


async def send(rc: RemotingClient, addr: str, attack: Attack, ext: dict[str, str]) -> RemotingCommand:
    cmd = RemotingCommand.request(attack.code, dict(ext), attack.body or b"")
    return await rc.invoke(addr, cmd, timeout=10.0)


Protected = tuple[EmbeddedCluster, Path]


@pytest.fixture
async def protected(tmp_path: Path) -> AsyncIterator[Protected]:
    acl = tmp_path / "namesrv_acl.yml"
    acl.write_text(ACCOUNTS)
    settings = {"aclFile": str(acl), "aclReloadIntervalMills": "100"}
    async with EmbeddedCluster(tmp_path / "c", namesrv_settings=settings, accessKey=BROKER[0],
                               secretKey=BROKER[1]) as cluster:  # fmt: skip
        yield cluster, acl


def snapshot(cluster: EmbeddedCluster) -> tuple[object, ...]:
    assert cluster.namesrv is not None
    ns = cluster.namesrv
    route = ns.route_info.pickup_topic_route_data("Guarded")
    return (
        route.to_json() if route is not None else None,
        ns.kv_config.snapshot(),
        ns.config.broker_expiry,
    )


async def test_every_write_is_refused_without_a_signed_admin(protected: Protected) -> None:
    cluster, _ = protected
    assert cluster.namesrv is not None
    ns = cluster.namesrv
    async with AdminClient(config=ClientConfig(namesrv_addr=cluster.namesrv_addr)) as admin:  # reads stay open
        await admin.create_topic("Guarded", read_queue_nums=2, write_queue_nums=2)
        route = await admin.topic_route("Guarded")
    assert [b.broker_addrs[0] for b in route.broker_datas] == [cluster.broker_addr]
    ns.kv_config.put("ORDER_TOPIC_CONFIG", "Kept", "broker-a:2")
    before = snapshot(cluster)
    rc = RemotingClient()
    try:
        for name, attack in attacks(cluster).items():
            expected = {
                "anonymous": (attack.ext, "No accessKey is configured"),
                "unknown key": (sign(attack.ext, attack.body, STRANGER), f"No acl config for {STRANGER[0]}"),
                "wrong secret": (sign(attack.ext, attack.body, (ADMIN[0], "not-the-secret")),
                                 f"Check signature failed for accessKey={ADMIN[0]}"),
                "not admin": (sign(attack.ext, attack.body, USER),
                              f"Need admin permission for request code={attack.code}, but accessKey={USER[0]} is not"),
            }  # fmt: skip
            for who, (ext, reason) in expected.items():
                resp = await send(rc, cluster.namesrv_addr, attack, ext)
                assert resp.code == ResponseCode.SYSTEM_ERROR, (name, who, resp.code, resp.remark)
                assert (resp.remark or "").startswith(DENIED + reason + ", "), (name, who, resp.remark)
                assert snapshot(cluster) == before, (name, who)  # and it changed nothing
        # the same fake registration, signed by an admin, is accepted: the refusals above were the check's
        hijack = attacks(cluster)["register a fake master"]
        resp = await send(rc, cluster.namesrv_addr, hijack, sign(hijack.ext, hijack.body, ADMIN))
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        resp = await send(rc, cluster.namesrv_addr, attacks(cluster)["put order config"],
                          sign(attacks(cluster)["put order config"].ext, None, ADMIN))  # fmt: skip
        assert resp.code == ResponseCode.SUCCESS and ns.kv_config.get("ORDER_TOPIC_CONFIG", "Guarded") == "broker-z:8"
    finally:
        await rc.close()
    assert ns.protection is not None and ns.protection.refused == 4 * len(attacks(cluster))


async def test_the_signed_broker_registers_and_clients_need_no_credentials(protected: Protected) -> None:
    cluster, _ = protected
    assert cluster.namesrv is not None
    # EmbeddedCluster waited for the broker's first registration: its signature was accepted
    assert cluster.broker.registration.registered_once.is_set()
    assert cluster.namesrv.protection is not None and cluster.namesrv.protection.refused == 0
    async with Producer("pg-open", config=ClientConfig(namesrv_addr=cluster.namesrv_addr)) as producer:
        assert (await producer.send(Message("OpenRoutes", b"x"))).status is SendStatus.SEND_OK


async def test_changed_file_applies_and_a_broken_one_is_refused(protected: Protected) -> None:
    cluster, acl = protected
    assert cluster.namesrv is not None
    attack = Attack(RequestCode.PUT_KV_CONFIG, {"namespace": "NS", "key": "k", "value": "v"})
    rc = RemotingClient()

    async def answer_to(account: tuple[str, str]) -> RemotingCommand:
        return await send(rc, cluster.namesrv_addr, attack, sign(attack.ext, None, account))

    async def until(account: tuple[str, str], code: int) -> None:
        async with asyncio.timeout(30):  # the reload interval here is 0.1 s; a file system's mtime may be coarse
            while (await answer_to(account)).code != code:
                await asyncio.sleep(0.05)

    try:
        assert (await answer_to(USER)).code == ResponseCode.SYSTEM_ERROR
        acl.write_text(ACCOUNTS.replace("admin: false", "admin: true"))
        bump(acl)
        await until(USER, ResponseCode.SUCCESS)
        acl.write_text("accounts: [this is: not: yaml")  # malformed: refused, the rules in force stay
        bump(acl)
        await asyncio.sleep(0.3)
        for _ in range(3):
            assert (await answer_to(USER)).code == ResponseCode.SUCCESS
        assert (await answer_to(STRANGER)).code == ResponseCode.SYSTEM_ERROR
    finally:
        await rc.close()


def bump(path: Path) -> None:
    """Move the file's mtime on by a second: a rewrite within the file system's timestamp granularity."""
    stamp = time.time() + 1 + path.stat().st_mtime % 1
    os.utime(path, (stamp, stamp))


async def test_an_account_file_that_cannot_be_used_stops_start_up(tmp_path: Path) -> None:
    for name, text in {"missing": None, "malformed": "accounts: [", "short key": "accounts:\n  - accessKey: abc\n"
                       "    secretKey: 12345678\n    admin: true\n"}.items():  # fmt: skip
        path = tmp_path / f"{name.replace(' ', '_')}.yml"
        if text is not None:
            path.write_text(text)
        server = NamesrvServer(NamesrvConfig(listen_host="127.0.0.1", listen_port=0, home_dir=tmp_path / "n",
                                             acl_file=path))  # fmt: skip
        with pytest.raises(ConfigError, match="aclFile") as info:
            await server.start()
        assert str(path) in str(info.value), name
        assert server.listen_addresses == []


async def test_a_protected_name_server_may_listen_on_every_interface(tmp_path: Path) -> None:
    acl = tmp_path / "acl.yml"
    acl.write_text(ACCOUNTS)
    config = NamesrvConfig(listen_host="0.0.0.0", listen_port=0, home_dir=tmp_path / "n", acl_file=acl)
    async with NamesrvServer(config) as server:  # no allowInsecureBind needed: writes need an account
        assert server.protected and server.listen_addresses[0].startswith("0.0.0.0:")


async def test_the_command_line_flag(tmp_path: Path) -> None:
    acl = tmp_path / "acl.yml"
    acl.write_text(ACCOUNTS)
    base = (sys.executable, "-m", "rocketq", "--log-level", "WARNING", "namesrv", "--port", "0")
    pipes = {"stdout": asyncio.subprocess.PIPE, "stderr": asyncio.subprocess.PIPE}
    good = await asyncio.create_subprocess_exec(*base, "--home", str(tmp_path / "a"), "--acl-file", str(acl), **pipes)
    bad = await asyncio.create_subprocess_exec(*base, "--home", str(tmp_path / "b"), "--acl-file",
                                               str(tmp_path / "nope.yml"), **pipes)  # fmt: skip
    try:
        async with asyncio.timeout(60):
            assert good.stdout is not None
            line = (await good.stdout.readline()).decode()
            assert line.startswith("rocketq namesrv listening on 0.0.0.0:"), line  # protected: no --insecure
            out, err = await bad.communicate()
        assert bad.returncode == 2 and out == b"", err
        assert err.decode().strip() == f"rocketq namesrv: config 'aclFile': {tmp_path / 'nope.yml'}: no such file"
    finally:
        for proc in (good, bad):
            if proc.returncode is None:
                proc.terminate()
                await proc.wait()
    assert good.returncode == 0


def test_the_broker_account_keys() -> None:
    cfg = BrokerConfig.from_mapping({"accessKey": BROKER[0], "secretKey": BROKER[1]})
    shown = cfg.as_properties()  # GET_BROKER_CONFIG, rocketq broker -p
    assert shown["accessKey"] == BROKER[0] and shown["secretKey"] == "******"
    assert BROKER[1] not in "".join(shown.values())
    with pytest.raises(ConfigError, match="secretKey"):
        BrokerConfig.from_mapping({"accessKey": BROKER[0]})


async def test_standalone_with_a_protected_name_server(tmp_path: Path) -> None:
    """The broker of ``rocketq standalone`` registers with its protected name server when it has an account of
    that file, and is refused when it has none."""
    acl = tmp_path / "namesrv" / "acl.yml"
    acl.parent.mkdir()
    acl.write_text(ACCOUNTS)

    async def start(name: str, *keys: str) -> tuple[asyncio.subprocess.Process, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "rocketq", "--log-level", "WARNING", "standalone", "--dir", str(tmp_path / name),
            "--namesrv-port", "0", "--namesrv-acl-file", str(acl), "listenPort=0", "listenHost=127.0.0.1",
            "registerNameServerPeriod=10000", "grpcServerEnable=false", *keys,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdout is not None
        async with asyncio.timeout(60):
            line = (await proc.stdout.readline()).decode()
            await proc.stdout.readline()  # the broker's line: its registration loop has started
        return proc, "127.0.0.1:" + line.strip().rpartition(":")[2]

    signed, unsigned = await asyncio.gather(
        start("signed", f"accessKey={BROKER[0]}", f"secretKey={BROKER[1]}"), start("unsigned")
    )
    try:
        for (_, namesrv), registered in ((signed, True), (unsigned, False)):  # signed first: both have tried
            async with AdminClient(config=ClientConfig(namesrv_addr=namesrv), timeout=10.0) as admin:
                async with asyncio.timeout(30):
                    while registered and not await admin.brokers():
                        await asyncio.sleep(0.1)
                assert bool(await admin.brokers()) is registered
    finally:
        for proc, _ in (signed, unsigned):
            proc.terminate()
        errors = [(await p.communicate())[1].decode() for p, _ in (signed, unsigned)]
    assert "namesrv.refused" not in errors[0] and "register.failed" not in errors[0], errors[0]
    assert "No accessKey is configured" in errors[1] and "Traceback" not in errors[1], errors[1]
