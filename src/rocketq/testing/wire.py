"""A raw-protocol client for tests: builds requests the way the reference says C++/Java clients do."""

from __future__ import annotations

import time
from typing import Any

from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.message import MessageRecord, encode_properties, iter_records
from rocketq.protocol.topics import AUTO_CREATE_TOPIC
from rocketq.remoting.client import RemotingClient


class Wire:
    """Helpers that build requests exactly as the reference describes (string extFields unless noted)."""

    def __init__(self, rc: RemotingClient, addr: str) -> None:
        self.rc = rc
        self.addr = addr

    async def call(
        self, code: int, ext: dict[str, Any] | None = None, body: bytes = b"", timeout: float = 5.0
    ) -> RemotingCommand:
        fields = {k: str(v) for k, v in (ext or {}).items()}
        return await self.rc.invoke(self.addr, RemotingCommand.request(code, fields, body), timeout=timeout)

    async def send(
        self,
        topic: str,
        body: bytes,
        *,
        queue_id: int = 0,
        props: dict[str, str] | None = None,
        v2: bool = True,
        group: str = "pg",
        code: int | None = None,
    ) -> RemotingCommand:
        """SEND_MESSAGE_V2 (``v2``) or SEND_MESSAGE; ``code`` sends the same header under another send code
        (SEND_REPLY_MESSAGE_V2 with ``v2``, SEND_REPLY_MESSAGE without)."""
        p = {"UNIQ_KEY": f"U{time.monotonic_ns():030d}"[:32], "WAIT": "true", **(props or {})}
        ext = {
            "producerGroup": group,
            "topic": topic,
            "defaultTopic": AUTO_CREATE_TOPIC,
            "defaultTopicQueueNums": "4",
            "queueId": str(queue_id),
            "sysFlag": "0",
            "bornTimestamp": str(int(time.time() * 1000)),
            "flag": "0",
            "properties": encode_properties(p),
            "reconsumeTimes": "0",
            "unitMode": "false",
        }
        if v2:
            keys = dict(zip(
                ["producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
                 "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode"],
                "abcdefghijk", strict=True,
            ))  # fmt: skip
            return await self.call(code or 310, {keys[k]: v for k, v in ext.items()}, body)
        return await self.call(code or 10, ext, body)

    async def pop(
        self, topic: str, group: str, *, queue_id: int = -1, max_nums: int = 32, invisible_ms: int = 60_000,
        poll_ms: int = 0, order: bool = False, attempt_id: str | None = None, timeout: float = 10.0,
    ) -> RemotingCommand:  # fmt: skip
        """POP_MESSAGE (Java 5.x's header), tag expression ``*``, init mode MAX."""
        ext = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "maxMsgNums": max_nums,
               "invisibleTime": invisible_ms, "pollTime": poll_ms, "bornTime": int(time.time() * 1000),
               "initMode": 1, "expType": "TAG", "exp": "*", "order": "true" if order else "false"}  # fmt: skip
        if attempt_id is not None:
            ext["attemptId"] = attempt_id
        return await self.call(200050, ext, timeout=timeout)

    async def ack(self, topic: str, group: str, queue_id: int, extra_info: str, offset: int) -> RemotingCommand:
        ext = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "extraInfo": extra_info, "offset": offset}
        return await self.call(200051, ext)

    async def pull(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        group: str = "cg",
        max_nums: int = 32,
        sys_flag: int = 4,
        subscription: str = "*",
        suspend_ms: int = 0,
        timeout: float = 5.0,
    ) -> RemotingCommand:
        ext = {
            "consumerGroup": group,
            "topic": topic,
            "queueId": str(queue_id),
            "queueOffset": str(offset),
            "maxMsgNums": str(max_nums),
            "sysFlag": str(sys_flag),
            "commitOffset": "0",
            "suspendTimeoutMillis": str(suspend_ms),
            "subscription": subscription,
            "subVersion": "0",
        }
        cmd = RemotingCommand.request(11, ext)
        return await self.rc.invoke(self.addr, cmd, timeout=timeout)


def pop_handles(resp: RemotingCommand, broker_name: str = "broker-a") -> list[tuple[MessageRecord, str]]:
    """The messages of a POP_MESSAGE answer with each one's extraInfo, rebuilt from ``startOffsetInfo`` as Java
    5.x's remoting client does for a non-orderly pop (the broker name comes from the route)."""
    ext = resp.ext_fields or {}
    starts = {}
    for part in (ext.get("startOffsetInfo") or "").split(";"):
        if part:
            retry, qid, start = part.split(" ")
            starts[(retry, int(qid))] = int(start)
    out = []
    for rec in records(resp):
        retry = "1" if rec.topic.startswith("%RETRY%") else "0"
        head = f"{starts[(retry, rec.queue_id)]} {ext['popTime']} {ext['invisibleTime']} {ext['reviveQid']} {retry}"
        out.append((rec, f"{head} {broker_name} {rec.queue_id} {rec.queue_offset}"))
    return out


def records(resp: RemotingCommand) -> list[MessageRecord]:
    """The messages in a pull/query/view response body."""
    return list(iter_records(resp.body))
