"""The commit log: every message of every topic, appended to ``<root>/commitlog/`` (RocketMQ's ``CommitLog``).

One writer at a time: callers hold ``CommitLog.put_lock`` around ``append``/``append_batch`` (the store
also dispatches under it). A record never spans two files; when ``size + 8`` bytes do not fit, the rest of
the file gets an end-of-file blank record and the record goes to the next file. Record layout and write
order: see ``rocketq.store.record``.

Also here: the ``(topic, queue id) → next queue offset`` table, reads by physical offset, and the scan
that recovery uses to find the end of the valid log.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable

from rocketq.errors import ProtocolError
from rocketq.protocol.message import (
    SYSFLAG_TX_MASK,
    SYSFLAG_TX_PREPARED,
    SYSFLAG_TX_ROLLBACK,
    MessageRecord,
    decode_record,
)
from rocketq.store.appendcodec import write_batch
from rocketq.store.appendcodec import write_record as write_message_record
from rocketq.store.config import Clock, StoreConfig, system_clock
from rocketq.store.mapped_file import MappedFile, SelectMappedBufferResult
from rocketq.store.mapped_file_queue import MappedFileQueue, SpaceGuard
from rocketq.store.record import (
    END_FILE_MIN_BLANK_LENGTH,
    RECORD_BLANK,
    RecordEncoder,
    RecordInfo,
    check_record,
    read_size,
    read_store_timestamp,
    write_blank,
)
from rocketq.store.results import AppendResult

log = logging.getLogger(__name__)

_I32 = struct.Struct(">i")
_CQ_UNIT = struct.Struct(">qiq")

QueueKey = tuple[str, int]
#: what ``scan`` calls for each valid record (its return value is ignored)
RecordCallback = Callable[[RecordInfo, MappedFile], object]


class CommitLog:
    def __init__(self, config: StoreConfig, clock: Clock = system_clock, guard: SpaceGuard | None = None) -> None:
        self.config = config
        self.file_size = config.mapped_file_size_commit_log
        self._clock = clock
        self.mfq = MappedFileQueue(
            config.commit_log_dir, self.file_size, keep_fd=True, preallocate=config.preallocate_commit_log,
            clock=clock, guard=guard,
        )
        self.encoder = RecordEncoder()
        self.put_lock = threading.Lock()
        #: next queue offset of each (topic, queue id); rebuilt from the consume queues on load
        self.topic_queue_table: dict[QueueKey, int] = {}
        #: store time of the newest record appended
        self.last_store_timestamp = 0

    def load(self) -> bool:
        return self.mfq.load()

    # ------------------------------------------------------------------------------------- appending

    def _file_for(self, size: int) -> MappedFile:
        mf = self.mfq.last_for_write()
        if size + END_FILE_MIN_BLANK_LENGTH > mf.remaining:
            pos = mf.wrote_position
            write_blank(mf.mm, pos, mf.file_size - pos)
            mf.wrote_position = mf.file_size
            mf = self.mfq.last_for_write()
        return mf

    def append_message(
        self,
        store_ts: int,
        size: int,
        queue_id: int,
        flag: int,
        sys_flag: int,
        born_timestamp: int,
        born_b: bytes,
        store_b: bytes,
        reconsume_times: int,
        prepared_transaction_offset: int,
        body: bytes,
        topic_tail: bytes,
        props_b: bytes,
        key: QueueKey,
    ) -> tuple[int, int]:
        """The single-message hot path: ``appendcodec.write_record`` straight into the mapped file, stamped
        ``store_ts`` (the caller's, so a run of messages shares one reading of the clock); returns (commit-log
        offset, queue offset). The caller holds ``put_lock``."""
        tx = sys_flag & SYSFLAG_TX_MASK
        has_queue = tx != SYSFLAG_TX_PREPARED and tx != SYSFLAG_TX_ROLLBACK
        table = self.topic_queue_table
        queue_offset = table.get(key, 0) if has_queue else 0
        files = self.mfq.mapped_files
        mf = files[-1] if files else None
        if mf is None or size + END_FILE_MIN_BLANK_LENGTH > mf.file_size - mf.wrote_position:
            mf = self._file_for(size)  # the first file, or the next one (a full file has no room either)
        pos = mf.wrote_position
        phys = mf.file_from_offset + pos
        write_message_record(
            mf.mm, pos, body, topic_tail, props_b, queue_id, flag, queue_offset, phys, sys_flag, born_timestamp,
            born_b, store_ts, store_b, reconsume_times, prepared_transaction_offset,
        )
        mf.wrote_position = pos + size
        mf.store_timestamp = mf.last_modified_ms = store_ts
        self.last_store_timestamp = store_ts
        if has_queue:
            table[key] = queue_offset + 1
        return phys, queue_offset

    def append_batch_body(
        self,
        body: bytes | memoryview,
        extra: bytes,
        topic_tail: bytes,
        queue_id: int,
        sys_flag: int,
        born_timestamp: int,
        born_b: bytes,
        store_b: bytes,
        reconsume_times: int,
        total: int,
        key: QueueKey,
        index_prefix_hash: int,
    ) -> tuple[AppendResult, bytes, list[int], list[int]]:
        """Append a SEND_BATCH_MESSAGE body (``total`` bytes of records, from ``measure_batch``) contiguously with
        consecutive queue offsets (caller holds ``put_lock``); returns the result, the packed consume-queue
        units, each message's tags code and the index entries (see ``appendcodec``)."""
        store_ts = self._clock()
        queue_offset = self.topic_queue_table.get(key, 0)
        mf = self._file_for(total)
        start = mf.wrote_position
        base = mf.file_from_offset
        end, units, tags, index, ids = write_batch(
            mf.mm, start, body, extra, topic_tail, queue_id, sys_flag, born_timestamp, born_b, store_ts, store_b,
            reconsume_times, queue_offset, base, index_prefix_hash,
        )
        mf.wrote_position = end
        mf.store_timestamp = mf.last_modified_ms = store_ts
        self.last_store_timestamp = store_ts
        self.topic_queue_table[key] = queue_offset + len(tags)
        offsets = tuple(u[0] for u in _CQ_UNIT.iter_unpack(units))
        result = AppendResult(base + start, end - start, store_ts, queue_offset, len(tags), store_b, offsets, ids)
        return result, units, tags, index

    # --------------------------------------------------------------------------------------- reading

    def get_min_offset(self) -> int:
        mf = self.mfq.first()
        return mf.file_from_offset if mf is not None else 0

    def get_max_offset(self) -> int:
        return self.mfq.get_max_offset()

    def roll_next_file(self, offset: int) -> int:
        return self.mfq.roll_next_file(offset)

    def get_message(self, offset: int, size: int) -> SelectMappedBufferResult | None:
        mf = self.mfq.find_by_offset(offset, offset == 0)
        if mf is None:
            return None
        return mf.select(offset - mf.file_from_offset, size)

    def get_data(self, offset: int) -> SelectMappedBufferResult | None:
        """Everything written from ``offset`` to the end of its file (what a replica would stream next)."""
        mf = self.mfq.find_by_offset(offset, offset == 0)
        if mf is None:
            return None
        return mf.select(offset - mf.file_from_offset)

    def _hold_record(self, offset: int) -> SelectMappedBufferResult | None:
        mf = self.mfq.find_by_offset(offset)
        if mf is None:
            return None
        pos = offset - mf.file_from_offset
        if pos + 8 > mf.wrote_position:
            return None
        size = read_size(mf.mm, pos)
        if size < 91:
            return None
        return mf.select(pos, size)

    def select_one(self, offset: int) -> bytes | None:
        res = self._hold_record(offset)
        if res is None:
            return None
        try:
            data = bytes(res.view)
        finally:
            res.release()
        return data

    def look_message(self, offset: int) -> MessageRecord | None:
        res = self._hold_record(offset)
        if res is None:
            return None
        try:
            return decode_record(res.view)
        except ProtocolError:
            return None
        finally:
            res.release()

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        """STORETIMESTAMP of the message at ``offset``, -1 if it is gone."""
        mf = self.mfq.find_by_offset(offset)
        if mf is None or not mf.hold():
            return -1
        try:
            pos = offset - mf.file_from_offset
            ts = read_store_timestamp(mf.mm, pos) if pos + max(size, 91) <= mf.wrote_position else 0
        finally:
            mf.release()
        return ts or -1

    # -------------------------------------------------------------------------------------- recovery

    def first_file_for_recovery(self, min_timestamp: int) -> int:
        """Index of the last file whose first message is not newer than ``min_timestamp`` (else 0)."""
        files = self.mfq.mapped_files
        for i in range(len(files) - 1, -1, -1):
            ts = read_store_timestamp(files[i].mm, 0)
            if ts and ts <= min_timestamp:
                return i
        return 0

    def scan(
        self,
        start_offset: int,
        check_crc: bool,
        on_record: RecordCallback | None,
        stop_offset: int | None = None,
    ) -> int:
        """Walk valid records from ``start_offset`` (a record boundary); returns the offset where they end."""
        files = self.mfq.mapped_files
        mf = self.mfq.find_by_offset(start_offset)
        if mf is None:
            return start_offset
        idx = files.index(mf)
        pos = start_offset - mf.file_from_offset
        while True:
            if stop_offset is not None and mf.file_from_offset + pos >= stop_offset:
                break
            info = check_record(mf.mm, mf.view, pos, mf.file_size, mf.file_from_offset + pos, check_crc)
            if isinstance(info, RecordInfo):
                if on_record is not None:
                    on_record(info, mf)
                mf.store_timestamp = info.store_timestamp
                pos += info.size
            elif info == RECORD_BLANK and idx + 1 < len(files):
                idx += 1
                mf = files[idx]
                pos = 0
            else:
                break
        return mf.file_from_offset + pos

    def is_zero_at(self, offset: int) -> bool:
        """True when the 8 bytes at ``offset`` are zero (nothing was ever written there)."""
        mf = self.mfq.find_by_offset(offset)
        if mf is None:
            return True
        pos = offset - mf.file_from_offset
        return mf.mm[pos : pos + 8].count(0) == len(mf.mm[pos : pos + 8])

    def set_end(self, end_offset: int) -> None:
        """Make ``end_offset`` the end of the log: positions set, anything after it zeroed or deleted."""
        files = self.mfq.mapped_files
        if files and end_offset < files[-1].file_from_offset:
            log.error(
                "commit_log.truncate_middle end=%d last_file=%s: data after a damaged record is dropped",
                end_offset, files[-1].file_name,
            )
        self.mfq.truncate_dirty_files(end_offset)
        self.mfq.flushed_where = end_offset
        last = self.mfq.last()
        if last is not None:
            self.last_store_timestamp = max(self.last_store_timestamp, last.store_timestamp)

    # ------------------------------------------------------------------------------------- retention

    def delete_expired_files(
        self, expired_ms: int, delete_interval_ms: int, interval_forcibly_ms: int, clean_immediately: bool
    ) -> int:
        return self.mfq.delete_expired_by_time(expired_ms, delete_interval_ms, interval_forcibly_ms, clean_immediately)

    def close(self) -> None:
        self.mfq.close()
