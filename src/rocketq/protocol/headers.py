"""Typed request/response headers, carried on the wire as ``extFields`` (str → str).

Each header is a frozen dataclass; ``wire(name)`` records the camelCase wire key in field metadata.
``to_ext`` and ``from_ext`` are the one place where values are converted in each direction:

* out: ints as decimal text, bools as ``"true"``/``"false"``, None omitted (every value a JSON string —
  C++ clients ignore non-string values);
* in: text parsed to the field type; ``"1"`` and ``"true"`` (any case) are true — C++ 1.2.3 sends ``"1"``
  for booleans, and the JSON decoder has already turned C++'s numeric values into text.

An integer field has its Java type's width: ``int32=True`` for Java's ``Integer``/``int``, 64 bits (``Long``)
otherwise; text outside it is refused as Java's ``parseInt``/``parseLong`` refuse it, so no value a Java broker
could not hold is ever stored (a 2^70 offset would poison every later save of its table).

A missing required field raises ``HeaderError`` naming it. Required are the fields without a default and those
declared ``not_null``: Java's ``@CFNotNull`` fields that Java leaves null when absent (a Java broker then fails
on them with SYSTEM_ERROR); their default serves only headers built in process.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, get_type_hints

from rocketq.common.native import compiled_to_run
from rocketq.errors import ProtocolError
from rocketq.protocol.topics import AUTO_CREATE_TOPIC

T = TypeVar("T", bound="Header")

#: compiled twin of the generated ``from_ext`` (None: not built, or ROCKETQ_NO_EXTENSIONS); see compile_from_ext
_headercodec = compiled_to_run("rocketq.protocol._headercodec_c")


class HeaderError(ProtocolError):
    """A header field is missing or has a value of the wrong type."""


def wire(name: str, default: Any = dataclasses.MISSING, *, not_null: bool = False, int32: bool = False) -> Any:
    """A header field read from and written to the extFields key ``name``; ``not_null``: required on the wire
    even though it has a default (see the module docstring); ``int32``: an int field Java declares ``Integer``
    (or ``int``), so 32 bits wide instead of a ``Long``'s 64."""
    metadata = {"wire": name, "not_null": not_null, "bits": 32 if int32 else 64}
    if default is dataclasses.MISSING:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True, slots=True)
class _FieldSpec:
    attr: str
    key: str
    kind: type
    optional: bool
    required: bool
    #: an int field's width in bits (32: Java's Integer, 64: Long)
    bits: int = 64


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_BOUNDS = {32: (INT32_MIN, INT32_MAX), 64: (INT64_MIN, INT64_MAX)}


class Header:
    """Base of header dataclasses: subclasses are ``@dataclass(frozen=True, slots=True, kw_only=True)``.

    ``to_ext``/``from_ext`` are generated per class on first use (straight-line code, one ``dict.get`` and one
    conversion per field, like ``dataclasses`` generates ``__init__``) and installed on the class; the generic
    loops (``generic_to_ext``/``generic_from_ext``) stay as the reference twin the tests compare them with.
    """

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
            required = (
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ) or bool(f.metadata.get("not_null"))
            specs.append(
                _FieldSpec(f.name, f.metadata.get("wire", f.name), hint, optional, required, f.metadata.get("bits", 64))
            )
        result = tuple(specs)
        type.__setattr__(cls, "_specs_cache", result)
        return result

    def to_ext(self) -> dict[str, str]:
        # First call on this class: generate, install (shadowing this method), then use.
        return _install_codecs(type(self)).to_ext(self)

    @classmethod
    def from_ext(cls: type[T], ext: dict[str, str]) -> T:
        return typing.cast(T, _install_codecs(cls).from_ext(ext))

    def generic_to_ext(self) -> dict[str, str]:
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
    def generic_from_ext(cls: type[T], ext: dict[str, str]) -> T:
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
        value = _parse_int(raw, spec.key)
        low, high = _BOUNDS[spec.bits]
        if not low <= value <= high:
            _out_of_range(raw, spec.key, spec.bits)
        return value
    if spec.kind is bool:
        return raw.strip().lower() in ("true", "1")
    raise HeaderError(f"unsupported header type {spec.kind!r} for {spec.key!r}")


def _parse_int(raw: str, key: str) -> int:
    try:
        return int(raw)
    except ValueError:  # "x", "1.5", "1e3": Java's parseInt/parseLong refuse them too
        raise HeaderError(f"the header field {key!r} is not an integer: {_shown(raw)}") from None


def _out_of_range(raw: str, key: str, bits: int) -> typing.NoReturn:
    """Refuse an integer wider than the field's Java type (Java's parseInt/parseLong: NumberFormatException)."""
    java = "Integer" if bits == 32 else "Long"
    raise HeaderError(f"the header field {key!r} is out of range for a {bits}-bit {java}: {_shown(raw)}")


def _shown(raw: object) -> str:
    """``raw`` for a remark: a client may send megabytes of digits; the remark keeps the start."""
    text = raw if isinstance(raw, str) else str(raw)
    return repr(raw) if len(text) <= 40 else f"{text[:40]!r}... ({len(text)} characters)"


def _parse_bool(raw: str) -> bool:
    return raw.strip().lower() in ("true", "1")


# ------------------------------------------------------------------------------------- generated codecs


def compile_from_ext(
    cls: type[T], keys: dict[str, str] | None = None, *, native: bool = True
) -> typing.Callable[[dict[str, str]], T]:
    """A ``from_ext`` for ``cls`` as straight-line code. ``keys`` renames wire keys (wire key → key to read);
    a renamed field falls back to its plain wire key when the renamed one is absent.

    Same rules as ``generic_from_ext``: absent (or, for non-str fields, empty) means default or HeaderError.
    With ``native`` and the compiled twin built, a slotted class is read by ``_headercodec_c.read_header`` from
    a plan of the same fields (the generated function is its pure twin and its fallback for odd input).
    """
    fields_by_name = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    # per field: its spec, the key to read first, the error when it is missing (None: optional), its default
    fields = [
        (spec, keys.get(spec.key, spec.key) if keys else spec.key,
         f"the header field {spec.key!r} is missing" if spec.required else None,
         None if spec.required else fields_by_name[spec.attr].default)
        for spec in cls._field_specs()
    ]  # fmt: skip
    ns: dict[str, Any] = {
        "cls": cls, "HeaderError": HeaderError, "_int": _parse_int, "_bool": _parse_bool, "_range": _out_of_range,
    }  # fmt: skip
    lines = ["def from_ext(ext):", "    get = ext.get"]
    args = []
    # A frozen dataclass __init__ sets each field through object.__setattr__ (~0.2 µs a field); with slots and
    # no __post_init__ the instance can be filled through the slot descriptors instead, at a quarter the cost.
    direct = "__slots__" in cls.__dict__ and not hasattr(cls, "__post_init__")
    for i, (spec, read_key, missing_error, default) in enumerate(fields):
        if spec.kind not in (str, int, bool):
            raise TypeError(f"unsupported header type {spec.kind!r}")
        var = f"a{i}"
        lines.append(f"    raw = get({read_key!r})")
        if read_key != spec.key:
            lines.append(f"    if raw is None: raw = get({spec.key!r})")
        missing = "raw is None" if spec.kind is str else "raw is None or raw == ''"
        lines.append(f"    if {missing}:")
        if missing_error is not None:
            lines.append(f"        raise HeaderError({missing_error!r})")
        else:
            ns[f"d{i}"] = default
            lines.append(f"        {var} = d{i}")
        lines.append("    else:")
        if spec.kind is int:  # int() inline; the slow path (floats, errors) in _int
            low, high = _BOUNDS[spec.bits]
            lines += ["        try:", f"            {var} = int(raw)", "        except ValueError:",
                      f"            {var} = _int(raw, {spec.key!r})",
                      f"        if not {low} <= {var} <= {high}:",
                      f"            _range(raw, {spec.key!r}, {spec.bits})"]  # fmt: skip
        elif spec.kind is bool:
            lines.append(f"        {var} = raw == 'true' or (raw != 'false' and _bool(raw))")
        else:
            lines.append(f"        {var} = raw")
        args.append(f"{spec.attr}={var}")
    if direct:
        ns["new"] = object.__new__
        lines.append("    obj = new(cls)")
        for i, (spec, *_) in enumerate(fields):
            ns[f"set{i}"] = cls.__dict__[spec.attr].__set__
            lines.append(f"    set{i}(obj, a{i})")
        lines.append("    return obj")
    else:
        lines.append(f"    return cls({', '.join(args)})")
    exec("\n".join(lines), ns)  # our own generated source, from dataclass fields
    generated: typing.Callable[[dict[str, str]], T] = ns["from_ext"]
    if not (native and direct and _headercodec is not None):
        return generated
    # The same fields as a plan for the compiled reader (see _headercodec_c.c for the entry layout).
    plan = tuple(
        (_headercodec.slot_offset(cls, spec.attr), read_key, spec.key if read_key != spec.key else None,
         _KIND_CODES[spec.kind] if spec.kind is not int or spec.bits == 64 else _KIND_INT32, default,
         missing_error, spec.key)
        for spec, read_key, missing_error, default in fields
    )  # fmt: skip
    return functools.partial(_headercodec.read_header, cls, plan, generated)


_KIND_CODES: dict[type, int] = {str: 0, int: 1, bool: 2}  # int: a 64-bit one
_KIND_INT32 = 3


def compile_to_ext(cls: type[Header], keys: dict[str, str] | None = None) -> typing.Callable[[Header], dict[str, str]]:
    """A ``to_ext`` for ``cls`` as straight-line code; ``keys`` renames the wire keys (e.g. to V2 letters)."""
    specs = cls._field_specs()
    lines = ["def to_ext(self):", "    out = {}"]
    for spec in specs:
        key = keys[spec.key] if keys else spec.key
        lines.append(f"    v = self.{spec.attr}")
        lines.append("    if v is not None:")
        if spec.kind is bool:
            lines.append(f"        out[{key!r}] = 'true' if v else 'false'")
        elif spec.kind is str:
            lines.append(f"        out[{key!r}] = v if v.__class__ is str else str(v)")
        else:
            lines.append(f"        out[{key!r}] = str(v)")
    lines.append("    return out")
    ns: dict[str, Any] = {}
    exec("\n".join(lines), ns)  # our own generated source, from dataclass fields
    return ns["to_ext"]  # type: ignore[no-any-return]


def _install_codecs(cls: type[Header]) -> type[Header]:
    if "_codecs_installed" not in cls.__dict__:
        from_ext = compile_from_ext(cls)
        type.__setattr__(cls, "from_ext", staticmethod(from_ext))
        type.__setattr__(cls, "to_ext", compile_to_ext(cls))
        type.__setattr__(cls, "_codecs_installed", True)
    return cls


_KW = {"frozen": True, "slots": True, "kw_only": True}


# ------------------------------------------------------------------------------------------------ send


@dataclass(**_KW)
class SendMessageRequestHeader(Header):
    """V1 names (code 10). ``from_ext_any`` also reads the V2 single-letter keys (codes 310/320)."""

    producer_group: str = wire("producerGroup")
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic", AUTO_CREATE_TOPIC, not_null=True)
    default_topic_queue_nums: int = wire("defaultTopicQueueNums", 4, not_null=True, int32=True)
    queue_id: int = wire("queueId", -1, not_null=True, int32=True)
    sys_flag: int = wire("sysFlag", 0, not_null=True, int32=True)
    born_timestamp: int = wire("bornTimestamp", 0, not_null=True)
    flag: int = wire("flag", 0, not_null=True, int32=True)
    properties: str | None = wire("properties", None)
    reconsume_times: int | None = wire("reconsumeTimes", None, int32=True)
    unit_mode: bool | None = wire("unitMode", None)
    batch: bool | None = wire("batch", None)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", None, int32=True)


_V2_KEYS = {
    "a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums", "e": "queueId",
    "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties", "j": "reconsumeTimes",
    "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch", "n": "bname",
}  # fmt: skip
_V1_TO_V2 = {v: k for k, v in _V2_KEYS.items()}


_from_v2: typing.Callable[[dict[str, str]], SendMessageRequestHeader] | None = None
_to_v2: typing.Callable[[Header], dict[str, str]] | None = None


def send_header_from_v2(ext: dict[str, str]) -> SendMessageRequestHeader:
    """Read the V2 single-letter keys (a V1 name is read when its letter is absent)."""
    global _from_v2
    if _from_v2 is None:
        _from_v2 = compile_from_ext(SendMessageRequestHeader, _V1_TO_V2)
    return _from_v2(ext)


def send_header_to_v2(header: SendMessageRequestHeader) -> dict[str, str]:
    global _to_v2
    if _to_v2 is None:
        _to_v2 = compile_to_ext(SendMessageRequestHeader, _V1_TO_V2)
    return _to_v2(header)


@dataclass(**_KW)
class ReplyMessageRequestHeader(Header):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326): a reply the broker hands to the requesting client."""

    producer_group: str = wire("producerGroup")
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic")
    default_topic_queue_nums: int = wire("defaultTopicQueueNums", int32=True)
    queue_id: int = wire("queueId", int32=True)
    sys_flag: int = wire("sysFlag", int32=True)
    born_timestamp: int = wire("bornTimestamp")
    flag: int = wire("flag", int32=True)
    properties: str | None = wire("properties", None)
    reconsume_times: int | None = wire("reconsumeTimes", None, int32=True)
    unit_mode: bool | None = wire("unitMode", None)
    born_host: str = wire("bornHost")
    store_host: str = wire("storeHost")
    store_timestamp: int = wire("storeTimestamp")


@dataclass(**_KW)
class SendMessageResponseHeader(Header):
    msg_id: str = wire("msgId")
    queue_id: int = wire("queueId", int32=True)
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
    queue_id: int = wire("queueId", int32=True)
    queue_offset: int = wire("queueOffset")
    max_msg_nums: int = wire("maxMsgNums", 32, not_null=True, int32=True)
    sys_flag: int = wire("sysFlag", 0, not_null=True, int32=True)
    commit_offset: int = wire("commitOffset", 0, not_null=True)
    suspend_timeout_millis: int = wire("suspendTimeoutMillis", 0, not_null=True)
    subscription: str | None = wire("subscription", None)
    sub_version: int = wire("subVersion", 0, not_null=True)
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
    queue_id: int = wire("queueId", int32=True)


@dataclass(**_KW)
class UpdateConsumerOffsetRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    commit_offset: int = wire("commitOffset")


@dataclass(**_KW)
class OffsetResponseHeader(Header):
    """Response of QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP."""

    offset: int = wire("offset")


@dataclass(**_KW)
class TopicQueueRequestHeader(Header):
    """GET_MAX_OFFSET, GET_MIN_OFFSET, GET_EARLIEST_MSG_STORETIME."""

    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)


@dataclass(**_KW)
class SearchOffsetRequestHeader(Header):
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
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
    max_num: int = wire("maxNum", int32=True)
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
    delay_level: int = wire("delayLevel", 0, not_null=True, int32=True)
    origin_msg_id: str | None = wire("originMsgId", None)
    origin_topic: str | None = wire("originTopic", None)
    unit_mode: bool = wire("unitMode", False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", None, int32=True)


@dataclass(**_KW)
class EndTransactionRequestHeader(Header):
    producer_group: str = wire("producerGroup")
    tran_state_table_offset: int = wire("tranStateTableOffset")
    commit_log_offset: int = wire("commitLogOffset")
    commit_or_rollback: int = wire("commitOrRollback", int32=True)
    from_transaction_check: bool = wire("fromTransactionCheck", False)
    msg_id: str = wire("msgId", "", not_null=True)
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
    default_topic: str = wire("defaultTopic", AUTO_CREATE_TOPIC, not_null=True)
    read_queue_nums: int = wire("readQueueNums", 16, not_null=True, int32=True)
    write_queue_nums: int = wire("writeQueueNums", 16, not_null=True, int32=True)
    perm: int = wire("perm", 6, not_null=True, int32=True)
    topic_filter_type: str = wire("topicFilterType", "SINGLE_TAG", not_null=True)
    topic_sys_flag: int | None = wire("topicSysFlag", None, int32=True)
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
    #: also forget the group's consumer offsets (mqadmin deleteSubGroup -r true); kept otherwise, as Java keeps them
    remove_offset: bool = wire("removeOffset", False)


@dataclass(**_KW)
class GetConsumeStatsRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str | None = wire("topic", None)


@dataclass(**_KW)
class ViewBrokerStatsDataRequestHeader(Header):
    """VIEW_BROKER_STATS_DATA (315): one of Java's stats tables (``TOPIC_PUT_NUMS``...) and its key."""

    stats_name: str = wire("statsName")
    stats_key: str = wire("statsKey")


@dataclass(**_KW)
class GetConsumeStatsInBrokerHeader(Header):
    """GET_BROKER_CONSUME_STATS (317)."""

    is_order: bool = wire("isOrder", False)


@dataclass(**_KW)
class QueryConsumeQueueRequestHeader(Header):
    """QUERY_CONSUME_QUEUE (321): ``count`` units of one queue from ``index``."""

    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    index: int = wire("index")
    count: int = wire("count", int32=True)
    consumer_group: str | None = wire("consumerGroup", None)


@dataclass(**_KW)
class ConsumerCallRequestHeader(Header):
    """GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309): the broker passes them on to one
    consumer; ``msg_id`` (an offset message id) only in the latter."""

    consumer_group: str = wire("consumerGroup")
    client_id: str = wire("clientId")
    msg_id: str | None = wire("msgId", None)


@dataclass(**_KW)
class ResetOffsetRequestHeader(Header):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str = wire("topic")
    group: str = wire("group")
    timestamp: int = wire("timestamp")
    is_force: bool = wire("isForce", True)


if _headercodec is not None:
    _headercodec.configure(HeaderError, _parse_int, _parse_bool, _out_of_range)
