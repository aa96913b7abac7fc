"""One consume queue: the per (topic, queue id) index of commit-log positions (RocketMQ's ``ConsumeQueue``).

Files: ``<root>/consumequeue/<topic>/<queueId>/<20-digit byte offset>``, each ``mapped_file_size_consume_queue``
bytes (default 300,000 units). Unit layout (big-endian, 20 bytes)::

    off  size  field
      0     8  commit-log offset of the message (i64)
      8     4  message size in the commit log (i32)
     12     8  tags code (i64): Java hashCode of TAGS, sign-extended; delivery time for SCHEDULE_TOPIC_XXXX

Queue offset *k* is unit *k*, at byte ``k * 20`` of the queue's log. A queue created past offset 0 starts
with pre-blank units ``(0, 2**31-1, 0)``. A unit with size <= 0 marks the end of what was written. Units
are appended in queue-offset order, so within a queue commit-log offsets increase: truncation and the
min-offset correction use binary search instead of RocketMQ's linear scans.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Sequence
from typing import Final

from rocketq.store.config import CQ_STORE_UNIT_SIZE, Clock, system_clock
from rocketq.store.mapped_file import MappedFile, SelectMappedBufferResult
from rocketq.store.mapped_file_queue import MappedFileQueue

log = logging.getLogger(__name__)

CQ_UNIT: Final = struct.Struct(">qiq")
_BLANK_UNIT: Final = CQ_UNIT.pack(0, 0x7FFFFFFF, 0)

#: results of ``ConsumeQueue.put``
PUT_WRITTEN: Final = 0
PUT_DUPLICATE: Final = 1
PUT_GAP: Final = -1


def _first_unit_where(mf: MappedFile, n_units: int, pred: Callable[[int, int], bool]) -> int:
    """Index of the first unit (0..n_units) for which ``pred(phys, size)`` holds; pred must be monotone."""
    lo, hi = 0, n_units
    mm = mf.mm
    while lo < hi:
        mid = (lo + hi) // 2
        phys, size, _ = CQ_UNIT.unpack_from(mm, mid * CQ_STORE_UNIT_SIZE)
        if pred(phys, size):
            hi = mid
        else:
            lo = mid + 1
    return lo


class ConsumeQueue:
    def __init__(
        self,
        topic: str,
        queue_id: int,
        root_dir: str,
        mapped_file_size: int,
        clock: Clock = system_clock,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.mapped_file_size = mapped_file_size
        self.units_per_file = mapped_file_size // CQ_STORE_UNIT_SIZE
        self.mfq = MappedFileQueue(os.path.join(root_dir, topic, str(queue_id)), mapped_file_size, clock=clock)
        #: commit-log offset just past the last message this queue points to
        self.max_physic_offset = -1
        #: byte offset of the first valid unit
        self.min_logic_offset = 0

    def __repr__(self) -> str:
        return f"<ConsumeQueue {self.topic}:{self.queue_id} [{self.min_offset_in_queue}, {self.max_offset_in_queue})>"

    # ------------------------------------------------------------------------------------ recovery

    def load(self) -> bool:
        return self.mfq.load()

    def recover(self) -> None:
        """Find the end of the written units (checking the last three files) and drop files after it."""
        files = self.mfq.mapped_files
        if not files:
            return
        start = max(0, len(files) - 3)
        process_offset = files[start].file_from_offset
        for mf in files[start:]:
            n = _first_unit_where(mf, self.units_per_file, lambda phys, size: phys < 0 or size <= 0)
            process_offset = mf.file_from_offset + n * CQ_STORE_UNIT_SIZE
            if n < self.units_per_file:
                break
        self.mfq.flushed_where = process_offset
        self.mfq.truncate_dirty_files(process_offset)
        self._reload_max_physic_offset()

    def _reload_max_physic_offset(self) -> None:
        last = self.last_unit()
        self.max_physic_offset = -1 if last is None else last[0] + last[1]

    def last_unit(self) -> tuple[int, int, int] | None:
        for mf in reversed(self.mfq.mapped_files[-2:]):
            if mf.wrote_position >= CQ_STORE_UNIT_SIZE:
                phys, size, tags = CQ_UNIT.unpack_from(mf.mm, mf.wrote_position - CQ_STORE_UNIT_SIZE)
                return phys, size, tags
        return None

    def truncate_dirty(self, phys_offset: int) -> None:
        """Remove the units pointing at or past commit-log ``phys_offset`` (it was truncated)."""
        files = self.mfq.mapped_files
        for i in range(len(files) - 1, -1, -1):
            mf = files[i]
            n = _first_unit_where(mf, mf.wrote_position // CQ_STORE_UNIT_SIZE, lambda phys, size: phys >= phys_offset)
            if n == 0 and i > 0:
                self.mfq.delete_last_file()
                continue
            self.mfq.truncate_dirty_files(mf.file_from_offset + n * CQ_STORE_UNIT_SIZE)
            break
        self._reload_max_physic_offset()

    # -------------------------------------------------------------------------------------- writing

    def put(self, phys: int, size: int, tags_code: int, cq_offset: int) -> int:
        """Write the unit for queue offset ``cq_offset``: PUT_WRITTEN, PUT_DUPLICATE (already there) or PUT_GAP."""
        if phys + size <= self.max_physic_offset:
            return PUT_DUPLICATE
        expect = cq_offset * CQ_STORE_UNIT_SIZE
        files = self.mfq.mapped_files
        mf = files[-1] if files else None
        if mf is None or mf.wrote_position >= mf.file_size:
            mf = self.mfq.last_for_write(expect)
        if mf.first_create_in_queue and cq_offset != 0 and mf.wrote_position == 0:
            self._fill_pre_blank(mf, expect)
        current = mf.file_from_offset + mf.wrote_position
        if expect != current:
            if expect < current:
                return PUT_DUPLICATE
            log.warning(
                "consume_queue.gap topic=%s queue_id=%d expect=%d current=%d",
                self.topic, self.queue_id, expect // CQ_STORE_UNIT_SIZE, current // CQ_STORE_UNIT_SIZE,
            )
            return PUT_GAP
        pos = mf.wrote_position
        CQ_UNIT.pack_into(mf.mm, pos, phys, size, tags_code)
        mf.wrote_position = pos + CQ_STORE_UNIT_SIZE
        self.max_physic_offset = phys + size
        return PUT_WRITTEN

    def put_many(self, units: Sequence[tuple[int, int, int]], first_cq_offset: int) -> None:
        """Units for consecutive queue offsets (a batch)."""
        self.put_packed(struct.pack(">" + "qiq" * len(units), *[v for u in units for v in u]), first_cq_offset)

    def put_packed(self, data: bytes, first_cq_offset: int) -> None:
        """Units already packed (``>qiq`` each) for consecutive queue offsets: one copy when they fit the file."""
        mf = self.mfq.last()
        expect = first_cq_offset * CQ_STORE_UNIT_SIZE
        first_phys, first_size, _ = CQ_UNIT.unpack_from(data, 0)
        if (
            mf is not None
            and first_phys + first_size > self.max_physic_offset
            and mf.file_from_offset + mf.wrote_position == expect
            and mf.wrote_position + len(data) <= mf.file_size
        ):
            pos = mf.wrote_position
            mf.mm[pos : pos + len(data)] = data
            mf.wrote_position = pos + len(data)
            last_phys, last_size, _ = CQ_UNIT.unpack_from(data, len(data) - CQ_STORE_UNIT_SIZE)
            self.max_physic_offset = last_phys + last_size
            return
        for i, (phys, size, tags) in enumerate(CQ_UNIT.iter_unpack(data)):
            self.put(phys, size, tags, first_cq_offset + i)

    def pad_to(self, cq_offset: int) -> None:
        """Write blank units until the next offset is ``cq_offset`` (their messages are lost)."""
        while self.max_offset_in_queue < cq_offset:
            mf = self.mfq.last_for_write(cq_offset * CQ_STORE_UNIT_SIZE)
            n = min(cq_offset - self.max_offset_in_queue, mf.remaining // CQ_STORE_UNIT_SIZE)
            if n <= 0:
                break
            mf.append(_BLANK_UNIT * n)

    def _fill_pre_blank(self, mf: MappedFile, until: int) -> None:
        self.min_logic_offset = until
        self.mfq.flushed_where = until
        pos = until - mf.file_from_offset
        mf.mm[0:pos] = _BLANK_UNIT * (pos // CQ_STORE_UNIT_SIZE)
        mf.wrote_position = pos
        mf.flushed_position = 0

    def flush(self, least_pages: int) -> bool:
        return self.mfq.flush(least_pages)

    def flush_all(self) -> None:
        self.mfq.flush_all()

    # -------------------------------------------------------------------------------------- reading

    @property
    def min_offset_in_queue(self) -> int:
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    @property
    def max_offset_in_queue(self) -> int:
        """Queue offset the next message will get."""
        return self.mfq.get_max_offset() // CQ_STORE_UNIT_SIZE

    def get_index_buffer(self, index: int) -> SelectMappedBufferResult | None:
        """Held view of the units from queue offset ``index`` to the end of its file's written part."""
        offset = index * CQ_STORE_UNIT_SIZE
        if offset < self.min_logic_offset:
            return None
        mf = self.mfq.find_by_offset(offset)
        if mf is None:
            return None
        return mf.select(offset - mf.file_from_offset)

    def get_unit(self, index: int) -> tuple[int, int, int] | None:
        buf = self.get_index_buffer(index)
        if buf is None:
            return None
        try:
            phys, size, tags = CQ_UNIT.unpack_from(buf.view, 0)
        finally:
            buf.release()
        return phys, size, tags

    def roll_next_file(self, index: int) -> int:
        return index + self.units_per_file - index % self.units_per_file

    # ------------------------------------------------------------------------------------ retention

    def correct_min_offset(self, phy_min_offset: int) -> None:
        """Move the min offset to the first unit pointing at or past the commit log's first byte."""
        mf = self.mfq.first()
        if mf is None:
            return
        n_units = mf.wrote_position // CQ_STORE_UNIT_SIZE
        n = _first_unit_where(mf, n_units, lambda phys, size: phys >= phy_min_offset and size != 0x7FFFFFFF)
        self.min_logic_offset = max(self.min_logic_offset, mf.file_from_offset + n * CQ_STORE_UNIT_SIZE)

    def delete_expired(self, phy_min_offset: int) -> int:
        n = self.mfq.delete_expired_by_offset(phy_min_offset, CQ_STORE_UNIT_SIZE)
        self.correct_min_offset(phy_min_offset)
        return n

    def destroy(self) -> None:
        self.max_physic_offset = -1
        self.min_logic_offset = 0
        self.mfq.destroy()

    def close(self) -> None:
        self.mfq.close()
