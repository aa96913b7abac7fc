"""JSON request/response bodies shared by broker and client (protocol reference §3.5–3.8).

Parsers accept both dialects: Java writes enum names and numeric ``subVersion``; C++ 1.2.3 writes enum
ordinals, ``subVersion`` as a string, omits empty sets, and puts ``atoi(tag)`` in ``codeSet`` (so the
broker recomputes codes from the tags). Writers produce what Java 4.9 writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from rocketq.common.hashing import tags_hash_code
from rocketq.errors import ProtocolError
from rocketq.protocol.header_codec import INT32_MAX, INT32_MIN

CONSUME_TYPES = ("CONSUME_ACTIVELY", "CONSUME_PASSIVELY", "CONSUME_POP")
MESSAGE_MODELS = ("BROADCASTING", "CLUSTERING")
CONSUME_FROM_WHERE = (
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
)
SUB_ALL = "*"


def loads(body: bytes | bytearray | memoryview) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"body is not valid JSON: {exc}") from exc


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def dumps_ascii(obj: Any) -> bytes:
    """JSON in the key order built, non-ASCII escaped (``\\uXXXX``): how the name server writes its bodies."""
    # Plain json, not orjson: orjson cannot escape non-ASCII text.
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode()


def _enum(value: Any, names: tuple[str, ...], what: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value < len(names):
            return names[value]
        raise ProtocolError(f"{what} ordinal {value} out of range")
    if isinstance(value, str) and value in names:
        return value
    raise ProtocolError(f"bad {what}: {value!r}")


def _obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} is not a JSON object")
    return value


def _list(o: dict[str, Any], key: str) -> list[Any]:
    """The array field ``key`` of ``o``: absent, null or otherwise empty reads as no elements (as before); any
    other value that is not an array is malformed (iterating it raised TypeError, or walked a string's
    characters)."""
    value = o.get(key)
    if not value:
        return []
    if not isinstance(value, list):
        raise ProtocolError(f"{key} is not a JSON array: {value!r:.60}")
    return value


def parse_tag_expression(expr: str | None) -> tuple[list[str], list[int]]:
    """Tags and their hash codes of a TAG subscription (``*`` → empty lists)."""
    if not expr or expr.strip() == SUB_ALL:
        return [], []
    tags = [t.strip() for t in expr.split("||")]
    tags = [t for t in tags if t]
    return tags, [tags_hash_code(t) for t in tags]


@dataclass(slots=True)
class SubscriptionData:
    topic: str
    sub_string: str = SUB_ALL
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)
    sub_version: int = 0
    expression_type: str = "TAG"
    class_filter_mode: bool = False

    @classmethod
    def of(
        cls, topic: str, expression: str = SUB_ALL, expression_type: str = "TAG", sub_version: int = 0
    ) -> SubscriptionData:
        tags, codes = parse_tag_expression(expression) if expression_type == "TAG" else ([], [])
        return cls(topic, expression or SUB_ALL, tags, codes, sub_version, expression_type)

    @classmethod
    def from_json(cls, obj: Any) -> SubscriptionData:
        o = _obj(obj, "SubscriptionData")
        topic = o.get("topic")
        if not isinstance(topic, str):
            raise ProtocolError("SubscriptionData without topic")
        sub = o.get("subString") or SUB_ALL
        etype = o.get("expressionType") or "TAG"
        try:
            sub_version = int(o.get("subVersion") or 0)
        except (TypeError, ValueError):
            raise ProtocolError(f"bad subVersion {o.get('subVersion')!r}") from None
        # Rebuild tags and codes from the expression: C++ sends wrong codes.
        return cls.of(topic, str(sub), str(etype), sub_version)

    def to_json(self) -> dict[str, Any]:
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": self.code_set,
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": self.tags_set,
            "topic": self.topic,
        }


@dataclass(slots=True)
class ConsumerData:
    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscriptions: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False

    @classmethod
    def from_json(cls, obj: Any) -> ConsumerData:
        o = _obj(obj, "ConsumerData")
        group = o.get("groupName")
        if not isinstance(group, str) or not group:
            raise ProtocolError("ConsumerData without groupName")
        return cls(
            group_name=group,
            consume_type=_enum(o.get("consumeType", 1), CONSUME_TYPES, "consumeType"),
            message_model=_enum(o.get("messageModel", 1), MESSAGE_MODELS, "messageModel"),
            consume_from_where=_enum(o.get("consumeFromWhere", 0), CONSUME_FROM_WHERE, "consumeFromWhere"),
            subscriptions=[SubscriptionData.from_json(s) for s in _list(o, "subscriptionDataSet")],
            unit_mode=bool(o.get("unitMode", False)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": self.consume_from_where,
            "consumeType": self.consume_type,
            "groupName": self.group_name,
            "messageModel": self.message_model,
            "subscriptionDataSet": [s.to_json() for s in self.subscriptions],
            "unitMode": self.unit_mode,
        }


@dataclass(slots=True)
class HeartbeatData:
    client_id: str
    producer_groups: list[str] = field(default_factory=list)
    consumers: list[ConsumerData] = field(default_factory=list)

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview) -> HeartbeatData:
        o = _obj(loads(body), "HeartbeatData")
        client_id = o.get("clientID")
        if not isinstance(client_id, str) or not client_id:
            raise ProtocolError("HeartbeatData without clientID")
        producers = []
        for p in _list(o, "producerDataSet"):
            name = _obj(p, "ProducerData").get("groupName")
            if isinstance(name, str) and name:
                producers.append(name)
        consumers = [ConsumerData.from_json(c) for c in _list(o, "consumerDataSet")]
        return cls(client_id, producers, consumers)

    def encode(self) -> bytes:
        return dumps(
            {
                "clientID": self.client_id,
                "consumerDataSet": [c.to_json() for c in self.consumers],
                "producerDataSet": [{"groupName": g} for g in self.producer_groups],
            }
        )


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    topic: str
    broker_name: str
    queue_id: int

    @classmethod
    def from_json(cls, obj: Any) -> MessageQueue:
        o = _obj(obj, "MessageQueue")
        try:
            mq = cls(str(o["topic"]), str(o["brokerName"]), int(o["queueId"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"bad MessageQueue {str(obj)[:200]}") from exc
        if not INT32_MIN <= mq.queue_id <= INT32_MAX:  # Java's int: a wider one would be stored (queue locks)
            raise ProtocolError(f"MessageQueue queueId {str(o['queueId'])[:40]} is out of range for an int")
        return mq

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}


@dataclass(slots=True)
class LockBatchBody:
    """LockBatchRequestBody / UnlockBatchRequestBody."""

    consumer_group: str
    client_id: str
    mq_set: list[MessageQueue]
    only_this_broker: bool = False

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview) -> LockBatchBody:
        o = _obj(loads(body), "LockBatchRequestBody")
        return cls(
            consumer_group=str(o.get("consumerGroup") or ""),
            client_id=str(o.get("clientId") or ""),
            mq_set=[MessageQueue.from_json(m) for m in _list(o, "mqSet")],
            only_this_broker=bool(o.get("onlyThisBroker", False)),
        )

    def encode(self) -> bytes:
        return dumps(
            {
                "clientId": self.client_id,
                "consumerGroup": self.consumer_group,
                "mqSet": [m.to_json() for m in self.mq_set],
                "onlyThisBroker": self.only_this_broker,
            }
        )


def encode_lock_ok(mqs: list[MessageQueue]) -> bytes:
    return dumps({"lockOKMQSet": [m.to_json() for m in mqs]})


def decode_lock_ok(body: bytes | bytearray | memoryview) -> list[MessageQueue]:
    o = _obj(loads(body), "LockBatchResponseBody")
    return [MessageQueue.from_json(m) for m in _list(o, "lockOKMQSet")]


@dataclass(slots=True)
class DataVersion:
    timestamp: int = 0
    counter: int = 0
    #: 5.x: a controller-mode master's epoch; the name server refuses a registration older than the one it holds
    state_version: int = 0

    def to_json(self) -> dict[str, int]:
        out = {"counter": self.counter, "timestamp": self.timestamp}
        if self.state_version:  # 4.9 never sends it: keep 4.9's bytes when it is unused
            out["stateVersion"] = self.state_version
        return out

    @classmethod
    def from_json(cls, obj: Any) -> DataVersion:
        o = _obj(obj, "DataVersion")
        return cls(int(o.get("timestamp", 0)), int(o.get("counter", 0)), int(o.get("stateVersion", 0)))


PERM_INHERIT = 1
PERM_WRITE = 2
PERM_READ = 4
PERM_PRIORITY = 8


@dataclass(slots=True)
class TopicConfig:
    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PERM_READ | PERM_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, obj: Any) -> TopicConfig:
        o = _obj(obj, "TopicConfig")
        try:
            tc = cls(
                topic_name=str(o["topicName"]),
                read_queue_nums=int(o.get("readQueueNums", 16)),
                write_queue_nums=int(o.get("writeQueueNums", 16)),
                perm=int(o.get("perm", 6)),
                topic_filter_type=str(o.get("topicFilterType", "SINGLE_TAG")),
                topic_sys_flag=int(o.get("topicSysFlag", o.get("topicSynFlag", 0))),
                order=bool(o.get("order", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"bad TopicConfig {str(obj)[:200]}") from exc
        # Java's TopicConfig holds these in ints: a wider one (a broker's registration, a config file) is refused
        for key, value in (("readQueueNums", tc.read_queue_nums), ("writeQueueNums", tc.write_queue_nums),
                           ("perm", tc.perm), ("topicSysFlag", tc.topic_sys_flag)):  # fmt: skip
            if not INT32_MIN <= value <= INT32_MAX:
                raise ProtocolError(f"TopicConfig {tc.topic_name[:127]!r}: {key} {value} is out of range for an int")
        return tc


def encode_topic_config_wrapper(version: DataVersion, topics: Mapping[str, TopicConfig]) -> dict[str, Any]:
    return {
        "dataVersion": version.to_json(),
        "topicConfigTable": {name: tc.to_json() for name, tc in sorted(topics.items())},
    }


def encode_consumer_id_list(client_ids: list[str]) -> bytes:
    return dumps({"consumerIdList": client_ids})


def decode_consumer_id_list(body: bytes | bytearray | memoryview) -> list[str]:
    o = _obj(loads(body), "GetConsumerListByGroupResponseBody")
    return [str(c) for c in _list(o, "consumerIdList")]


def encode_kv_table(table: dict[str, str]) -> bytes:
    return dumps({"table": table})
