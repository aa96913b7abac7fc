"""Fixtures for client tests over TCP: scriptable fake name server and brokers (RemotingServer on 127.0.0.1:0).

They record every request and answer from small tables, so client tests can check the exact requests a
client sends and drive failure paths (error codes, dead brokers) that a real broker rarely produces.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.bodies import dumps
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.message import make_offset_msg_id
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingDispatcher, RemotingServer

Handler = Callable[[RemotingCommand], RemotingCommand | None]


@dataclass
class FakeServer:
    name: str
    handlers: dict[int, Handler] = field(default_factory=dict)
    requests: list[RemotingCommand] = field(default_factory=list)
    server: RemotingServer | None = None

    async def start(self) -> FakeServer:
        d = RemotingDispatcher(self.name)
        d.unknown_code_reply = False
        d.request_hooks.append(self._record)
        self.server = RemotingServer(d, "127.0.0.1", 0)
        await self.server.start()
        return self

    @property
    def addr(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.port}"

    def _record(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        self.requests.append(cmd)
        handler = self.handlers.get(cmd.code)
        if handler is None:
            return cmd.response(ResponseCode.SUCCESS)
        return handler(cmd)  # None: no answer at all (the dispatcher has no processors and stays silent)

    def of_code(self, code: int) -> list[RemotingCommand]:
        return [r for r in self.requests if r.code == code]

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()


def route_body(topic_queues: list[tuple[str, int, int, int]], brokers: dict[str, dict[int, str]]) -> bytes:
    """(broker, read, write, perm) per QueueData; broker name → {id: addr}."""
    return dumps(
        {
            "brokerDatas": [
                {"brokerAddrs": {str(k): v for k, v in addrs.items()}, "brokerName": name, "cluster": "c"}
                for name, addrs in brokers.items()
            ],
            "filterServerTable": {},
            "queueDatas": [
                {"brokerName": b, "perm": p, "readQueueNums": r, "topicSysFlag": 0, "writeQueueNums": w}
                for b, r, w, p in topic_queues
            ],
        }
    )


def namesrv_with_routes(routes: dict[str, bytes]) -> FakeServer:
    def route(cmd: RemotingCommand) -> RemotingCommand:
        body = routes.get(cmd.ext_fields.get("topic", ""))
        if body is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, "No topic route info in name server for the topic")
        return cmd.response(ResponseCode.SUCCESS, body=body)

    return FakeServer("namesrv", {RequestCode.GET_ROUTEINFO_BY_TOPIC: route})


class SendRecorder:
    """Answers SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE like a broker (or with a scripted error code)."""

    def __init__(self, port: int = 10911, fail_with: int | None = None) -> None:
        self.offset = 0
        self.port = port
        self.fail_with = fail_with

    def __call__(self, cmd: RemotingCommand) -> RemotingCommand:
        if self.fail_with is not None:
            return cmd.response(self.fail_with, "scripted failure", ext_fields={"MSG_REGION": "DefaultRegion"})
        self.offset += 1
        ext: dict[str, Any] = {
            "msgId": make_offset_msg_id(("127.0.0.1", self.port), self.offset * 100),
            "queueId": cmd.ext_fields.get("e", "0"),
            "queueOffset": str(self.offset),
            "MSG_REGION": "DefaultRegion",
            "TRACE_ON": "true",
        }
        return cmd.response(ResponseCode.SUCCESS, ext_fields=ext)


@pytest.fixture
def fakes() -> SimpleNamespace:
    return SimpleNamespace(
        FakeServer=FakeServer, route_body=route_body, namesrv_with_routes=namesrv_with_routes,
        SendRecorder=SendRecorder,
    )


# ------------------------------------------------------------------------------------ embedded cluster

FAST_DELAY_LEVELS = " ".join(["1s"] * 18)  # retries come back after 1 s instead of 10 s + n


@pytest.fixture
async def cluster(tmp_path: Any, request: pytest.FixtureRequest) -> Any:
    from rocketq.testing import EmbeddedCluster

    overrides: dict[str, Any] = {"messageDelayLevel": FAST_DELAY_LEVELS}
    overrides.update(getattr(request, "param", {}) or {})
    async with EmbeddedCluster(tmp_path / "cluster", **overrides) as c:
        yield c


@pytest.fixture
def fast_config(cluster: Any) -> Any:
    """A ClientConfig factory with short intervals, so tests never wait for 20-30 s timers."""
    from rocketq.client import ClientConfig

    def make(**kw: Any) -> ClientConfig:
        values: dict[str, Any] = {
            "namesrv_addr": cluster.namesrv_addr,
            "poll_name_server_interval": 0.5,
            "heartbeat_broker_interval": 1.0,
            "persist_consumer_offset_interval": 0.5,
        }
        values.update(kw)
        return ClientConfig(**values)

    return make
