"""The state a fuzz run must not harm: made on purpose before the run, checked after it and after a restart.

The fuzzer creates topics, groups and offsets of its own with junk names and values; they are its business.
"All state" is what was made here on purpose (names starting with ``Keep``, which the fuzzer never uses), plus
the broker's ability to restart at all. The fuzzer may also legitimately change the broker's and name
server's run-time configuration (an admin request Java would apply too); ``restore_config`` puts back what
was there before, as an operator would.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import orjson

from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.broker.messaging.runtime_config import LIVE_KEYS
from rocketq.codes import RequestCode, ResponseCode
from rocketq.namesrv.config import parse_properties
from rocketq.protocol import fastjson
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.testing.wire import Wire, records

_NAMESRV_LIVE = ("orderMessageEnable", "serverChannelMaxIdleTimeSeconds", "scanNotActiveBrokerInterval",
                 "brokerChannelExpiredTime")  # fmt: skip
QUEUES = 4
MESSAGES = 3


@dataclass(slots=True)
class KeptState:
    topics: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    #: (group, topic, queue id) → committed offset
    offsets: dict[tuple[str, str, int], int] = field(default_factory=dict)
    broker_config: dict[str, str] = field(default_factory=dict)
    namesrv_config: dict[str, str] = field(default_factory=dict)


class StateKeeper:
    """Makes and checks ``KeptState`` through a name server and broker at the given addresses."""

    def __init__(self, namesrv_addr: str, broker_addr: str, state: KeptState | None = None) -> None:
        self.rc = RemotingClient()
        self.broker = Wire(self.rc, broker_addr)
        self.namesrv = Wire(self.rc, namesrv_addr)
        self.state = state if state is not None else KeptState()

    async def close(self) -> None:
        await self.rc.close()

    async def remember_config(self) -> None:
        resp = await self.broker.call(RequestCode.GET_BROKER_CONFIG)
        props = parse_properties(bytes(resp.body).decode())
        self.state.broker_config = {k: v for k, v in props.items() if k in LIVE_KEYS}
        resp = await self.namesrv.call(RequestCode.GET_NAMESRV_CONFIG)
        props = parse_properties(bytes(resp.body).decode())
        self.state.namesrv_config = {k: v for k, v in props.items() if k in _NAMESRV_LIVE}

    async def restore_config(self) -> list[str]:
        problems = []
        body = "\n".join(f"{k}={v}" for k, v in self.state.broker_config.items()).encode()
        resp = await self.broker.call(RequestCode.UPDATE_BROKER_CONFIG, body=body)
        if resp.code != ResponseCode.SUCCESS:
            problems.append(f"restoring the broker config: {resp.code} {resp.remark}")
        body = "\n".join(f"{k}={v}" for k, v in self.state.namesrv_config.items()).encode()
        resp = await self.namesrv.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=body)
        if resp.code != ResponseCode.SUCCESS:
            problems.append(f"restoring the name server config: {resp.code} {resp.remark}")
        return problems

    async def add_topic(self, topic: str) -> list[str]:
        """Create ``topic``, send to it and read it back: a normal send and a new topic work."""
        ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": QUEUES, "writeQueueNums": QUEUES,
               "perm": 6, "topicFilterType": "SINGLE_TAG", "order": "false"}  # fmt: skip
        resp = await self.broker.call(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)
        if resp.code != ResponseCode.SUCCESS:
            return [f"creating topic {topic}: {resp.code} {resp.remark}"]
        self.state.topics.append(topic)
        for i in range(MESSAGES):
            resp = await self.broker.send(topic, f"kept {i}".encode(), queue_id=0)
            if resp.code != ResponseCode.SUCCESS:
                return [f"sending to {topic}: {resp.code} {resp.remark}"]
        return []

    async def add_group(self, group: str, topic: str) -> list[str]:
        """Create ``group``, pull ``topic``'s queue 0 from the start and commit the offset it reached."""
        body = orjson.dumps(SubscriptionGroupConfig(group).to_json())
        resp = await self.broker.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
        if resp.code != ResponseCode.SUCCESS:
            return [f"creating group {group}: {resp.code} {resp.remark}"]
        self.state.groups.append(group)
        resp = await self.broker.pull(topic, 0, 0, group=group)
        got = records(resp) if resp.code == ResponseCode.SUCCESS else []
        if len(got) < MESSAGES:
            return [f"group {group} pulled {len(got)} of {topic}'s messages ({resp.code} {resp.remark})"]
        offset = got[-1].queue_offset + 1
        ext = {"consumerGroup": group, "topic": topic, "queueId": 0, "commitOffset": offset}
        resp = await self.broker.call(RequestCode.UPDATE_CONSUMER_OFFSET, ext)
        if resp.code != ResponseCode.SUCCESS:
            return [f"committing {group}'s offset: {resp.code} {resp.remark}"]
        self.state.offsets[(group, topic, 0)] = offset
        return []

    async def check(self, *, route_attempts: int = 30) -> list[str]:
        """Every kept topic, group and offset is there (and each topic has a route on the name server)."""
        problems = []
        resp = await self.broker.call(RequestCode.GET_ALL_TOPIC_CONFIG, timeout=30.0)
        topics = _table(resp, "topicConfigTable")
        problems += [f"topic {t} is gone" for t in self.state.topics if t not in topics]
        resp = await self.broker.call(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, timeout=30.0)
        groups = _table(resp, "subscriptionGroupTable")
        problems += [f"group {g} is gone" for g in self.state.groups if g not in groups]
        for (group, topic, queue_id), offset in self.state.offsets.items():
            ext = {"consumerGroup": group, "topic": topic, "queueId": queue_id}
            resp = await self.broker.call(RequestCode.QUERY_CONSUMER_OFFSET, ext)
            found = resp.ext_fields.get("offset") if resp.code == ResponseCode.SUCCESS else None
            if found != str(offset):
                problems.append(f"{group}'s offset on {topic}:{queue_id} is {found} ({resp.remark}), not {offset}")
        for topic in self.state.topics:
            for _ in range(route_attempts):  # the broker registers its topics just after it starts
                req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
                resp = await self.rc.invoke(self.namesrv.addr, req, timeout=10.0)
                if resp.code == ResponseCode.SUCCESS:
                    break
                await asyncio.sleep(1.0)
            else:
                problems.append(f"topic {topic} has no route: {resp.code} {resp.remark}")
        return problems


def _table(resp: RemotingCommand, key: str) -> dict[str, Any]:
    if resp.code != ResponseCode.SUCCESS:
        return {}
    doc = fastjson.loads(bytes(resp.body))
    table = doc.get(key) if isinstance(doc, dict) else None
    return table if isinstance(table, dict) else {}
