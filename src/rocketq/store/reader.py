"""Reads: pulls through a consume queue, search by store time, query by key (RocketMQ's DefaultMessageStore
``getMessage`` / ``getOffsetInQueueByTime`` / ``queryMessage``).

``get_message`` follows RocketMQ 4.9 rule for rule (reference §3.2): the status and ``next_begin_offset`` for
every case, at most ``max_msg_nums`` messages, 32 messages / 256 KiB when the data is in memory (8 / 64 KiB
"in disk", i.e. further behind the log's end than ``access_message_in_memory_max_ratio`` % of RAM), the first
message always returned, and at most ``max(max_filter_message_count, max_msg_nums * 20)`` bytes of consume
queue (800 units by default) scanned per call. A read never crosses a consume-queue file.
"""

from __future__ import annotations

import bisect
import mmap
import os
from collections.abc import Callable

from rocketq.protocol.message import MessageRecord
from rocketq.store.commit_log import CommitLog
from rocketq.store.config import CQ_STORE_UNIT_SIZE, StoreConfig
from rocketq.store.consume_queue import CQ_UNIT, ConsumeQueue
from rocketq.store.consume_queue_table import ConsumeQueueTable
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file import SelectMappedBufferResult
from rocketq.store.results import GetMessageResult, GetMessageStatus, MessageFilter
from rocketq.store.stats import StatsService


def total_physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def _visible(view: memoryview, pos: int, limit: int) -> bool:
    phys, size, _ = CQ_UNIT.unpack_from(view, pos)
    return bool(phys + size <= limit)


class MessageReader:
    def __init__(
        self,
        config: StoreConfig,
        commit_log: CommitLog,
        cq_table: ConsumeQueueTable,
        index: IndexService | None,
        stats: StatsService,
    ) -> None:
        self.config = config
        self.commit_log = commit_log
        self.cq_table = cq_table
        self.index = index
        self.stats = stats
        self._memory_limit = total_physical_memory() * config.access_message_in_memory_max_ratio // 100
        #: controller mode: the commit-log offset consumers may read up to (the in-sync set's confirm offset);
        #: a unit whose message ends past it is not handed out yet. None: everything stored is visible.
        self.visible_limit: Callable[[], int] | None = None

    def _is_batch_full(self, size: int, max_msg_nums: int, total: int, count: int, in_disk: bool) -> bool:
        if total == 0 or count == 0:
            return False
        if count >= max_msg_nums:
            return True
        cfg = self.config
        if in_disk:
            return (
                total + size > cfg.max_transfer_bytes_on_message_in_disk
                or count > cfg.max_transfer_count_on_message_in_disk - 1
            )
        return (
            total + size > cfg.max_transfer_bytes_on_message_in_memory
            or count > cfg.max_transfer_count_on_message_in_memory - 1
        )

    def get_message(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None = None,
        *,
        counted: bool = True,
    ) -> GetMessageResult:
        """Read up to ``max_msg_nums`` messages of a queue from ``offset`` (RocketMQ's getMessage rules).

        The result holds views of the mapped commit log; ``release()`` it once the bytes are sent.
        ``counted=False``: a broker service reading its own queue, kept out of the get statistics (Java's
        schedule and timer services read their queues without getMessage, so only consumers' pulls count).
        """
        max_offset_py = self.commit_log.get_max_offset()
        cq = self.cq_table.find(topic, queue_id)
        if cq is None:
            if counted:
                self.stats.get_miss += 1
            return GetMessageResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, 0, 0, 0)
        min_offset = cq.min_offset_in_queue
        max_offset = cq.max_offset_in_queue
        if max_offset == 0:
            status, next_offset = GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0
        elif offset < min_offset:
            status, next_offset = GetMessageStatus.OFFSET_TOO_SMALL, min_offset
        elif offset == max_offset:
            status, next_offset = GetMessageStatus.OFFSET_OVERFLOW_ONE, offset
        elif offset > max_offset:
            status, next_offset = GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset
        else:
            buf = cq.get_index_buffer(offset)
            limit = self.visible_limit() if self.visible_limit is not None else None
            if buf is None:
                status, next_offset = GetMessageStatus.OFFSET_FOUND_NULL, cq.roll_next_file(offset)
            elif limit is not None and not _visible(buf.view, 0, limit):
                buf.release()  # the next message is not held by the whole in-sync set yet: as if not arrived
                status, next_offset = GetMessageStatus.OFFSET_OVERFLOW_ONE, offset
            else:
                try:
                    result = self._read_units(buf, offset, max_msg_nums, message_filter, max_offset_py, limit)
                finally:
                    buf.release()
                result.min_offset = min_offset
                result.max_offset = max_offset
                if not counted:
                    pass
                elif result.status is GetMessageStatus.FOUND:
                    self.stats.get_found += 1
                    self.stats.get_transferred += result.message_count
                else:
                    self.stats.get_miss += 1
                return result
        if counted:
            self.stats.get_miss += 1
        return GetMessageResult(status, next_offset, min_offset, max_offset)

    def is_visible(self, topic: str, queue_id: int, offset: int) -> bool:
        """Whether a pull at ``offset`` would find a message now (it exists and lies within ``visible_limit``)."""
        cq = self.cq_table.find(topic, queue_id)
        if cq is None or offset >= cq.max_offset_in_queue:
            return False
        if self.visible_limit is None:
            return True
        buf = cq.get_index_buffer(offset)
        if buf is None:
            return True  # let the pull find out (a rolled or removed unit)
        try:
            return _visible(buf.view, 0, self.visible_limit())
        finally:
            buf.release()

    def _read_units(
        self,
        buf: SelectMappedBufferResult,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None,
        max_offset_py: int,
        limit: int | None = None,
    ) -> GetMessageResult:
        result = GetMessageResult(GetMessageStatus.NO_MATCHED_MESSAGE, offset, 0, 0)
        view = buf.view
        scan_bytes = min(buf.size, max(self.config.max_filter_message_count, max_msg_nums * CQ_STORE_UNIT_SIZE))
        n_units = scan_bytes // CQ_STORE_UNIT_SIZE
        memory_limit = self._memory_limit
        commit_log = self.commit_log
        next_phy_file_start = -1
        max_phy_pulling = 0
        i = 0
        while i < n_units:
            phys, size, tags_code = CQ_UNIT.unpack_from(view, i * CQ_STORE_UNIT_SIZE)
            if limit is not None and phys + size > limit:
                break
            max_phy_pulling = phys
            if next_phy_file_start != -1 and phys < next_phy_file_start:
                i += 1
                continue
            in_disk = max_offset_py - phys > memory_limit
            if self._is_batch_full(size, max_msg_nums, result.buffer_total_size, result.message_count, in_disk):
                break
            if message_filter is not None and not message_filter.is_matched_by_consume_queue(tags_code):
                i += 1
                continue
            sel = commit_log.get_message(phys, size)
            if sel is None:
                if result.buffer_total_size == 0:
                    result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                next_phy_file_start = commit_log.roll_next_file(phys)
                i += 1
                continue
            if message_filter is not None and not message_filter.is_matched_by_commit_log(sel.view):
                if result.buffer_total_size == 0:
                    result.status = GetMessageStatus.NO_MATCHED_MESSAGE
                sel.release()
                i += 1
                continue
            result.add(sel, offset + i)
            result.status = GetMessageStatus.FOUND
            next_phy_file_start = -1
            i += 1
        result.next_begin_offset = offset + i
        result.suggest_pulling_from_slave = max_offset_py - max_phy_pulling > memory_limit
        return result

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """Queue offset of the message stored closest to ``timestamp`` (RocketMQ 4.9's binary search).

        The consume-queue file searched is the first whose last message is not older than ``timestamp``
        (the last file otherwise). Inside it: an exact match, else the nearer neighbour, else the only side
        found. 0 if the queue does not exist.
        """
        cq = self.cq_table.find(topic, queue_id)
        if cq is None:
            return 0
        files = cq.mfq.mapped_files
        if not files:
            return 0
        pickup = self.commit_log.pickup_store_timestamp

        def last_time(mf_index: int) -> int:
            mf = files[mf_index]
            if mf.wrote_position < CQ_STORE_UNIT_SIZE:
                return -1
            phys, size, _ = CQ_UNIT.unpack_from(mf.mm, mf.wrote_position - CQ_STORE_UNIT_SIZE)
            return pickup(phys, size)

        pick = bisect.bisect_left(range(len(files)), True, key=lambda k: last_time(k) >= timestamp)
        mf = files[min(pick, len(files) - 1)]
        if not mf.hold():
            return 0
        try:
            return self._search_time_in_file(cq, mf.file_from_offset, mf.wrote_position, mf.mm, timestamp)
        finally:
            mf.release()

    def _search_time_in_file(
        self, cq: ConsumeQueue, file_from: int, limit: int, mm: mmap.mmap, timestamp: int
    ) -> int:
        unit = CQ_STORE_UNIT_SIZE
        low = cq.min_logic_offset - file_from if cq.min_logic_offset > file_from else 0
        high = limit - unit
        min_phys = self.commit_log.get_min_offset()
        target = left = right = -1
        left_value = right_value = -1
        while high >= low:
            mid = (low + high) // (2 * unit) * unit
            phys, size, _ = CQ_UNIT.unpack_from(mm, mid)
            if phys < min_phys:
                low = mid + unit
                left = mid
                continue
            store_time = self.commit_log.pickup_store_timestamp(phys, size)
            if store_time < 0:
                return 0
            if store_time == timestamp:
                target = mid
                break
            if store_time > timestamp:
                high = mid - unit
                right, right_value = mid, store_time
            else:
                low = mid + unit
                left, left_value = mid, store_time
        if target != -1:
            pos = target
        elif left_value == -1:
            pos = right
        elif right_value == -1:
            pos = left
        else:
            pos = right if abs(timestamp - left_value) > abs(timestamp - right_value) else left
        if pos < 0:
            return cq.max_offset_in_queue
        return (file_from + pos) // unit

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> list[MessageRecord]:
        """Messages of ``topic`` whose UNIQ_KEY or one of whose KEYS is ``key``, stored within [begin, end]."""
        if self.index is None:
            return []
        out: list[MessageRecord] = []
        seen: set[int] = set()
        last_query_time = end
        for _ in range(3):
            found = self.index.query_offset(topic, key, max_num, begin, last_query_time)
            if not found.phy_offsets:
                break
            for m, off in enumerate(sorted(found.phy_offsets)):
                rec = self.commit_log.look_message(off)
                if rec is None:
                    continue
                if m == 0:
                    last_query_time = rec.store_timestamp
                if off in seen or rec.topic != topic:
                    continue
                if rec.uniq_key == key or key in rec.keys:
                    seen.add(off)
                    out.append(rec)
            if out or last_query_time < begin:
                break
        out.sort(key=lambda r: r.commit_log_offset)
        return out[:max_num]
