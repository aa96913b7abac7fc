"""Typed request/response headers, carried on the wire as ``extFields`` (str → str).

Each header is a frozen dataclass; ``wire(name)`` records the camelCase wire key in field metadata.
``to_ext`` and ``from_ext`` are the one place where values are converted in each direction:

* out: ints as decimal text, bools as ``"true"``/``"false"``, None omitted (every value a JSON string —
  C++ clients ignore non-string values);
* in: text parsed to the field type; ``"1"`` and ``"true"`` (any case) are true — C++ 1.2.3 sends ``"1"``
  for booleans, and the JSON decoder has already turned C++'s numeric values into text.

A missing required field raises ``HeaderError`` naming it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, get_type_hints

from rocketq.errors import ProtocolError

T = TypeVar("T", bound="Header")


class HeaderError(ProtocolError):
    """A header field is missing or has a value of the wrong type."""


def wire(name: str, default: Any = dataclasses.MISSING) -> Any:
    if default is dataclasses.MISSING:
        return field(metadata={"wire": name})
    return field(default=default, metadata={"wire": name})


@dataclass(frozen=True, slots=True)
class _FieldSpec:
    attr: str
    key: str
    kind: type
    optional: bool
    required: bool


class Header:
    """Base of header dataclasses: subclasses are ``@dataclass(frozen=True, slots=True, kw_only=True)``."""

    _specs: ClassVar[tuple[_FieldSpec, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)

    @classmethod
    def _field_specs(cls) -> tuple[_FieldSpec, ...]:
        cached = cls.__dict__.get("_specs_cache")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        hints = get_type_hints(cls)
        specs = []
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            hint = hints[f.name]
            optional = False
            args = typing.get_args(hint)
            if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
                non_none = [a for a in args if a is not type(None)]
                optional = len(non_none) < len(args)
                hint = non_none[0]
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            specs.append(_FieldSpec(f.name, f.metadata.get("wire", f.name), hint, optional, required))
        result = tuple(specs)
        type.__setattr__(cls, "_specs_cache", result)
        return result

    def to_ext(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for spec in self._field_specs():
            value = getattr(self, spec.attr)
            if value is None:
                continue
            if spec.kind is bool:
                out[spec.key] = "true" if value else "false"
            else:
                out[spec.key] = str(value)
        return out

    @classmethod
    def from_ext(cls: type[T], ext: dict[str, str]) -> T:
        kwargs: dict[str, Any] = {}
        for spec in cls._field_specs():
            raw = ext.get(spec.key)
            if raw is None or (raw == "" and spec.kind is not str):
                if spec.required:
                    raise HeaderError(f"the header field {spec.key!r} is missing")
                continue
            kwargs[spec.attr] = _parse(spec, raw)
        return cls(**kwargs)


def _parse(spec: _FieldSpec, raw: str) -> Any:
    if spec.kind is str:
        return raw
    if spec.kind is int:
        try:
            return int(raw)
        except ValueError:
            try:
                return int(float(raw))
            except ValueError:
                raise HeaderError(f"the header field {spec.key!r} is not an integer: {raw!r}") from None
    if spec.kind is bool:
        return raw.strip().lower() in ("true", "1")
    raise HeaderError(f"unsupported header type {spec.kind!r} for {spec.key!r}")


_KW = {"frozen": True, "slots": True, "kw_only": True}


# ------------------------------------------------------------------------------------------------ send


@dataclass(**_KW)
class SendMessageRequestHeader(Header):
    """V1 names (code 10). ``from_ext_any`` also reads the V2 single-letter keys (codes 310/320)."""

    producer_group: str = wire("producerGroup")
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic", "TBW102")
    default_topic_queue_nums: int = wire("defaultTopicQueueNums", 4)
    queue_id: int = wire("queueId", -1)
    sys_flag: int = wire("sysFlag", 0)
    born_timestamp: int = wire("bornTimestamp", 0)
    flag: int = wire("flag", 0)
    properties: str | None = wire("properties", None)
    reconsume_times: int | None = wire("reconsumeTimes", None)
    unit_mode: bool | None = wire("unitMode", None)
    batch: bool | None = wire("batch", None)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", None)


_V2_KEYS = {
    "a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums", "e": "queueId",
    "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties", "j": "reconsumeTimes",
    "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch", "n": "bname",
}  # fmt: skip
_V1_TO_V2 = {v: k for k, v in _V2_KEYS.items()}


def send_header_from_v2(ext: dict[str, str]) -> SendMessageRequestHeader:
    return SendMessageRequestHeader.from_ext({_V2_KEYS.get(k, k): v for k, v in ext.items()})


def send_header_to_v2(header: SendMessageRequestHeader) -> dict[str, str]:
    return {_V1_TO_V2[k]: v for k, v in header.to_ext().items()}


@dataclass(**_KW)
class SendMessageResponseHeader(Header):
    msg_id: str = wire("msgId")
    queue_id: int = wire("queueId")
    queue_offset: int = wire("queueOffset")
    transaction_id: str | None = wire("transactionId", None)


# ------------------------------------------------------------------------------------------------ pull


PULL_FLAG_COMMIT_OFFSET = 0x1
PULL_FLAG_SUSPEND = 0x2
PULL_FLAG_SUBSCRIPTION = 0x4
PULL_FLAG_CLASS_FILTER = 0x8
PULL_FLAG_LITE_PULL = 0x10


@dataclass(**_KW)
class PullMessageRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    queue_offset: int = wire("queueOffset")
    max_msg_nums: int = wire("maxMsgNums", 32)
    sys_flag: int = wire("sysFlag", 0)
    commit_offset: int = wire("commitOffset", 0)
    suspend_timeout_millis: int = wire("suspendTimeoutMillis", 0)
    subscription: str | None = wire("subscription", None)
    sub_version: int = wire("subVersion", 0)
    expression_type: str | None = wire("expressionType", None)


@dataclass(**_KW)
class PullMessageResponseHeader(Header):
    suggest_which_broker_id: int = wire("suggestWhichBrokerId")
    next_begin_offset: int = wire("nextBeginOffset")
    min_offset: int = wire("minOffset")
    max_offset: int = wire("maxOffset")


# ------------------------------------------------------------------------------------- offsets, queries


@dataclass(**_KW)
class QueryConsumerOffsetRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")


@dataclass(**_KW)
class UpdateConsumerOffsetRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    commit_offset: int = wire("commitOffset")


@dataclass(**_KW)
class OffsetResponseHeader(Header):
    """Response of QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP."""

    offset: int = wire("offset")


@dataclass(**_KW)
class TopicQueueRequestHeader(Header):
    """GET_MAX_OFFSET, GET_MIN_OFFSET, GET_EARLIEST_MSG_STORETIME."""

    topic: str = wire("topic")
    queue_id: int = wire("queueId")


@dataclass(**_KW)
class SearchOffsetRequestHeader(Header):
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    timestamp: int = wire("timestamp")


@dataclass(**_KW)
class EarliestMsgStoretimeResponseHeader(Header):
    timestamp: int = wire("timestamp")


@dataclass(**_KW)
class ViewMessageRequestHeader(Header):
    offset: int = wire("offset")


@dataclass(**_KW)
class QueryMessageRequestHeader(Header):
    topic: str = wire("topic")
    key: str = wire("key")
    max_num: int = wire("maxNum")
    begin_timestamp: int = wire("beginTimestamp")
    end_timestamp: int = wire("endTimestamp")


@dataclass(**_KW)
class QueryMessageResponseHeader(Header):
    index_last_update_timestamp: int = wire("indexLastUpdateTimestamp")
    index_last_update_phyoffset: int = wire("indexLastUpdatePhyoffset")


# --------------------------------------------------------------------------------------- client mgmt


@dataclass(**_KW)
class GetConsumerListByGroupRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")


@dataclass(**_KW)
class UnregisterClientRequestHeader(Header):
    client_id: str = wire("clientID")
    producer_group: str | None = wire("producerGroup", None)
    consumer_group: str | None = wire("consumerGroup", None)


@dataclass(**_KW)
class NotifyConsumerIdsChangedRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")


@dataclass(**_KW)
class ConsumerSendMsgBackRequestHeader(Header):
    offset: int = wire("offset")
    group: str = wire("group")
    delay_level: int = wire("delayLevel", 0)
    origin_msg_id: str | None = wire("originMsgId", None)
    origin_topic: str | None = wire("originTopic", None)
    unit_mode: bool = wire("unitMode", False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", None)


@dataclass(**_KW)
class EndTransactionRequestHeader(Header):
    producer_group: str = wire("producerGroup")
    tran_state_table_offset: int = wire("tranStateTableOffset")
    commit_log_offset: int = wire("commitLogOffset")
    commit_or_rollback: int = wire("commitOrRollback")
    from_transaction_check: bool = wire("fromTransactionCheck", False)
    msg_id: str = wire("msgId", "")
    transaction_id: str | None = wire("transactionId", None)


@dataclass(**_KW)
class CheckTransactionStateRequestHeader(Header):
    tran_state_table_offset: int = wire("tranStateTableOffset")
    commit_log_offset: int = wire("commitLogOffset")
    msg_id: str | None = wire("msgId", None)
    transaction_id: str | None = wire("transactionId", None)
    offset_msg_id: str | None = wire("offsetMsgId", None)


# --------------------------------------------------------------------------------------------- admin


@dataclass(**_KW)
class CreateTopicRequestHeader(Header):
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic", "TBW102")
    read_queue_nums: int = wire("readQueueNums", 16)
    write_queue_nums: int = wire("writeQueueNums", 16)
    perm: int = wire("perm", 6)
    topic_filter_type: str = wire("topicFilterType", "SINGLE_TAG")
    topic_sys_flag: int | None = wire("topicSysFlag", None)
    order: bool = wire("order", False)


@dataclass(**_KW)
class TopicRequestHeader(Header):
    """DELETE_TOPIC_IN_BROKER, GET_TOPIC_STATS_INFO, QUERY_TOPIC_CONSUME_BY_WHO."""

    topic: str = wire("topic")


@dataclass(**_KW)
class ConsumerGroupRequestHeader(Header):
    """GET_CONSUMER_CONNECTION_LIST and similar group-only requests."""

    consumer_group: str = wire("consumerGroup")


@dataclass(**_KW)
class DeleteSubscriptionGroupRequestHeader(Header):
    group_name: str = wire("groupName")


@dataclass(**_KW)
class GetConsumeStatsRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str | None = wire("topic", None)


@dataclass(**_KW)
class ResetOffsetRequestHeader(Header):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str = wire("topic")
    group: str = wire("group")
    timestamp: int = wire("timestamp")
    is_force: bool = wire("isForce", True)
