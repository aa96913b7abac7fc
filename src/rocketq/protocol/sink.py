"""Wire contract of rocketq's exactly-once sink commit (rocketq-private request codes, not in Apache RocketMQ).

A writer that must not store a batch twice (the Spark sink's ``deliveryGuarantee=exactly-once``) works in two
steps, both answered by the broker that owns the target queues:

1. ``SINK_STAGE_MESSAGES`` (9001): a SEND_BATCH_MESSAGE-style body (``encode_batch``) whose items carry their
   real destination in ``REAL_TOPIC`` / ``REAL_QID``. The broker appends them, unchanged, to the private topic
   ``RQ_SYS_SINK_STAGING`` — invisible to consumers of the real topics — and answers the contiguous
   commit-log range it wrote: ``start``, ``end`` (exclusive) and ``count``.
2. ``SINK_COMMIT_BATCH`` (9002): header ``sinkId`` + ``batchId``, body ``{"ranges": [[start, end, count], ...]}``
   listing staged ranges. If ``batchId`` is above the sink's last committed batch the broker re-puts every
   staged message to its real topic and queue, in the listed order, and records ``batchId`` as the sink's
   watermark; otherwise the request is a replay and nothing is written. Either way the answer is SUCCESS with
   ``applied`` = ``true``/``false``, ``lastBatchId`` and ``messages`` (how many were re-put).

``SINK_QUERY_STATE`` (9003) answers ``lastBatchId`` (-1 when the sink never committed) and ``pending``.

Staged messages never listed in a successful commit (a failed task, an aborted or replayed batch) are simply
never applied; retention deletes them with the rest of the commit log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import orjson

from rocketq.errors import ProtocolError
from rocketq.protocol.topics import SINK_STAGING_TOPIC

#: rocketq-private request codes. Apache RocketMQ 4.9 uses codes below 400; 9000+ is reserved for rocketq.
SINK_STAGE_MESSAGES: Final = 9001
SINK_COMMIT_BATCH: Final = 9002
SINK_QUERY_STATE: Final = 9003

STAGING_TOPIC: Final = SINK_STAGING_TOPIC

#: Properties the broker adds to every staged record (stripped again when the record is re-put).
PROP_SINK_ID: Final = "__RQ_SINK_ID"
PROP_SINK_BATCH: Final = "__RQ_SINK_BATCH"

# extFields names.
FIELD_SINK_ID: Final = "sinkId"
FIELD_BATCH_ID: Final = "batchId"
FIELD_START: Final = "start"
FIELD_END: Final = "end"
FIELD_COUNT: Final = "count"
FIELD_APPLIED: Final = "applied"
FIELD_LAST_BATCH_ID: Final = "lastBatchId"
FIELD_MESSAGES: Final = "messages"
FIELD_PENDING: Final = "pending"

MAX_SINK_ID_LENGTH: Final = 200


@dataclass(frozen=True, slots=True)
class StagedRange:
    """Commit-log bytes ``[start, end)`` of one stage request, holding ``count`` staged records."""

    start: int
    end: int
    count: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.end <= self.start or self.count <= 0:
            raise ProtocolError(f"bad staged range [{self.start}, {self.end}) count {self.count}")


def check_sink_id(sink_id: str) -> str:
    if not sink_id or len(sink_id) > MAX_SINK_ID_LENGTH or any(c in sink_id for c in "\x01\x02\n"):
        raise ProtocolError(f"bad sink id {sink_id!r}: 1-{MAX_SINK_ID_LENGTH} characters, no control characters")
    return sink_id


def encode_commit_body(ranges: list[StagedRange]) -> bytes:
    return orjson.dumps({"ranges": [[r.start, r.end, r.count] for r in ranges]})


def decode_commit_body(body: bytes | bytearray | memoryview) -> list[StagedRange]:
    try:
        obj = orjson.loads(body)
        raw = obj["ranges"]
        return [StagedRange(int(s), int(e), int(c)) for s, e, c in raw]
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"bad sink commit body: {exc}") from exc
