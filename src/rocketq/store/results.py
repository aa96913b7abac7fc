"""Statuses and results the store returns (RocketMQ's PutMessageStatus, GetMessageStatus and friends).

Statuses are values, never exceptions; the broker maps them to response codes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from rocketq.store.mapped_file import SelectMappedBufferResult

# store host bytes -> their upper-case hex: the fixed half of every offset message id
_HOST_HEX: dict[bytes, str] = {}


def _host_hex(host: bytes) -> str:
    prefix = _HOST_HEX.get(host)
    if prefix is None:
        if len(_HOST_HEX) >= 1024:
            _HOST_HEX.clear()
        prefix = _HOST_HEX[host] = host.hex().upper()
    return prefix


#: Flush/replication completion callback: True when done, False on timeout. Called from a store thread.
FlushCallback = Callable[[bool], None]


class PutMessageStatus(Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    #: store shut down, not writable, or the disk is full (``MessageStore.is_disk_full`` tells which)
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetMessageStatus(Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(slots=True)
class AppendResult:
    """Where a message (or batch) went. ``msg_id`` is the offset message id (comma-joined for a batch)."""

    wrote_offset: int
    wrote_bytes: int
    store_timestamp: int
    logics_offset: int
    msg_num: int = 1
    store_host_bytes: bytes = b""
    #: physical offset of each message of a batch (None for a single message)
    record_offsets: tuple[int, ...] | None = None
    #: the batch's comma-joined offset message ids, when the encoder made them already
    msg_ids: str | None = None

    @property
    def end_offset(self) -> int:
        """Commit-log offset just past this append: what a flush or a replica must reach."""
        return self.wrote_offset + self.wrote_bytes

    @property
    def msg_id(self) -> str:
        if self.msg_ids is not None:
            return self.msg_ids
        prefix = _host_hex(self.store_host_bytes)
        if self.record_offsets is None:
            return f"{prefix}{self.wrote_offset:016X}"
        return ",".join([f"{prefix}{off:016X}" for off in self.record_offsets])


@dataclass(slots=True)
class PutMessageResult:
    status: PutMessageStatus
    append_result: AppendResult | None = None

    @property
    def is_ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK


class MessageFilter(Protocol):
    """Server-side filter passed to ``get_message`` (the broker implements it for TAG and SQL92)."""

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        """Cheap check on the consume-queue entry's tags code."""
        ...

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        """Check on the whole stored record (SQL92 filters decode properties from it; TAG filters return True)."""
        ...


@dataclass(slots=True)
class GetMessageResult:
    """Result of ``get_message``. Buffers are views of the mapped commit log: call ``release()`` when sent."""

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    buffers: list[SelectMappedBufferResult] = field(default_factory=list)
    #: queue offset of each returned message
    queue_offsets: list[int] = field(default_factory=list)
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False

    @property
    def message_count(self) -> int:
        return len(self.buffers)

    @property
    def message_views(self) -> list[memoryview]:
        return [b.view for b in self.buffers]

    def to_bytes(self) -> bytes:
        """The pull-response body: the records laid end to end (a copy)."""
        return b"".join(b.view for b in self.buffers)

    def add(self, buf: SelectMappedBufferResult, queue_offset: int) -> None:
        self.buffers.append(buf)
        self.queue_offsets.append(queue_offset)
        self.buffer_total_size += buf.size

    def release(self) -> None:
        for b in self.buffers:
            b.release()

    def __enter__(self) -> GetMessageResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
