"""What the transport-neutral services answer: outcomes with a status and result fields, no RemotingCommand.

The status is RocketMQ's response code (``rocketq.codes.ResponseCode``), the vocabulary both front ends
share: the remoting processors write it as it is, a gRPC front end maps it to ``apache.rocketmq.v2.Code``.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.codes import ResponseCode
from rocketq.store import PutMessageStatus

_SUCCESS = int(ResponseCode.SUCCESS)

#: store put status → (response code, remark), as Java's SendMessageProcessor.handlePutMessageResult
PUT_STATUS_TO_CODE: dict[str, tuple[int, str | None]] = {
    "PUT_OK": (ResponseCode.SUCCESS, None),
    "FLUSH_DISK_TIMEOUT": (ResponseCode.FLUSH_DISK_TIMEOUT, None),
    "FLUSH_SLAVE_TIMEOUT": (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
    "SLAVE_NOT_AVAILABLE": (ResponseCode.SLAVE_NOT_AVAILABLE, None),
    "CREATE_MAPPED_FILE_FAILED": (ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."),
    # the store's (and Java's) spelling of the same status
    "CREATE_MAPEDFILE_FAILED": (ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."),
    "MESSAGE_ILLEGAL": (ResponseCode.MESSAGE_ILLEGAL, "the message is illegal, maybe msg body or properties too long"),
    "PROPERTIES_SIZE_EXCEEDED": (ResponseCode.MESSAGE_ILLEGAL, "the message properties are too long"),
    "SERVICE_NOT_AVAILABLE": (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "service not available now. It may be caused by one of the following reasons: "
        "the broker's disk is full, messages are put to the slave, permission denied",
    ),
    "OS_PAGECACHE_BUSY": (ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"),
}
# The same table keyed by the enum member: no ``.name`` descriptor call per message.
_CODE_OF_STATUS = {s: PUT_STATUS_TO_CODE[s.name] for s in PutMessageStatus if s.name in PUT_STATUS_TO_CODE}


def code_of_put_status(status: object) -> tuple[int, str | None]:
    """The response code and remark a put status is answered with."""
    found: tuple[int, str | None] | None = _CODE_OF_STATUS.get(status)  # type: ignore[call-overload]
    if found is not None:
        return found
    name = getattr(status, "name", str(status))
    return PUT_STATUS_TO_CODE.get(name, (ResponseCode.SYSTEM_ERROR, f"UNKNOWN_ERROR {name}"))


#: codes whose answer carries the message id and offsets (the message is stored)
STORED_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    }
)


@dataclass(slots=True)
class SendOutcome:
    """A send's outcome. ``msg_id`` is set when the message was stored; then ``end_offset`` is where its
    bytes end in the commit log (what the flush and replication waits wait for)."""

    code: int
    remark: str | None = None
    msg_id: str | None = None
    queue_id: int = 0
    queue_offset: int = 0
    end_offset: int = 0
    #: the message's ``WAIT`` property was not ``false``: a SYNC_FLUSH answer waits for the flush
    wait_store: bool = True
    #: a topic this send created: it is answered once the name servers know it (Java registers first)
    created_topic: str | None = None
    #: the topic the message was stored in (a DLQ for a %RETRY% send past its maximum)
    topic: str = ""

    @property
    def stored(self) -> bool:
        return self.msg_id is not None

    @property
    def ok(self) -> bool:
        return self.code == _SUCCESS


def refused(code: int, remark: str) -> SendOutcome:
    return SendOutcome(code, remark)


@dataclass(slots=True)
class PullOutcome:
    """A pull's outcome. ``body`` is the found records laid end to end (empty unless SUCCESS).

    ``suspend_seconds`` > 0: nothing to answer yet — the front end parks the request for that long
    (long polling) and runs the pull again when a message arrives or the time is up.
    """

    code: int
    remark: str | None
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    body: bytes = b""
    suspend_seconds: float = 0.0
    #: tags-code filter of a parked pull (a new message wakes it only when it matches)
    matches_code: object = None
