"""Per-sink commit watermarks of the exactly-once sink, persisted to ``config/sinkWatermark.json``.

For each sink id the broker keeps the last batch id it applied and, while a commit is being applied, the
commit's intent (batch id, staged ranges, and the commit-log offset the re-puts start after). The intent is
written (fsync'd) before the first re-put and cleared together with the new watermark after the last one,
so a broker that stops half-way finishes the batch when it starts again (``SinkCommitProcessor.recover``)
instead of applying it twice or half.

The file is this broker's own; a slave's copy knows nothing of its master's commits. So every intent and
every completed commit is also written to the commit log (``RQ_SYS_SINK_COMMIT`` markers, replicated with
the rest), and a broker that becomes master folds the markers it holds beyond ``scannedTo`` (a commit-log
offset) into the table before it answers any sink request. File layout::

    {"scannedTo": 4096,
     "sinks": {"<sinkId>": {"lastBatchId": 7, "updated": 1700000000000,
                            "pending": {"batchId": 8, "scanFrom": 123456, "ranges": [[s, e, n], ...]}}}}
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketq.broker.managers.entries import INT64, BadEntry, fields_error, prune_map, show
from rocketq.broker.managers.persist import ConfigManager
from rocketq.errors import ProtocolError
from rocketq.protocol.sink import StagedRange

NO_BATCH = -1


SINK_FIELDS = {"lastBatchId": INT64, "updated": INT64}
PENDING_FIELDS = {"batchId": INT64, "scanFrom": INT64}


def sink_entry_error(sink_id: str, raw: object) -> str | None:
    """Why a sink's entry cannot be written or read back (None: it can)."""
    error = fields_error(raw, SINK_FIELDS)
    if error is not None or not isinstance(raw, dict) or raw.get("pending") is None:
        return error
    pending = raw["pending"]
    error = fields_error(pending, PENDING_FIELDS, required=("batchId", "scanFrom", "ranges"))
    if error is not None:
        return f"pending {error}"
    ranges = pending["ranges"]
    if not isinstance(ranges, list):
        return f"pending ranges is {show(ranges)}, not an array"
    for r in ranges:
        if not isinstance(r, list) or len(r) != 3 or any(INT64(n) is not None for n in r):
            return f"pending range {show(r)} is not three longs"
    return None


@dataclass(slots=True)
class PendingCommit:
    batch_id: int
    scan_from: int
    ranges: list[StagedRange]

    def to_json(self) -> dict[str, Any]:
        return {
            "batchId": self.batch_id,
            "scanFrom": self.scan_from,
            "ranges": [[r.start, r.end, r.count] for r in self.ranges],
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> PendingCommit:
        return cls(int(obj["batchId"]), int(obj["scanFrom"]), [StagedRange(*map(int, r)) for r in obj["ranges"]])


@dataclass(slots=True)
class SinkState:
    last_batch_id: int = NO_BATCH
    updated: int = 0
    pending: PendingCommit | None = field(default=None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"lastBatchId": self.last_batch_id, "updated": self.updated}
        if self.pending is not None:
            out["pending"] = self.pending.to_json()
        return out


class SinkWatermarkManager(ConfigManager):
    """The watermark table plus its persistence; every change is written before it is acted upon.

    Written synchronously (no writer): ``begin`` is a write-ahead intent that must be durable first, so an
    intent that could not be written is refused before it is recorded (``ProtocolError``)."""

    def __init__(self, config_dir: Path) -> None:
        super().__init__(config_dir / "sinkWatermark.json")
        self.table: dict[str, SinkState] = {}
        #: commit-log offset up to which the replicated commit markers have been folded into the table
        self.scanned_to = 0

    def decode(self, obj: dict[str, Any]) -> None:
        scanned = obj.get("scannedTo", 0)
        self.scanned_to = scanned if isinstance(scanned, int) and scanned >= 0 else 0
        for sink_id, raw in (obj.get("sinks") or {}).items():
            pending = raw.get("pending")
            self.table[sink_id] = SinkState(
                int(raw.get("lastBatchId", NO_BATCH)),
                int(raw.get("updated", 0)),
                PendingCommit.from_json(pending) if pending else None,
            )

    def snapshot(self) -> Callable[[], Any]:
        doc = {"scannedTo": self.scanned_to, "sinks": {k: v.to_json() for k, v in sorted(self.table.items())}}
        return lambda: doc

    def check(self, doc: dict[str, Any]) -> list[BadEntry]:
        return prune_map(doc, "sinks", sink_entry_error)

    def get(self, sink_id: str) -> SinkState:
        return self.table.get(sink_id) or SinkState()

    def pending(self) -> Iterator[tuple[str, PendingCommit]]:
        for sink_id, state in list(self.table.items()):
            if state.pending is not None:
                yield sink_id, state.pending

    def begin(self, sink_id: str, pending: PendingCommit) -> None:
        """Record the intent to apply ``pending`` (durably) before anything of it is written."""
        error = sink_entry_error(sink_id, SinkState(pending=pending).to_json())
        if error is not None:
            raise ProtocolError(f"sink {sink_id}: the commit cannot be recorded: {error}")
        state = self.table.setdefault(sink_id, SinkState())
        state.pending = pending
        self.persist()

    def complete(self, sink_id: str, batch_id: int) -> None:
        """The batch is fully applied: it becomes the watermark and the intent is dropped."""
        state = self.table.setdefault(sink_id, SinkState())
        state.last_batch_id = max(state.last_batch_id, batch_id)
        state.updated = int(time.time() * 1000)
        state.pending = None
        self.persist()

    def fold_begin(self, sink_id: str, pending: PendingCommit) -> None:
        """A replicated intent: recorded unless the table already has that batch (or a later one); not persisted."""
        state = self.table.setdefault(sink_id, SinkState())
        if pending.batch_id > state.last_batch_id and (
            state.pending is None or state.pending.batch_id < pending.batch_id
        ):
            state.pending = pending

    def fold_complete(self, sink_id: str, batch_id: int, updated: int) -> None:
        """A replicated completed commit: the watermark moves up (never down); not persisted."""
        state = self.table.setdefault(sink_id, SinkState())
        if batch_id > state.last_batch_id:
            state.last_batch_id = batch_id
            state.updated = updated
        if state.pending is not None and state.pending.batch_id <= batch_id:
            state.pending = None
