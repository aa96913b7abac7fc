"""The records POP keeps in its revive topic: checkpoints (what a pop handed out), acks, and revive marks.

A checkpoint (tag ``ck``) and an ack (tag ``ack``) have Java's JSON fields (PopCheckPoint, AckMsg: ``so`` start
offset, ``pt`` pop time, ``it`` invisible time, ``c`` group, ``t`` topic, ``q`` queue, ``d`` offsets relative to
``so``, ``ao`` acked offset, ``bn`` broker name, ``rp`` the handle's retry flag). rocketq adds one record of its
own, ``rv``: "this checkpoint has been revived" (its un-acked messages are in the retry topic or the dead-letter
queue), so a restart replaying the revive queue does not revive it twice. Java keeps that fact in its revive
offset instead; rocketq's revive offset only passes a record once every checkpoint before it is settled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

CK_TAG = "ck"
ACK_TAG = "ack"
REVIVED_TAG = "rv"
REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"


def revive_topic(cluster: str) -> str:
    return REVIVE_TOPIC_PREFIX + cluster


@dataclass(slots=True, frozen=True)
class CkKey:
    """What an ack names to find its checkpoint (Java's pairing key)."""

    group: str
    topic: str  # the topic read: the subscribed topic or the group's retry topic
    queue_id: int
    start_offset: int
    pop_time: int


@dataclass(slots=True)
class Checkpoint:
    key: CkKey
    invisible_ms: int
    #: the queue offsets handed out (absolute), each with its message's delivery count before this pop
    offsets: list[int]
    revive_qid: int
    broker_name: str
    #: the revive-queue offset this checkpoint was stored at (-1 until stored)
    revive_offset: int = -1

    @property
    def due_ms(self) -> int:
        return self.key.pop_time + self.invisible_ms

    def to_json(self) -> bytes:
        k = self.key
        return orjson.dumps({
            "so": k.start_offset, "pt": k.pop_time, "it": self.invisible_ms, "n": len(self.offsets), "q": k.queue_id,
            "t": k.topic, "c": k.group, "ro": self.revive_offset, "d": [o - k.start_offset for o in self.offsets],
            "bn": self.broker_name, "rq": self.revive_qid,
        })  # fmt: skip

    @classmethod
    def from_json(cls, raw: bytes, revive_offset: int) -> Checkpoint:
        o: dict[str, Any] = orjson.loads(raw)
        so = int(o["so"])
        key = CkKey(str(o["c"]), str(o["t"]), int(o["q"]), so, int(o["pt"]))
        return cls(key, int(o["it"]), [so + int(d) for d in o["d"]], int(o.get("rq", 0)), str(o.get("bn", "")),
                   revive_offset)  # fmt: skip


def ack_json(key: CkKey, offset: int, broker_name: str) -> bytes:
    return orjson.dumps({
        "ao": offset, "so": key.start_offset, "c": key.group, "t": key.topic, "q": key.queue_id, "pt": key.pop_time,
        "bn": broker_name,
    })  # fmt: skip


def revived_json(key: CkKey) -> bytes:
    return orjson.dumps({"so": key.start_offset, "c": key.group, "t": key.topic, "q": key.queue_id, "pt": key.pop_time})


def parse_ack(raw: bytes) -> tuple[CkKey, int]:
    """An ack (or revive mark: its offset is -1) record's key and acked offset."""
    o: dict[str, Any] = orjson.loads(raw)
    key = CkKey(str(o["c"]), str(o["t"]), int(o["q"]), int(o["so"]), int(o["pt"]))
    return key, int(o.get("ao", -1))
