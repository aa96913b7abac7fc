"""One index file: a hash table on disk from message key to commit-log offset (RocketMQ's ``IndexFile``).

``<root>/index/<yyyyMMddHHmmssSSS>`` (creation time), ``40 + slots*4 + entries*20`` bytes (default
5,000,000 slots and 20,000,000 entries: 420,000,040 bytes). All big-endian::

    header (40 bytes)
      off  size  field
        0     8  beginTimestamp   store time of the first indexed message (ms)
        8     8  endTimestamp     store time of the last indexed message (ms)
       16     8  beginPhyOffset   commit-log offset of the first indexed message
       24     8  endPhyOffset     commit-log offset of the last indexed message
       32     4  hashSlotCount    slots in use (informational)
       36     4  indexCount       next entry number; starts at 1 (entry 0 is never used)
    slots: 40 + s*4, one i32 per slot s = keyHash % slots: number of the newest entry in it (0 = empty)
    entry k: 40 + slots*4 + k*20
        0     4  keyHash          abs(Java hashCode of "topic#key"), 0 for Integer.MIN_VALUE
        4     8  phyOffset        commit-log offset of the message
       12     4  timeDiff         (storeTime - beginTimestamp) // 1000, clamped to 0..2**31-1
       16     4  prevIndex        previous entry of the same slot (0 = none): chains are newest first

A new file's header starts from the previous file's end (offset and time), as in RocketMQ.

Write order per key is entry, then header, then slot, so a crash between them leaves at worst an unreachable
entry (past ``indexCount``, or counted but not linked from its slot), never a slot naming an entry that a later
key could overwrite. Recovery (``truncate``) zeroes entries past the count; the half-indexed message itself is
indexed again (the replay skips only messages *below* ``endPhyOffset``, as RocketMQ does).
"""

from __future__ import annotations

import os
import struct
import time
from typing import Final

from rocketq.store.appendcodec import index_put_many
from rocketq.store.mapped_file import OS_PAGE_SIZE, MappedFile

INDEX_HEADER_SIZE: Final = 40
HASH_SLOT_SIZE: Final = 4
INDEX_ENTRY_SIZE: Final = 20

HEADER: Final = struct.Struct(">qqqqii")
ENTRY: Final = struct.Struct(">iqii")
_SLOT: Final = struct.Struct(">i")
_INT_MAX: Final = 0x7FFFFFFF


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE


def index_file_name(now_ms: int) -> str:
    """yyyyMMddHHmmssSSS in local time, like RocketMQ's ``UtilAll.timeMillisToHumanString``."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(now_ms / 1000)) + f"{now_ms % 1000:03d}"


class IndexFile:
    def __init__(
        self,
        path: str,
        hash_slot_num: int,
        index_num: int,
        *,
        end_phy_offset: int = 0,
        end_timestamp: int = 0,
    ) -> None:
        self.path = path
        self.file_name = os.path.basename(path)
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self._entries_base = INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE
        self.mf = MappedFile(path, index_file_size(hash_slot_num, index_num), file_from_offset=0)
        self.mf.set_positions(self.mf.file_size)
        self.dirty = False
        self._resident_from = self._entries_base  # entries below this were dropped from the resident set
        # a file whose header was never written (created just before a crash) counts as new
        existed = HEADER.unpack_from(self.mf.mm, 0)[5] > 0
        self.begin_timestamp: int
        self.end_timestamp: int
        self.begin_phy_offset: int
        self.end_phy_offset: int
        self.hash_slot_count: int
        self.index_count: int
        if existed:
            (
                self.begin_timestamp,
                self.end_timestamp,
                self.begin_phy_offset,
                self.end_phy_offset,
                self.hash_slot_count,
                self.index_count,
            ) = HEADER.unpack_from(self.mf.mm, 0)
            self.index_count = max(self.index_count, 1)
        else:
            self.begin_timestamp = self.end_timestamp = max(end_timestamp, 0)
            self.begin_phy_offset = self.end_phy_offset = max(end_phy_offset, 0)
            self.hash_slot_count = 0
            self.index_count = 1
            self._write_header()

    def __repr__(self) -> str:
        phy = f"[{self.begin_phy_offset},{self.end_phy_offset}]"
        return f"<IndexFile {self.file_name} count={self.index_count} phy={phy}>"

    def _write_header(self) -> None:
        HEADER.pack_into(
            self.mf.mm, 0, self.begin_timestamp, self.end_timestamp, self.begin_phy_offset, self.end_phy_offset,
            self.hash_slot_count, self.index_count,
        )

    @property
    def is_write_full(self) -> bool:
        return self.index_count >= self.index_num

    def is_time_matched(self, begin: int, end: int) -> bool:
        b, e = self.begin_timestamp, self.end_timestamp
        return (begin < b and end > e) or b <= begin <= e or b <= end <= e

    # -------------------------------------------------------------------------------------- entries

    def _entry(self, k: int) -> tuple[int, int, int, int]:
        h, phys, diff, prev = ENTRY.unpack_from(self.mf.mm, self._entries_base + k * INDEX_ENTRY_SIZE)
        return h, phys, diff, prev

    def _resolve_slot(self, value: int, limit: int) -> int:
        """A slot may name an entry at or past ``limit`` after a crash: fall back along its chain."""
        while value >= limit and value > 0:
            prev = self._entry(value)[3] if value < self.index_num else 0
            value = prev if 0 <= prev < value else 0  # strictly decreasing, so this ends
        return value if 0 < value < limit else 0

    def put_key(self, key_hash: int, phy_offset: int, store_timestamp: int) -> bool:
        """Add an entry; False when the file is full."""
        return self.put_keys([key_hash, phy_offset], 0, store_timestamp) == 2

    def put_keys(self, entries: list[int], start: int, store_timestamp: int) -> int:
        """Add ``entries[start:]`` (``[hash, phys, ...]``) until the file is full; returns where it stopped.

        Per key: the entry, the header, then the slot (``appendcodec.index_put_many``), so a slot never names
        an entry the header does not count.
        """
        (nxt, self.index_count, self.hash_slot_count, self.begin_timestamp, self.begin_phy_offset,
         self.end_timestamp, self.end_phy_offset) = index_put_many(
            self.mf.mm, self.hash_slot_num, self.index_num, self.index_count, self.hash_slot_count,
            self.begin_timestamp, self.begin_phy_offset, self.end_timestamp, self.end_phy_offset, entries, start,
            store_timestamp,
        )  # fmt: skip
        if nxt != start:
            self.dirty = True
        return int(nxt)

    def select_phy_offsets(self, key_hash: int, max_num: int, begin: int, end: int, out: list[int]) -> None:
        """Append to ``out`` the offsets of entries with this hash stored within [begin, end] (newest first)."""
        count = self.index_count
        if count <= 1:
            return
        (slot_value,) = _SLOT.unpack_from(self.mf.mm, INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * 4)
        k = self._resolve_slot(slot_value, count) if slot_value >= count else slot_value
        steps = 0
        while 0 < k < count and len(out) < max_num and steps < count:
            h, phys, diff, prev = self._entry(k)
            if diff < 0:
                break
            time_read = self.begin_timestamp + diff * 1000
            if h == key_hash and begin <= time_read <= end:
                out.append(phys)
            if prev <= 0 or prev >= k or time_read < begin:
                break
            k = prev
            steps += 1

    # ------------------------------------------------------------------------------------- recovery

    def truncate(self, phy_offset: int) -> None:
        """Remove entries for messages at or past commit-log ``phy_offset``, and torn entries past the count."""
        count = self.index_count
        lo, hi = 1, count
        while lo < hi:  # entries are appended in commit-log order
            mid = (lo + hi) // 2
            if self._entry(mid)[1] >= phy_offset:
                hi = mid
            else:
                lo = mid + 1
        keep = lo
        end = count
        while end < self.index_num and any(self._entry(end)):
            end += 1
        if keep >= end:
            return
        mm = self.mf.mm
        for k in range(keep, end):
            key_hash = self._entry(k)[0]
            slot_pos = INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE
            (value,) = _SLOT.unpack_from(mm, slot_pos)
            if value >= keep:
                resolved = self._resolve_slot(value, keep)
                _SLOT.pack_into(mm, slot_pos, resolved)
                if resolved == 0 and self.hash_slot_count > 0:  # the slot is empty again: it counts no more
                    self.hash_slot_count -= 1
        zero = bytes(INDEX_ENTRY_SIZE)
        for k in range(keep, end):
            pos = self._entries_base + k * INDEX_ENTRY_SIZE
            mm[pos : pos + INDEX_ENTRY_SIZE] = zero
        self.index_count = keep
        if keep > 1:
            _, phys, diff, _ = self._entry(keep - 1)
            self.end_phy_offset = phys
            self.end_timestamp = self.begin_timestamp + diff * 1000
        else:
            self.end_phy_offset = self.begin_phy_offset
            self.end_timestamp = self.begin_timestamp
        self._write_header()
        self.dirty = True

    # ------------------------------------------------------------------------------------ lifecycle

    def flush(self) -> None:
        if self.dirty:
            self.dirty = False
            self.mf.sync()

    def drop_resident(self) -> None:
        """Unmap the written entry pages from the process (the entries are append-only; the hash slots, rewritten
        at random, stay until the file is full). Needs no flush first: a shared mapping's dirty pages stay dirty in
        the page cache."""
        if self._resident_from >= self.mf.file_size:
            return  # a full file, already dropped whole
        if self.is_write_full:
            # No more writes: the hash slots go too (a query faults in the few pages it reads).
            self.mf.drop_resident(0, self.mf.file_size)
            self._resident_from = self.mf.file_size
            return
        end = self._entries_base + self.index_count * INDEX_ENTRY_SIZE
        self.mf.drop_resident(self._resident_from, end)
        self._resident_from = max(self._entries_base, end - end % OS_PAGE_SIZE)

    def destroy(self, interval_forcibly_ms: int, now_ms: int) -> bool:
        return self.mf.destroy(interval_forcibly_ms, now_ms)

    def close(self) -> None:
        self.mf.close()
