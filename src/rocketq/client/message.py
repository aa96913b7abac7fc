"""Client-side message types: ``Message`` (to send), ``MessageExt`` (received), send and pull results.

Like Java's ``Message``, tags, keys, delay level and the other system attributes live in ``properties``
(the same map that travels on the wire); the attributes below are views onto it.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Final

from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.message import (
    PROP_DELAY,
    PROP_KEYS,
    PROP_MAX_OFFSET,
    PROP_MIN_OFFSET,
    PROP_ORIGIN_MESSAGE_ID,
    PROP_RETRY_TOPIC,
    PROP_TAGS,
    PROP_TIMER_DELIVER_MS,
    PROP_TRAN_MSG,
    PROP_UNIQ_KEY,
    PROP_WAIT,
    SYSFLAG_COMPRESSED,
    SYSFLAG_COMPRESSION_TYPE_MASK,
    Host,
    MessageRecord,
    make_offset_msg_id,
)

__all__ = [
    "RESERVED_PROPERTIES",
    "Message",
    "MessageExt",
    "MessageQueue",
    "PullResult",
    "PullStatus",
    "SendResult",
    "SendStatus",
    "decode_body",
]

KEY_SEPARATOR: Final = " "

# Java MessageConst.STRING_HASH_SET: names a user property may not use.
RESERVED_PROPERTIES: Final = frozenset(
    {
        "TRACE_ON", "MSG_REGION", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID",
        "TRAN_MSG", "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG",
        "CORRECTION_FLAG", "MQ2_FLAG", "RECONSUME_TIME", "UNIQ_KEY", "MAX_RECONSUME_TIMES", "CONSUME_START_TIME",
        "TRAN_PREPARED_QUEUE_OFFSET", "TRANSACTION_CHECK_TIMES", "CHECK_IMMUNITY_TIME_IN_SECONDS", "INSTANCE_ID",
        "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER", "MSG_TYPE",
        "INNER_MULTI_QUEUE_OFFSET", "INNER_MULTI_DISPATCH", "__STARTDELIVERTIME", "TIMER_DELIVER_MS",
    }
)  # fmt: skip


class Message:
    """A message to send.

    ``keys`` may be one string (space-separated keys, as on the wire) or an iterable of keys.
    ``delay_level`` (1–18) delays delivery by the broker's ``messageDelayLevel`` table;
    ``deliver_time_ms`` asks for delivery at an absolute epoch time in ms (property ``TIMER_DELIVER_MS``,
    honoured by brokers with timer support).
    """

    __slots__ = ("body", "flag", "properties", "topic", "transaction_id")

    def __init__(
        self,
        topic: str,
        body: bytes | bytearray | memoryview | str,
        *,
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        flag: int = 0,
        properties: Mapping[str, str] | None = None,
        delay_level: int = 0,
        deliver_time_ms: int | None = None,
        wait_store_msg_ok: bool = True,
    ) -> None:
        self.topic = topic
        self.body: bytes = body if body.__class__ is bytes else body.encode() if isinstance(body, str) else bytes(body)
        self.flag = flag
        self.transaction_id: str | None = None
        if not (properties or tags or keys or delay_level or deliver_time_ms is not None):  # the common case
            self.properties: dict[str, str] = {PROP_WAIT: "true" if wait_store_msg_ok else "false"}
            return
        self.properties = dict(properties) if properties else {}
        if tags:
            self.tags = tags
        if keys:
            self.keys = keys if isinstance(keys, str) else list(keys)
        if delay_level:
            self.delay_level = delay_level
        if deliver_time_ms is not None:
            self.deliver_time_ms = deliver_time_ms
        # Java's Message(topic, body) always carries WAIT.
        self.properties.setdefault(PROP_WAIT, "true" if wait_store_msg_ok else "false")

    # -- properties views ---------------------------------------------------------------------------------

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROP_TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(PROP_TAGS, value or None)

    @property
    def keys(self) -> list[str]:
        raw = self.properties.get(PROP_KEYS)
        return [k for k in raw.split(KEY_SEPARATOR) if k] if raw else []

    @keys.setter
    def keys(self, value: str | Iterable[str] | None) -> None:
        if value is None:
            self._set(PROP_KEYS, None)
        elif isinstance(value, str):
            self._set(PROP_KEYS, value or None)
        else:
            self._set(PROP_KEYS, KEY_SEPARATOR.join(value) or None)

    @property
    def delay_level(self) -> int:
        raw = self.properties.get(PROP_DELAY)
        return int(raw) if raw else 0

    @delay_level.setter
    def delay_level(self, level: int) -> None:
        self._set(PROP_DELAY, str(level) if level else None)

    @property
    def deliver_time_ms(self) -> int | None:
        raw = self.properties.get(PROP_TIMER_DELIVER_MS)
        return int(raw) if raw else None

    @deliver_time_ms.setter
    def deliver_time_ms(self, value: int | None) -> None:
        self._set(PROP_TIMER_DELIVER_MS, str(int(value)) if value is not None else None)

    @property
    def wait_store_msg_ok(self) -> bool:
        return self.properties.get(PROP_WAIT, "true") != "false"

    @wait_store_msg_ok.setter
    def wait_store_msg_ok(self, value: bool) -> None:
        self.properties[PROP_WAIT] = "true" if value else "false"

    @property
    def uniq_key(self) -> str | None:
        """The client-generated message id (``UNIQ_KEY``), set when the message is sent."""
        return self.properties.get(PROP_UNIQ_KEY)

    def put_user_property(self, name: str, value: str) -> None:
        """Set an application property; system property names are refused."""
        if name in RESERVED_PROPERTIES:
            raise ValueError(f"the property name {name!r} is reserved by the system")
        if not name or not value:
            raise ValueError("user property name and value must be non-empty")
        self.properties[name] = value

    def get_property(self, name: str) -> str | None:
        return self.properties.get(name)

    def _set(self, name: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(topic={self.topic!r}, flag={self.flag}, properties={self.properties!r}, "
            f"body={len(self.body)} bytes)"
        )


class MessageExt(Message):
    """A received (stored) message, as decoded from a pull or query response.

    ``msg_id`` is the client id (``UNIQ_KEY``) when present, else ``offset_msg_id`` (store host + commit-log
    offset). ``body`` is already decompressed.
    """

    __slots__ = (
        "body_crc",
        "born_host",
        "born_timestamp",
        "broker_name",
        "commit_log_offset",
        "prepared_transaction_offset",
        "queue_id",
        "queue_offset",
        "reconsume_times",
        "store_host",
        "store_size",
        "store_timestamp",
        "sys_flag",
    )

    def __init__(self, topic: str, body: bytes, properties: Mapping[str, str] | None = None) -> None:
        self.topic = topic
        self.body = body
        self.flag = 0
        self.properties = dict(properties) if properties else {}
        self.transaction_id = None
        self.queue_id = 0
        self.queue_offset = 0
        self.commit_log_offset = 0
        self.store_size = 0
        self.sys_flag = 0
        self.born_timestamp = 0
        self.born_host: Host = ("127.0.0.1", 0)
        self.store_timestamp = 0
        self.store_host: Host = ("127.0.0.1", 0)
        self.reconsume_times = 0
        self.prepared_transaction_offset = 0
        self.body_crc = 0
        self.broker_name = ""

    @classmethod
    def from_record(cls, rec: MessageRecord, broker_name: str = "") -> MessageExt:
        """Build from a decoded store record, inflating a compressed body (Java ``MessageDecoder.decode``)."""
        msg = cls(rec.topic, decode_body(rec.body, rec.sys_flag), rec.properties)
        msg.flag = rec.flag
        msg.queue_id = rec.queue_id
        msg.queue_offset = rec.queue_offset
        msg.commit_log_offset = rec.commit_log_offset
        msg.store_size = rec.store_size
        msg.sys_flag = rec.sys_flag
        msg.born_timestamp = rec.born_timestamp
        msg.born_host = rec.born_host
        msg.store_timestamp = rec.store_timestamp
        msg.store_host = rec.store_host
        msg.reconsume_times = rec.reconsume_times
        msg.prepared_transaction_offset = rec.prepared_transaction_offset
        msg.body_crc = rec.body_crc
        msg.broker_name = broker_name
        if msg.properties.get(PROP_TRAN_MSG, "").lower() == "true":
            msg.transaction_id = msg.properties.get(PROP_UNIQ_KEY)
        return msg

    @property
    def offset_msg_id(self) -> str:
        """The broker's id of the stored message: 32 hex chars of store host + commit-log offset."""
        return make_offset_msg_id(self.store_host, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        return self.properties.get(PROP_UNIQ_KEY) or self.offset_msg_id

    @property
    def retry_topic(self) -> str | None:
        """The original topic of a retried message (``RETRY_TOPIC``)."""
        return self.properties.get(PROP_RETRY_TOPIC)

    @property
    def origin_message_id(self) -> str | None:
        return self.properties.get(PROP_ORIGIN_MESSAGE_ID)

    @property
    def min_offset(self) -> int | None:
        raw = self.properties.get(PROP_MIN_OFFSET)
        return int(raw) if raw else None

    @property
    def max_offset(self) -> int | None:
        raw = self.properties.get(PROP_MAX_OFFSET)
        return int(raw) if raw else None

    @property
    def message_queue(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker_name, self.queue_id)

    def __repr__(self) -> str:
        return (
            f"MessageExt(topic={self.topic!r}, msg_id={self.msg_id}, queue_id={self.queue_id}, "
            f"queue_offset={self.queue_offset}, reconsume_times={self.reconsume_times}, tags={self.tags!r}, "
            f"body={len(self.body)} bytes)"
        )


# Compression type bits of the sysFlag (MessageSysFlag): 0 and 0x300 mean zlib.
_COMPRESSION_LZ4: Final = 0x100
_COMPRESSION_ZSTD: Final = 0x200


def decode_body(body: bytes, sys_flag: int) -> bytes:
    """Inflate a stored body whose sysFlag has the COMPRESSED bit (zlib; LZ4/ZSTD if their modules exist)."""
    if not sys_flag & SYSFLAG_COMPRESSED:
        return body
    kind = sys_flag & SYSFLAG_COMPRESSION_TYPE_MASK
    try:
        if kind == _COMPRESSION_LZ4:
            import lz4.frame  # type: ignore[import-not-found]

            return bytes(lz4.frame.decompress(body))
        if kind == _COMPRESSION_ZSTD:
            import zstandard  # type: ignore[import-not-found]

            return bytes(zstandard.ZstdDecompressor().decompress(body))
        return zlib.decompress(body)
    except (ImportError, zlib.error, RuntimeError, ValueError):
        # Java logs and keeps the raw bytes when inflation fails; so do we.
        return body


class SendStatus(enum.Enum):
    """Outcome of a send that reached the broker (Java ``SendStatus``)."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


#: the region a broker that names none is in (Java ``MixAll.DEFAULT_TRACE_REGION_ID`` / the broker's regionId)
DEFAULT_REGION: Final = "DefaultRegion"


@dataclass(frozen=True, slots=True)
class SendResult:
    """Result of a send.

    ``msg_id`` is the client id (``UNIQ_KEY``; comma-joined for a batch); ``offset_msg_id`` is the broker's id
    of the stored message (comma-joined for a batch); ``queue_offset`` is the (first) consume-queue offset.
    """

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str = DEFAULT_REGION
    trace_on: bool = True


def _send_result_factory() -> Callable[..., SendResult]:
    """A positional ``SendResult`` constructor that fills the slots directly.

    A frozen dataclass ``__init__`` sets every field through ``object.__setattr__``; with slots and no
    ``__post_init__`` the slot descriptors do the same at a fraction of the cost (one result per send).
    """
    new = object.__new__
    cls = SendResult
    s_status, s_msg_id, s_offset_msg_id, s_mq, s_queue_offset, s_tx, s_region, s_trace = (
        cls.__dict__[f.name].__set__ for f in fields(cls)
    )

    def make(
        status: SendStatus,
        msg_id: str,
        offset_msg_id: str,
        message_queue: MessageQueue,
        queue_offset: int,
        transaction_id: str | None,
        region_id: str,
        trace_on: bool,
    ) -> SendResult:
        obj: SendResult = new(cls)
        s_status(obj, status)
        s_msg_id(obj, msg_id)
        s_offset_msg_id(obj, offset_msg_id)
        s_mq(obj, message_queue)
        s_queue_offset(obj, queue_offset)
        s_tx(obj, transaction_id)
        s_region(obj, region_id)
        s_trace(obj, trace_on)
        return obj

    return make


#: ``SendResult(status, msg_id, offset_msg_id, message_queue, queue_offset, transaction_id, region_id, trace_on)``
#: with every argument given, positionally; the same object, built faster (the send hot path uses it).
make_send_result = _send_result_factory()


class PullStatus(enum.Enum):
    """Outcome of one pull (Java ``PullStatus``); response codes 0, 19, 20, 21."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


@dataclass(slots=True)
class PullResult:
    """A pull response: the messages that passed the client-side tag re-check, and where to pull next."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)
    suggest_which_broker_id: int = 0
