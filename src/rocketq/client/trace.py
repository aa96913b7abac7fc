"""Message trace in RocketMQ 4.9's format (Java ``client/trace``): records, their text encoding, the dispatcher
that batches them into trace messages, and the look-up of a message's trace.

A traced client (``enable_msg_trace=True``) hands one ``TraceContext`` per send / consumed batch / transaction end
to its ``TraceDispatcher``. The dispatcher encodes contexts as Java's ``TraceDataEncoder`` does (fields joined by
``\\x01``, each record ended by ``\\x02``) and sends them, batched, to the trace topic with every traced message id
and user key in the trace message's KEYS, so QUERY_MESSAGE by message id finds them (docs/trace.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rocketq.client.message import DEFAULT_REGION, Message, MessageExt, SendResult, SendStatus
from rocketq.protocol.message import PROP_DELAY, PROP_KEYS, PROP_MSG_REGION, PROP_TAGS, PROP_TRACE_SWITCH, PROP_TRAN_MSG
from rocketq.protocol.topics import TRACE_TOPIC

if TYPE_CHECKING:
    from rocketq.client.admin import AdminClient

__all__ = [
    "ConsumeReturnType",
    "TraceBean",
    "TraceContext",
    "TraceDispatcher",
    "TraceMsgType",
    "TraceType",
    "consume_after",
    "consume_before",
    "decode_traces",
    "encode_context",
    "end_transaction_context",
    "pub_context",
    "query_trace",
    "sub_beans",
]  # fmt: skip

log = logging.getLogger("rocketq.client.trace")

CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"
#: Java AsyncTraceDispatcher: queue size, drain window, flush size (maxMsgSize - 10000) and age
QUEUE_SIZE = 2048
DRAIN_WINDOW = 0.1
MAX_MSG_SIZE = 128000
FLUSH_BYTES = MAX_MSG_SIZE - 10000
FLUSH_AGE = 0.5
SEND_TIMEOUT = 5.0


class TraceType(enum.Enum):
    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class TraceMsgType(enum.IntEnum):
    """Java ``MessageType``; the ordinal is what is written."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


class ConsumeReturnType(enum.IntEnum):
    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


@dataclass(slots=True)
class TraceBean:
    """One traced message (Java ``TraceBean``); None fields are written as ``null`` as Java prints them."""

    topic: str | None = None
    msg_id: str | None = None
    offset_msg_id: str | None = None
    tags: str | None = None
    keys: str | None = None
    store_host: str | None = None
    body_length: int = 0
    msg_type: TraceMsgType = TraceMsgType.Normal_Msg
    retry_times: int = 0
    transaction_id: str | None = None
    transaction_state: str | None = None
    from_transaction_check: bool = False


@dataclass(slots=True)
class TraceContext:
    """One event (Java ``TraceContext``): a send, a consumed batch (before or after), a transaction end."""

    trace_type: TraceType
    group: str
    beans: list[TraceBean]
    timestamp: int = field(default_factory=lambda: int(time.time() * 1000))
    region_id: str | None = DEFAULT_REGION
    request_id: str | None = None
    cost_time: int = 0
    success: bool = True
    context_code: int = 0


def _s(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _n(value: str | None) -> str:
    return "null" if value is None else value


def encode_context(ctx: TraceContext) -> str:
    """The records of one context, as Java's ``TraceDataEncoder.encoderFromContextBean`` writes them."""
    out: list[str] = []
    if ctx.trace_type is TraceType.Pub:
        if not ctx.beans:
            return ""
        b = ctx.beans[0]  # Java encodes the first bean of a Pub context
        # one f-string, not _s over a list: this runs once per traced send
        return (f"Pub\x01{ctx.timestamp}\x01{_n(ctx.region_id)}\x01{_n(ctx.group)}\x01{_n(b.topic)}\x01"
                f"{_n(b.msg_id)}\x01{_n(b.tags)}\x01{_n(b.keys)}\x01{_n(b.store_host)}\x01{b.body_length}\x01"
                f"{ctx.cost_time}\x01{int(b.msg_type)}\x01{_n(b.offset_msg_id)}\x01"
                f"{'true' if ctx.success else 'false'}\x02")  # fmt: skip
    if ctx.trace_type is TraceType.SubBefore:
        for b in ctx.beans:
            out.append(CONTENT_SPLITOR.join(map(_s, [
                "SubBefore", ctx.timestamp, ctx.region_id, ctx.group, ctx.request_id, b.msg_id, b.retry_times, b.keys,
            ])) + FIELD_SPLITOR)  # fmt: skip
    elif ctx.trace_type is TraceType.SubAfter:
        for b in ctx.beans:
            out.append(CONTENT_SPLITOR.join(map(_s, [
                "SubAfter", ctx.request_id, b.msg_id, ctx.cost_time, ctx.success, b.keys, ctx.context_code,
                ctx.timestamp, ctx.group,
            ])) + FIELD_SPLITOR)  # fmt: skip
    else:
        for b in ctx.beans[:1]:
            out.append(CONTENT_SPLITOR.join(map(_s, [
                "EndTransaction", ctx.timestamp, ctx.region_id, ctx.group, b.topic, b.msg_id, b.tags, b.keys,
                b.store_host, int(b.msg_type), b.transaction_id, b.transaction_state, b.from_transaction_check,
            ])) + FIELD_SPLITOR)  # fmt: skip
    return "".join(out)


def trace_keys(ctx: TraceContext) -> list[str]:
    """What a context adds to the trace message's KEYS: each bean's msg id (and, for a batch, each id of it)
    and each of its user keys."""
    keys: list[str] = []
    for b in ctx.beans:
        if b.msg_id:
            keys.append(b.msg_id)
            if "," in b.msg_id:  # a batch's ids: Java keys only the joined text; each id finds the record too
                keys.extend(i for i in b.msg_id.split(",") if i)
        if b.keys and b.keys != "null":
            keys.extend(k for k in b.keys.split(" ") if k)
    return keys


def decode_traces(body: str) -> list[dict[str, str]]:
    """The records of a trace message body as field dictionaries (``type``, ``msgId``, ...), Java's field names.

    Unknown record types and records with too few fields are skipped: a trace topic may hold anything."""
    names = {
        "Pub": ["type", "timestamp", "regionId", "groupName", "topic", "msgId", "tags", "keys", "storeHost",
                "bodyLength", "costTime", "msgType", "offsetMsgId", "success", "clientHost"],
        "SubBefore": ["type", "timestamp", "regionId", "groupName", "requestId", "msgId", "retryTimes", "keys"],
        "SubAfter": ["type", "requestId", "msgId", "costTime", "success", "keys", "contextCode", "timestamp",
                     "groupName"],
        "EndTransaction": ["type", "timestamp", "regionId", "groupName", "topic", "msgId", "tags", "keys",
                           "storeHost", "msgType", "transactionId", "transactionState", "fromTransactionCheck"],
    }  # fmt: skip
    minimum = {"Pub": 13, "SubBefore": 8, "SubAfter": 6, "EndTransaction": 13}
    out: list[dict[str, str]] = []
    for record in body.split(FIELD_SPLITOR):
        parts = record.split(CONTENT_SPLITOR)
        kind = parts[0]
        if kind not in names or len(parts) < minimum[kind]:
            continue
        out.append(dict(zip(names[kind], parts, strict=False)))
    return out


async def query_trace(admin: AdminClient, msg_id: str, trace_topic: str = TRACE_TOPIC) -> list[dict[str, str]]:
    """A message's trace records (Java ``QueryMsgTraceByIdSubCommand``): trace messages keyed by ``msg_id``,
    decoded, only the records of that message, oldest first."""
    msgs = await admin.query_message_by_key(trace_topic, msg_id, max_num=64)
    records: list[dict[str, str]] = []
    seen: set[str] = set()
    for m in sorted(msgs, key=lambda m: m.store_timestamp):
        if m.msg_id in seen:  # the same trace message from two look-ups
            continue
        seen.add(m.msg_id)
        for r in decode_traces(m.body.decode("utf-8", "replace")):
            if r["msgId"] == msg_id or msg_id in r["msgId"].split(","):  # a batch's Pub lists all its ids
                r["traceMsgStoreTime"] = str(m.store_timestamp)
                records.append(r)
    return records


def pub_context(
    group: str, msg: Message, result: SendResult, store_host: str, begin_ms: int, *, success: bool | None = None
) -> TraceContext | None:
    """The Pub context of an answered send (Java ``SendMessageTraceHookImpl``); None when the broker's answer
    turns trace off (no region, or ``TRACE_ON`` = false)."""
    if not result.region_id or not result.trace_on:
        return None
    props = msg.properties
    if props.get(PROP_TRAN_MSG, "").lower() == "true":
        msg_type = TraceMsgType.Trans_Msg_Half
    elif props.get(PROP_DELAY) and props.get(PROP_DELAY) != "0":
        msg_type = TraceMsgType.Delay_Msg
    else:
        msg_type = TraceMsgType.Normal_Msg
    bean = TraceBean(
        topic=msg.topic, msg_id=result.msg_id, offset_msg_id=result.offset_msg_id, tags=props.get(PROP_TAGS),
        keys=props.get(PROP_KEYS), store_host=store_host, body_length=len(msg.body), msg_type=msg_type,
    )  # fmt: skip
    now = int(time.time() * 1000)
    ok = result.status is SendStatus.SEND_OK if success is None else success
    return TraceContext(TraceType.Pub, group, [bean], begin_ms, result.region_id, cost_time=now - begin_ms, success=ok)


def sub_beans(msgs: Sequence[MessageExt]) -> list[TraceBean]:
    """One bean per consumed message whose broker did not turn trace off (``TRACE_ON`` property = false)."""
    return [
        TraceBean(topic=m.topic, msg_id=m.msg_id, tags=m.properties.get(PROP_TAGS), keys=m.properties.get(PROP_KEYS),
                  store_host=f"{m.store_host[0]}:{m.store_host[1]}", body_length=len(m.body),
                  retry_times=m.reconsume_times)
        for m in msgs
        if m.properties.get(PROP_TRACE_SWITCH) != "false"
    ]  # fmt: skip


def consume_before(trace: TraceDispatcher, group: str, msgs: Sequence[MessageExt]) -> TraceContext | None:
    """Java ``ConsumeMessageTraceHookImpl.consumeMessageBefore``: a SubBefore record per message, queued; the
    context is what ``consume_after`` needs (None: nothing traced)."""
    traced = [m for m in msgs if m.topic != trace.trace_topic]
    beans = sub_beans(traced)
    if not beans:
        return None
    region = None  # consumer traces take the region from the messages (usually absent: Java writes null too)
    for m in traced:
        region = m.properties.get(PROP_MSG_REGION, region)
    ctx = TraceContext(TraceType.SubBefore, group, beans, region_id=region, request_id=uuid.uuid4().hex.upper())
    trace.append(ctx)
    return ctx


def consume_after(trace: TraceDispatcher, before: TraceContext, success: bool, code: ConsumeReturnType) -> None:
    """Java ``consumeMessageAfter``: the SubAfter records of the same messages; cost shared out over the batch."""
    now = int(time.time() * 1000)
    cost = (now - before.timestamp) // len(before.beans)
    trace.append(TraceContext(TraceType.SubAfter, before.group, before.beans, now, before.region_id,
                              before.request_id, cost, success, int(code)))  # fmt: skip


def end_transaction_context(
    group: str, msg: Message, msg_id: str | None, store_host: str, state: str, transaction_id: str | None,
    from_check: bool,
) -> TraceContext:  # fmt: skip
    """Java ``EndTransactionTraceHookImpl``: one EndTransaction record (region from the message, or the default)."""
    props = msg.properties
    bean = TraceBean(topic=msg.topic, msg_id=msg_id, tags=props.get(PROP_TAGS), keys=props.get(PROP_KEYS),
                     store_host=store_host, msg_type=TraceMsgType.Trans_msg_Commit, transaction_id=transaction_id,
                     transaction_state=state, from_transaction_check=from_check)  # fmt: skip
    return TraceContext(TraceType.EndTransaction, group, [bean], region_id=props.get(PROP_MSG_REGION) or DEFAULT_REGION)


class TraceSender(Protocol):
    """What the dispatcher needs of its inner producer (a ``Producer``; passed in, as the producer module
    imports this one)."""

    async def start(self) -> None: ...

    async def shutdown(self) -> None: ...

    def send_async(self, msg: Message, *, on_exception: Callable[[BaseException], None] | None = None) -> Any: ...


def inner_producer_group(group: str, kind: str) -> str:
    """Java's name for the trace producer of a client of ``group`` (``kind`` PRODUCE or CONSUME)."""
    return f"_INNER_TRACE_PRODUCER-{group}-{kind}"


class TraceDispatcher:
    """Java ``AsyncTraceDispatcher``: a bounded queue of contexts, one worker encoding them and sending a trace
    message per topic when the text reaches ``FLUSH_BYTES`` or its oldest record is ``FLUSH_AGE`` old.

    ``producer`` sends the trace messages (``rocketq.client.producer.trace_producer`` makes it)."""

    def __init__(self, group: str, producer: TraceSender, trace_topic: str | None = None) -> None:
        self.group = group
        self.trace_topic = trace_topic or TRACE_TOPIC
        self.dropped = 0  # contexts lost to a full queue (Java counts and drops them too)
        self._inner = producer
        self._queue: asyncio.Queue[TraceContext] = asyncio.Queue(QUEUE_SIZE)
        self._producer: TraceSender | None = None
        self._worker: asyncio.Task[None] | None = None
        self._pending: list[str] = []
        self._pending_keys: list[str] = []
        self._pending_size = 0
        self._pending_since = 0.0
        self._stopping = False

    async def start(self) -> None:
        await self._inner.start()
        self._producer = self._inner
        self._worker = asyncio.get_running_loop().create_task(self._run(), name=f"trace-{self.group}")

    def append(self, ctx: TraceContext) -> None:
        """Queue a context; never blocks the caller (a full queue drops it)."""
        try:
            self._queue.put_nowait(ctx)
        except asyncio.QueueFull:
            self.dropped += 1

    async def shutdown(self) -> None:
        """Send what is queued and pending, then stop the inner producer."""
        self._stopping = True
        if self._worker is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker  # ends within one drain window
            self._worker = None
        while not self._queue.empty():
            self._add(self._queue.get_nowait())
        self._flush()
        if self._producer is not None:
            await self._producer.shutdown()
            self._producer = None

    async def _run(self) -> None:
        # A stop flag, not only cancel(): 3.11's wait_for can swallow a cancellation that meets its timeout.
        while not self._stopping:
            ctx: TraceContext | None = None
            try:
                async with asyncio.timeout(DRAIN_WINDOW):
                    ctx = await self._queue.get()
            except TimeoutError:
                pass
            if ctx is not None:
                self._add(ctx)
                while not self._queue.empty():
                    self._add(self._queue.get_nowait())
            if self._pending and time.monotonic() - self._pending_since >= FLUSH_AGE:
                self._flush()

    def _add(self, ctx: TraceContext) -> None:
        text = encode_context(ctx)
        if not text:
            return
        if not self._pending:
            self._pending_since = time.monotonic()
        self._pending.append(text)
        self._pending_keys.extend(trace_keys(ctx))
        self._pending_size += len(text.encode())
        if self._pending_size >= FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self._pending or self._producer is None:
            return
        body = "".join(self._pending).encode()
        keys = list(dict.fromkeys(self._pending_keys))  # a set, in first-seen order
        self._pending, self._pending_keys, self._pending_size = [], [], 0
        msg = Message(self.trace_topic, body, keys=keys)
        self._producer.send_async(msg, on_exception=self._failed)

    def _failed(self, exc: BaseException) -> None:
        log.warning("trace.send_failed topic=%s error=%s", self.trace_topic, exc)
