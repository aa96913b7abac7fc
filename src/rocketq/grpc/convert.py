"""gRPC ``Message`` ⇄ the broker's stored message (rocketmq-5x-grpc.md §3.4 and §3.7).

Sending: ``to_properties`` checks a message as the proxy's ``SendMessageActivity`` does (its codes, its
order) and gives the stored properties. Receiving: ``to_message`` builds the delivered ``Message`` from a
record (user properties = everything not reserved, MD5 digest in uppercase hex, ``delivery_attempt`` =
reconsume times + 1).
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass

from google.protobuf import timestamp_pb2  # type: ignore[import-untyped]  # protobuf ships no stubs

from rocketq.grpc.names import has_control_character, resource
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.grpc.status import Code, GrpcRefusal
from rocketq.protocol.message import (
    PROP_CHECK_IMMUNITY_TIME_IN_SECONDS,
    PROP_DELAY,
    PROP_KEYS,
    PROP_PGROUP,
    PROP_RECONSUME_TIME,
    PROP_SHARDING_KEY,
    PROP_TAGS,
    PROP_TIMER_DELAY_MS,
    PROP_TIMER_DELAY_SEC,
    PROP_TIMER_DELIVER_MS,
    PROP_TRAN_MSG,
    PROP_UNIQ_KEY,
    SYSFLAG_COMPRESSED,
    SYSFLAG_TX_PREPARED,
    MessageRecord,
)

PROP_TRACE_CONTEXT = "TRACE_CONTEXT"
PROP_BORN_HOST = "__BORNHOST"
PROP_BORN_TIMESTAMP = "BORN_TIMESTAMP"
PROP_DLQ_ORIGIN_TOPIC = "DLQ_ORIGIN_TOPIC"
PROP_DLQ_ORIGIN_MESSAGE_ID = "DLQ_ORIGIN_MESSAGE_ID"

#: Java 5's MessageConst.STRING_HASH_SET: a user property may not use these names
RESERVED_PROPERTIES = frozenset(
    {
        "TRACE_ON", "MSG_REGION", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID",
        "TRAN_MSG", "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG",
        "CORRECTION_FLAG", "MQ2_FLAG", "RECONSUME_TIME", "UNIQ_KEY", "MAX_RECONSUME_TIMES", "CONSUME_START_TIME",
        "POP_CK", "POP_CK_OFFSET", "1ST_POP_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "DUP_INFO", "EXTEND_UNIQ_INFO",
        "INSTANCE_ID", "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER",
        "MSG_TYPE", "INNER_MULTI_QUEUE_OFFSET", "TIMER_DELAY_MS", "TIMER_DELAY_SEC", "TIMER_DELIVER_MS",
        "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "TIMER_OUT_MS", "TIMER_DEL_UNIQKEY",
        "TIMER_DELAY_LEVEL", "__BORNHOST", "BORN_TIMESTAMP", "DLQ_ORIGIN_TOPIC", "DLQ_ORIGIN_MESSAGE_ID",
        "__CRC32#",
    }
)  # fmt: skip
#: not delivered as user properties either: they have their own fields
_NOT_USER = RESERVED_PROPERTIES | {PROP_SHARDING_KEY, PROP_TRACE_CONTEXT, "TRANSACTION_CHECK_TIMES",
                                   "CHECK_IMMUNITY_TIME_IN_SECONDS", "__transactionId__"}  # fmt: skip


@dataclass(slots=True, frozen=True)
class SendLimits:
    """The proxy's send checks (ProxyConfig names in comments)."""

    max_body_size: int = 4 * 1024 * 1024  # maxMessageSize
    max_user_properties: int = 128  # userPropertyMaxNum
    max_user_property_bytes: int = 16 * 1024  # maxUserPropertySize
    max_message_group_bytes: int = 64  # maxMessageGroupSize
    max_delay_ms: int = 24 * 3600 * 1000  # maxDelayTimeMills
    max_recovery_seconds: int = 3600  # maxTransactionRecoverySecond


@dataclass(slots=True)
class Converted:
    properties: dict[str, str]
    sys_flag: int
    born_timestamp: int
    message_group: str
    message_type: int


def _ms(ts: timestamp_pb2.Timestamp) -> int:
    return int(ts.seconds) * 1000 + int(ts.nanos) // 1_000_000


#: a ``seconds`` this large is a millisecond time (the year 5138 in seconds): Python client 5.1.2 puts the
#: user's ``delivery_timestamp`` (documented as ms) into ``seconds`` unchanged
_MS_IN_SECONDS = 10**11


def delivery_ms(ts: timestamp_pb2.Timestamp) -> int:
    """A delivery time in ms; a millisecond value sent as seconds (Python 5.1.2) is read as what it is. Java's
    proxy refuses those (ILLEGAL_DELIVERY_TIME); no real delivery time is 3000 years ahead."""
    if int(ts.seconds) >= _MS_IN_SECONDS and not ts.nanos:
        return int(ts.seconds)
    return _ms(ts)


def _timestamp(ms: int) -> timestamp_pb2.Timestamp:
    return timestamp_pb2.Timestamp(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def actual_type(msg: pb.Message) -> int:
    """The type the properties make (the proxy re-derives it for the topic-type check)."""
    sp = msg.system_properties
    if sp.message_type == pb.TRANSACTION:
        return int(pb.TRANSACTION)
    if sp.HasField("delivery_timestamp"):
        return pb.DELAY
    if sp.message_group:
        return pb.FIFO
    return pb.NORMAL


def to_properties(msg: pb.Message, producer_group: str, peer: str, limits: SendLimits, now_ms: int) -> Converted:
    """The stored properties of one gRPC message; ``GrpcRefusal`` with the proxy's code when it is refused."""
    body = msg.body
    if not body:
        raise GrpcRefusal(Code.MESSAGE_BODY_EMPTY, "message body cannot be empty")
    if limits.max_body_size > 0 and len(body) > limits.max_body_size:
        raise GrpcRefusal(Code.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {limits.max_body_size}")
    user = dict(msg.user_properties)
    if len(user) > limits.max_user_properties:
        raise GrpcRefusal(Code.MESSAGE_PROPERTIES_TOO_LARGE,
                          f"too many user properties, max is {limits.max_user_properties}")  # fmt: skip
    size = 0
    for key, value in user.items():
        if key in RESERVED_PROPERTIES:
            raise GrpcRefusal(Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {key}")
        if has_control_character(key):
            raise GrpcRefusal(Code.ILLEGAL_MESSAGE_PROPERTY_KEY, "the key of property cannot contain control character")
        if has_control_character(value):
            raise GrpcRefusal(Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                              "the value of property cannot contain control character")  # fmt: skip
        size += len(key.encode()) + len(value.encode())
    props = dict(user)
    sp = msg.system_properties
    tag = sp.tag
    if tag:
        if not tag.strip():
            raise GrpcRefusal(Code.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
        if "|" in tag:
            raise GrpcRefusal(Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
        if has_control_character(tag):
            raise GrpcRefusal(Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")
        props[PROP_TAGS] = tag
        size += len(tag.encode())
    for key in sp.keys:
        if key and not key.strip():
            raise GrpcRefusal(Code.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
        if has_control_character(key):
            raise GrpcRefusal(Code.ILLEGAL_MESSAGE_KEY, "key cannot contain control character")
        size += len(key.encode())
    if sp.keys:
        props[PROP_KEYS] = " ".join(sp.keys)
    if size > limits.max_user_property_bytes:
        raise GrpcRefusal(Code.MESSAGE_PROPERTIES_TOO_LARGE,
                          f"the total size of user property is too large, max is {limits.max_user_property_bytes}")
    if not sp.message_id.strip():
        raise GrpcRefusal(Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    props[PROP_UNIQ_KEY] = sp.message_id
    sys_flag = SYSFLAG_COMPRESSED if sp.body_encoding == pb.GZIP else 0
    if sp.message_type == pb.TRANSACTION:
        sys_flag |= SYSFLAG_TX_PREPARED
        props[PROP_TRAN_MSG] = "true"
        if sp.HasField("orphaned_transaction_recovery_duration"):
            seconds = sp.orphaned_transaction_recovery_duration.seconds
            if limits.max_recovery_seconds > 0 and seconds > limits.max_recovery_seconds:
                raise GrpcRefusal(Code.BAD_REQUEST, "the max transaction recovery time of message is too large, "
                                                    f"max is {limits.max_recovery_seconds}")  # fmt: skip
            props[PROP_CHECK_IMMUNITY_TIME_IN_SECONDS] = str(seconds)
    if sp.HasField("delivery_timestamp"):
        deliver_ms = delivery_ms(sp.delivery_timestamp)
        if limits.max_delay_ms > 0 and deliver_ms - now_ms > limits.max_delay_ms:
            raise GrpcRefusal(Code.ILLEGAL_DELIVERY_TIME,
                              f"the max delay time of message is too large, max is {limits.max_delay_ms}")
        props[PROP_TIMER_DELIVER_MS] = str(deliver_ms)
    props[PROP_RECONSUME_TIME] = str(sp.delivery_attempt)
    props[PROP_PGROUP] = producer_group
    group = sp.message_group
    if group:
        if not group.strip():
            raise GrpcRefusal(Code.ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace")
        if limits.max_message_group_bytes > 0 and len(group.encode()) >= limits.max_message_group_bytes:
            raise GrpcRefusal(Code.ILLEGAL_MESSAGE_GROUP,
                              f"message group exceed the max size {limits.max_message_group_bytes}")
        if has_control_character(group):
            raise GrpcRefusal(Code.ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character")
        props[PROP_SHARDING_KEY] = group
    if sp.trace_context:
        props[PROP_TRACE_CONTEXT] = sp.trace_context
    born_host = sp.born_host if sp.born_host.strip() else peer
    if born_host.strip():
        props[PROP_BORN_HOST] = born_host
    born_ms = _ms(sp.born_timestamp) if sp.HasField("born_timestamp") else now_ms
    if sp.HasField("born_timestamp"):
        props[PROP_BORN_TIMESTAMP] = str(born_ms)
    return Converted(props, sys_flag, born_ms, group, actual_type(msg))


def body_digest(body: bytes) -> pb.Digest:
    return pb.Digest(type=pb.MD5, checksum=hashlib.md5(body).hexdigest().upper())


def stored_type(props: dict[str, str]) -> int:
    """The delivered ``message_type`` (GrpcConverter.buildMessage)."""
    if props.get(PROP_TRAN_MSG, "").lower() == "true":
        return pb.TRANSACTION
    if any(k in props for k in (PROP_DELAY, PROP_TIMER_DELIVER_MS, PROP_TIMER_DELAY_SEC, PROP_TIMER_DELAY_MS)):
        return pb.DELAY
    if props.get(PROP_SHARDING_KEY):
        return pb.FIFO
    return pb.NORMAL


def _delivered_body(rec: MessageRecord) -> tuple[bytes, int]:
    """A compressed body is inflated and delivered IDENTITY: 4.x remoting producers compress with zlib, which
    a 5.x client told GZIP cannot read (Java's proxy passes the stored bytes on as GZIP). A body that does not
    inflate as zlib or gzip (LZ4/ZSTD of 5.x remoting producers) is passed on as stored, marked GZIP."""
    if not rec.sys_flag & SYSFLAG_COMPRESSED:
        return rec.body, int(pb.IDENTITY)
    try:
        return zlib.decompress(rec.body, 47), int(pb.IDENTITY)  # 47: zlib or gzip header, detected
    except zlib.error:
        return rec.body, int(pb.GZIP)


def _host(host: tuple[str, int]) -> str:
    return f"{host[0]}:{host[1]}"


def to_message(
    rec: MessageRecord, topic: str, *, namespace: str = "", receipt_handle: str | None = None,
    delivery_attempt: int | None = None,
) -> pb.Message:  # fmt: skip
    """The delivered message; ``topic`` is the name the consumer knows (the subscribed topic for a retry)."""
    props = rec.properties
    body, encoding = _delivered_body(rec)
    sp = pb.SystemProperties(
        keys=rec.keys,
        message_id=rec.msg_id,
        body_digest=body_digest(body),
        body_encoding=encoding,  # type: ignore[arg-type]
        message_type=stored_type(props),  # type: ignore[arg-type]
        born_timestamp=_timestamp(rec.born_timestamp),
        born_host=props.get(PROP_BORN_HOST) or _host(rec.born_host),
        store_timestamp=_timestamp(rec.store_timestamp),
        store_host=_host(rec.store_host),
        queue_id=rec.queue_id,
        queue_offset=rec.queue_offset,
        delivery_attempt=rec.reconsume_times + 1 if delivery_attempt is None else delivery_attempt,
    )
    if rec.tags is not None:
        sp.tag = rec.tags
    deliver = props.get(PROP_TIMER_DELIVER_MS, "")
    if deliver.isdigit():
        sp.delivery_timestamp.CopyFrom(_timestamp(int(deliver)))
    if props.get(PROP_SHARDING_KEY):
        sp.message_group = props[PROP_SHARDING_KEY]
    if props.get(PROP_TRACE_CONTEXT):
        sp.trace_context = props[PROP_TRACE_CONTEXT]
    if receipt_handle is not None:
        sp.receipt_handle = receipt_handle
    if props.get(PROP_DLQ_ORIGIN_TOPIC) or props.get(PROP_DLQ_ORIGIN_MESSAGE_ID):
        sp.dead_letter_queue.CopyFrom(pb.DeadLetterQueue(topic=props.get(PROP_DLQ_ORIGIN_TOPIC, ""),
                                                          message_id=props.get(PROP_DLQ_ORIGIN_MESSAGE_ID, "")))
    user = {k: v for k, v in props.items() if k not in _NOT_USER}
    return pb.Message(topic=resource(topic, namespace), user_properties=user, system_properties=sp, body=body)
