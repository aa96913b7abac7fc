"""REGISTER_BROKER as the broker writes it (typed header and body) and what it keeps from the answer."""

from __future__ import annotations

import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.broker.managers.topic_manager import TopicConfigManager
from rocketq.broker.role import BrokerRole, BrokerRoleState
from rocketq.broker.services.registration import NamesrvRegistration
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import RemotingConnectError
from rocketq.protocol.bodies import TopicConfig, dumps
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.namesrv_headers import RegisterBrokerRequestHeader
from rocketq.protocol.route import RegisterBrokerBody, RegisterBrokerResult


class FakeRemoting:
    """Records requests and answers each with the next of ``answers`` (a response's code and ext fields)."""

    def __init__(self, *answers: tuple[int, dict[str, str]] | Exception) -> None:
        self.sent: list[tuple[str, RemotingCommand]] = []
        self.answers = list(answers)

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.sent.append((addr, cmd))
        answer = self.answers.pop(0) if self.answers else (ResponseCode.SUCCESS, {})
        if isinstance(answer, Exception):
            raise answer
        code, ext = answer
        return cmd.response(code, ext_fields=ext)


def make_registration(tmp_path: Path, remoting: FakeRemoting, **config: str) -> NamesrvRegistration:
    cfg = BrokerConfig.from_mapping(
        {"brokerName": "broker-a", "brokerIP1": "10.0.0.1", "listenPort": "10911", "namesrvAddr": "ns1:9876",
         "storePathRootDir": str(tmp_path), **config}
    )  # fmt: skip
    topics = TopicConfigManager(tmp_path, cluster_name=cfg.brokerClusterName, broker_name=cfg.brokerName)
    topics.update(TopicConfig("T1", 4, 4, 6))
    topics.update(TopicConfig("%RETRY%g", 1, 1, 6, order=True, topic_sys_flag=2))
    role = BrokerRoleState(BrokerRole.ASYNC_MASTER, broker_id=cfg.brokerId)
    ctx: Any = SimpleNamespace(config=cfg, topics=topics, role=role)
    return NamesrvRegistration(ctx, remoting)  # type: ignore[arg-type]


def legacy_request(reg: NamesrvRegistration) -> tuple[dict[str, str], bytes]:
    """The request as broker/registration.py built it by hand before it used the typed header and body."""
    cfg = reg.broker.config
    wrapper = reg.broker.topics.wrapper_json()
    if cfg.brokerPermission != 6:
        for tc in wrapper["topicConfigTable"].values():
            tc["perm"] &= cfg.brokerPermission
    body = dumps({"filterServerList": [], "topicConfigSerializeWrapper": wrapper})
    ext = {
        "brokerName": cfg.brokerName,
        "brokerAddr": cfg.broker_addr,
        "clusterName": cfg.brokerClusterName,
        "haServerAddr": f"{cfg.brokerIP2 or cfg.brokerIP1}:{cfg.ha_port}",
        "brokerId": str(cfg.brokerId),
        "compressed": "false",
        "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF),
    }
    return ext, body


@pytest.mark.parametrize("permission", ["6", "4", "2"])
async def test_request_is_what_the_hand_built_one_was(tmp_path: Path, permission: str) -> None:
    remoting = FakeRemoting()
    reg = make_registration(tmp_path, remoting, brokerPermission=permission, brokerIP2="10.0.0.2")
    await reg.register_all()
    (addr, cmd), = remoting.sent
    ext, body = legacy_request(reg)
    assert addr == "ns1:9876" and cmd.code == RequestCode.REGISTER_BROKER and cmd.language == "JAVA"
    assert list(cmd.ext_fields.items()) == list(ext.items())
    assert bytes(cmd.body) == body
    # and the name server's reader sees the broker's topics (perms lowered to the broker's)
    header = RegisterBrokerRequestHeader.from_ext(cmd.ext_fields)
    assert header.ha_server_addr == "10.0.0.2:10912" and not header.compressed
    decoded = RegisterBrokerBody.decode(cmd.body, header.compressed)
    table = decoded.topic_config_wrapper.topic_config_table
    assert table["T1"].perm == 6 & int(permission)
    assert table["%RETRY%g"] == TopicConfig("%RETRY%g", 1, 1, 6 & int(permission), order=True, topic_sys_flag=2)
    assert decoded.topic_config_wrapper.data_version == reg.broker.topics.data_version
    assert reg.broker.topics.get("T1").perm == 6  # the broker's own table is untouched


async def test_unregister_header(tmp_path: Path) -> None:
    remoting = FakeRemoting()
    reg = make_registration(tmp_path, remoting, brokerId="1")
    await reg.unregister_all()
    (_, cmd), = remoting.sent
    assert cmd.code == RequestCode.UNREGISTER_BROKER and not cmd.body
    assert list(cmd.ext_fields.items()) == [
        ("brokerName", "broker-a"), ("brokerAddr", "10.0.0.1:10911"), ("clusterName", "DefaultCluster"),
        ("brokerId", "1"),
    ]  # fmt: skip


async def test_answer_is_kept_and_reported(tmp_path: Path) -> None:
    remoting = FakeRemoting(
        (ResponseCode.SUCCESS, {"masterAddr": "10.0.0.9:10911", "haServerAddr": "10.0.0.9:10912"}),
        (ResponseCode.SUCCESS, {}),
    )
    reg = make_registration(tmp_path, remoting, brokerId="1", brokerRole="SLAVE")
    seen: list[RegisterBrokerResult] = []
    reg.on_result = seen.append
    await reg.register_all()
    assert reg.registered_once.is_set()
    assert reg.last_result == RegisterBrokerResult(master_addr="10.0.0.9:10911", ha_server_addr="10.0.0.9:10912")
    await reg.register_all()  # the master went away: the answer says so
    assert reg.last_result == RegisterBrokerResult()
    assert seen == [RegisterBrokerResult("10.0.0.9:10911", "10.0.0.9:10912"), RegisterBrokerResult()]


async def test_failures_leave_the_last_result(tmp_path: Path) -> None:
    remoting = FakeRemoting(
        (ResponseCode.SUCCESS, {"masterAddr": "m:1"}),
        (ResponseCode.SYSTEM_ERROR, {}),
        RemotingConnectError("down"),
    )
    reg = make_registration(tmp_path, remoting)
    await reg.register_all()
    await reg.register_all()
    await reg.register_all()
    assert reg.last_result == RegisterBrokerResult(master_addr="m:1")


async def test_a_failing_listener_does_not_stop_registration(tmp_path: Path) -> None:
    reg = make_registration(tmp_path, FakeRemoting())

    def broken(result: RegisterBrokerResult) -> None:
        raise RuntimeError("listener bug")

    reg.on_result = broken
    await reg.register_all()
    assert reg.last_result == RegisterBrokerResult() and reg.registered_once.is_set()
