"""The POP service's requests and outcomes: what the remoting processors and the gRPC adapter both speak.

Transport-neutral: no header classes, no protobuf. Times are milliseconds since the epoch, durations ms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rocketq.protocol.message import MessageRecord

#: Java's KeyBuilder.POP_ORDER_REVIVE_QUEUE: the revive queue id an orderly pop's handles carry (no checkpoint)
ORDER_REVIVE_QID = 999
#: Java's PopMessageRequestHeader initMode values
INIT_MODE_MIN = 0
INIT_MODE_MAX = 1


def retry_topic(group: str, topic: str) -> str:
    """RocketMQ 5.1's pop retry topic (``KeyBuilder.buildPopRetryTopicV1``)."""
    return f"%RETRY%{group}_{topic}"


@dataclass(slots=True, frozen=True)
class ReceiptHandle:
    """The ``extraInfo`` of a popped message (Java's ExtraInfoUtil layout, space-separated):
    ``ckQueueOffset popTime invisibleTime reviveQid retry(0|1) brokerName queueId queueOffset``.

    ``ck_offset`` is the checkpoint's start offset (non-orderly) or the message's own offset (orderly).
    ``retry``: the message was read from the group's pop retry topic (``retry_topic``).
    """

    ck_offset: int
    pop_time: int
    invisible_ms: int
    revive_qid: int
    retry: bool
    broker_name: str
    queue_id: int
    queue_offset: int

    @property
    def orderly(self) -> bool:
        return self.revive_qid == ORDER_REVIVE_QID

    @property
    def expires_at(self) -> int:
        return self.pop_time + self.invisible_ms

    def text(self) -> str:
        return (
            f"{self.ck_offset} {self.pop_time} {self.invisible_ms} {self.revive_qid} {1 if self.retry else 0} "
            f"{self.broker_name} {self.queue_id} {self.queue_offset}"
        )

    @classmethod
    def parse(cls, text: str) -> ReceiptHandle:
        """``ValueError`` (naming the problem) for anything that is not a handle this broker could have issued."""
        parts = text.split(" ")
        if len(parts) < 8:
            raise ValueError(f"receipt handle has {len(parts)} fields, 8 expected")
        try:
            handle = cls(
                int(parts[0]), int(parts[1]), int(parts[2]), int(parts[3]), parts[4] != "0", parts[5],
                int(parts[6]), int(parts[7]),
            )  # fmt: skip
        except ValueError:
            raise ValueError("receipt handle fields are not numbers where numbers belong") from None
        if parts[4] not in ("0", "1"):
            raise ValueError(f"receipt handle retry flag {parts[4]!r} is not 0 or 1")
        return handle


@dataclass(slots=True)
class PopRequest:
    group: str
    topic: str
    #: -1: any readable queue of the topic (and the group's retry topic)
    queue_id: int = -1
    max_nums: int = 32
    invisible_ms: int = 60_000
    #: long polling: how long to wait for a message when none is ready (0: answer at once)
    poll_ms: int = 0
    init_mode: int = INIT_MODE_MAX
    #: ``TAG`` or ``SQL92``; expression ``*`` or empty: everything
    expression_type: str = "TAG"
    expression: str = "*"
    #: FIFO: a queue with an un-acked, still invisible message is not popped (except with the same attempt id)
    order: bool = False
    attempt_id: str | None = None
    #: the caller's connection or client id, for logs and in-flight views
    client: str = ""


@dataclass(slots=True)
class PoppedMessage:
    """One delivered message: the stored record (``record.topic`` is the retry topic for a retried message,
    ``origin_topic`` the topic the consumer subscribed to), its handle, its delivery count so far."""

    record: MessageRecord
    raw: bytes
    handle: ReceiptHandle
    origin_topic: str
    #: times delivered before this delivery (delivery attempt = reconsume_times + 1)
    reconsume_times: int


@dataclass(slots=True)
class PopOutcome:
    """``code``: a remoting ResponseCode (SUCCESS, POLLING_TIMEOUT when nothing came in time, POLLING_FULL,
    TOPIC_NOT_EXIST, SUBSCRIPTION_GROUP_NOT_EXIST, NO_PERMISSION, SYSTEM_ERROR with a remark)."""

    code: int
    remark: str | None = None
    messages: list[PoppedMessage] = field(default_factory=list)
    pop_time: int = 0
    invisible_ms: int = 0
    revive_qid: int = 0
    #: messages still ready after this pop (Java's restNum)
    rest_num: int = 0
    #: Java's response header strings, so a Java remoting client can rebuild each handle
    start_offset_info: str = ""
    msg_offset_info: str = ""
    order_count_info: str = ""

    @property
    def body(self) -> bytes:
        return b"".join(m.raw for m in self.messages)


@dataclass(slots=True)
class AckOutcome:
    """``code``: SUCCESS; NO_MESSAGE (offset outside the queue); MESSAGE_ILLEGAL (bad queue / handle);
    ``expired`` is set when the handle's invisible time had already ended (the ack is still recorded)."""

    code: int
    remark: str | None = None
    expired: bool = False


@dataclass(slots=True)
class ChangeOutcome:
    code: int
    remark: str | None = None
    #: the handle to use from now on (new pop time and invisible time)
    handle: ReceiptHandle | None = None


@dataclass(slots=True)
class InflightCounts:
    """A group's POP state on one topic: popped and not acked, of which still invisible."""

    topic: str
    group: str
    inflight: int
    invisible: int
    ready: int
