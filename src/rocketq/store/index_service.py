"""The list of index files: build entries for stored messages, query by key, expire (RocketMQ's ``IndexService``).

Keys per message: ``topic#UNIQ_KEY`` and ``topic#k`` for each space-separated ``KEYS`` entry; rollback
messages are not indexed. A message below the last indexed commit-log offset is skipped, so re-dispatching
the log after a crash adds no duplicates except for the last message indexed, which is indexed again in case
the crash cut its keys short (queries drop the duplicate).

Entries are written in groups, as RocketMQ's reput thread does: the append path only hashes the keys and
queues ``[hash, phys]`` pairs (``pending_entries``); ``write_pending`` writes them, one ``index_put_many``
call per store millisecond, when enough have gathered, and the store calls it (under its put lock) before a
query, before the flush thread records the index checkpoint and at shutdown. A crash loses only pending
entries, which recovery rebuilds from the commit log (the checkpoint never covers them).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

from rocketq.common.hashing import unsigned_hash
from rocketq.protocol.message import SYSFLAG_TX_MASK, SYSFLAG_TX_ROLLBACK
from rocketq.store.appendcodec import index_entries
from rocketq.store.config import Clock, StoreConfig, system_clock
from rocketq.store.fast_hash import index_key_hash
from rocketq.store.index_file import IndexFile, index_file_name, index_file_size

log = logging.getLogger(__name__)

#: queued index values (two per key) that make ``build_index`` write them out at once
PENDING_WRITE_THRESHOLD = 1024


def _entries_above(entries: list[int], floor: int) -> list[int]:
    """The ``[hash, phys]`` pairs of ``entries`` whose phys is above ``floor``.

    A function of its own: a comprehension inside ``build_index_batch`` would make its locals closure cells,
    paid on every call of the append path.
    """
    return [v for i in range(0, len(entries), 2) if entries[i + 1] > floor for v in entries[i : i + 2]]


@dataclass(slots=True)
class QueryOffsetResult:
    phy_offsets: list[int]
    index_last_update_timestamp: int
    index_last_update_phy_offset: int


class IndexService:
    def __init__(self, config: StoreConfig, clock: Clock = system_clock) -> None:
        self.dir = config.index_dir
        self.hash_slot_num = config.max_hash_slot_num
        self.index_num = config.max_index_num
        self.max_msgs_num_batch = config.max_msgs_num_batch
        self._clock = clock
        self._files: list[IndexFile] = []
        self._lock = threading.Lock()
        self._pending_destroy: list[IndexFile] = []
        #: commit-log offset of the last message handed to build_index (-1: none)
        self.last_indexed_phys = -1
        self.last_indexed_timestamp = 0
        #: whether build_index already ran for last_indexed_phys in this process (vs. read from disk)
        self._dispatched_last = False
        self._prefixes: dict[str, int] = {}
        # [hash, phys, ...] not yet in a file, and (store timestamp, end) of each run sharing a timestamp
        self._pending: list[int] = []
        self._pending_runs: list[list[int]] = []

    # ------------------------------------------------------------------------------------ lifecycle

    def load(self) -> bool:
        if not os.path.isdir(self.dir):
            return True
        entries = os.listdir(self.dir)
        for n in entries:
            if n.endswith(".tmp"):  # a creation cut short by a crash
                os.unlink(os.path.join(self.dir, n))
        names = sorted(n for n in entries if n.isdigit())
        files: list[IndexFile] = []
        for name in names:
            prev = files[-1] if files else None
            try:
                files.append(
                    IndexFile(
                        os.path.join(self.dir, name), self.hash_slot_num, self.index_num,
                        end_phy_offset=prev.end_phy_offset if prev else 0,
                        end_timestamp=prev.end_timestamp if prev else 0,
                    )
                )
            except ValueError:
                log.error("index.load_failed file=%s (check max_hash_slot_num / max_index_num)", name)
                for f in files:
                    f.close()
                return False
        self._files = files
        self._reload_last_indexed()
        return True

    def _reload_last_indexed(self) -> None:
        self._dispatched_last = False
        self.last_indexed_phys = -1
        self.last_indexed_timestamp = 0
        if self._files:
            last = self._files[-1]
            if last.index_count > 1 or last.end_phy_offset > 0:
                self.last_indexed_phys = last.end_phy_offset
                self.last_indexed_timestamp = last.end_timestamp

    def trust_last(self) -> None:
        """After a clean shutdown the last indexed message is known complete: do not index it again."""
        self._dispatched_last = self.last_indexed_phys >= 0

    def close(self) -> None:
        for f in self._files:
            f.close()
        self._files = []

    def destroy(self) -> None:
        self._pending, self._pending_runs = [], []
        now = self._clock()
        with self._lock:
            files, self._files = self._files, []
        for f in files:
            if not f.destroy(3000, now):
                self._pending_destroy.append(f)
        self._reload_last_indexed()

    @property
    def files(self) -> list[IndexFile]:
        return self._files

    # -------------------------------------------------------------------------------------- writing

    def _writable_file(self) -> IndexFile:
        files = self._files
        if files and not files[-1].is_write_full:
            return files[-1]
        prev = files[-1] if files else None
        os.makedirs(self.dir, exist_ok=True)
        name = index_file_name(self._clock())
        # names must be unique and increase with creation order, even with a coarse, fake or backward clock
        if prev is not None and name <= prev.file_name:
            name = str(int(prev.file_name) + 1).zfill(len(prev.file_name))
        while os.path.exists(os.path.join(self.dir, name)):
            name = str(int(name) + 1).zfill(len(name))
        path = os.path.join(self.dir, name)
        # size the file under a temporary name: a crash must not leave a short file under the real name
        fd = os.open(path + ".tmp", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.ftruncate(fd, index_file_size(self.hash_slot_num, self.index_num))
        finally:
            os.close(fd)
        os.rename(path + ".tmp", path)
        f = IndexFile(
            path,
            self.hash_slot_num,
            self.index_num,
            end_phy_offset=prev.end_phy_offset if prev else 0,
            end_timestamp=prev.end_timestamp if prev else 0,
        )
        with self._lock:
            self._files = [*self._files, f]
        return f

    def _defer(self, entries: list[int], store_timestamp: int) -> None:
        pending = self._pending
        pending += entries
        runs = self._pending_runs
        if runs and runs[-1][0] == store_timestamp:
            runs[-1][1] = len(pending)
        else:
            runs.append([store_timestamp, len(pending)])
        if len(pending) >= PENDING_WRITE_THRESHOLD:
            self.write_pending()

    @property
    def pending_entries(self) -> int:
        """Keys hashed but not yet written to an index file."""
        return len(self._pending) // 2

    def write_pending(self) -> None:
        """Write the queued entries (callers serialise this with the appends: the store's put lock).

        The queue is emptied only once the entries are in a file: ``pending_entries`` is read without the lock
        (``MessageStore.write_pending_index`` skips the lock when it is 0), so emptying it first let a query
        running beside the flush thread's write look for keys not yet in any file.
        """
        pending, runs = self._pending, self._pending_runs
        if not pending:
            return
        try:
            start = 0
            for store_timestamp, end in runs:
                self._put_entries(pending[start:end] if start or end != len(pending) else pending, store_timestamp)
                start = end
        finally:  # a failed write drops its entries as before: recovery rebuilds them from the commit log
            self._pending, self._pending_runs = [], []

    def _put_entries(self, entries: list[int], store_timestamp: int) -> None:
        files = self._files
        f = files[-1] if files else self._writable_file()
        i = f.put_keys(entries, 0, store_timestamp)
        while i < len(entries):
            i = self._writable_file().put_keys(entries, i, store_timestamp)

    @property
    def prefixes(self) -> dict[str, int]:
        """``prefix_hash``'s cache, topic → hash (read by the plain-run writer, which leaves a topic it lacks)."""
        return self._prefixes

    def prefix_hash(self, topic: str) -> int:
        """Unsigned Java hash of ``topic#``, cached (every key of a topic starts with it)."""
        h = self._prefixes.get(topic)
        if h is None:
            if len(self._prefixes) >= 4096:
                self._prefixes.clear()
            h = self._prefixes[topic] = unsigned_hash(topic + "#")[0]
        return h

    def build_index(
        self,
        topic: str,
        phys: int,
        store_timestamp: int,
        sys_flag: int,
        uniq_key: str | None,
        keys: str | None,
    ) -> None:
        if phys < self.last_indexed_phys or (phys == self.last_indexed_phys and self._dispatched_last):
            return
        self._dispatched_last = True
        self.last_indexed_phys = phys
        self.last_indexed_timestamp = store_timestamp
        if sys_flag & SYSFLAG_TX_MASK == SYSFLAG_TX_ROLLBACK:
            return
        if uniq_key or keys:
            entries = index_entries(self.prefix_hash(topic), phys, uniq_key, keys)
            if entries:
                self._defer(entries, store_timestamp)

    def build_index_batch(self, entries: list[int], last_phys: int, store_timestamp: int) -> None:
        """Append path for a batch: ``entries`` = ``[hash, phys, hash, phys, ...]`` in commit-log order (already
        hashed by ``appendcodec``); ``last_phys`` is the batch's last message."""
        if last_phys < self.last_indexed_phys or (last_phys == self.last_indexed_phys and self._dispatched_last):
            return
        floor = self.last_indexed_phys if self._dispatched_last else self.last_indexed_phys - 1
        self._dispatched_last = True
        self.last_indexed_phys = last_phys
        self.last_indexed_timestamp = store_timestamp
        if entries and entries[1] <= floor:  # only on a replay overlapping what is indexed
            entries = _entries_above(entries, floor)
        if entries:
            self._defer(entries, store_timestamp)

    def flush(self) -> None:
        for f in self._files:
            f.flush()

    def drop_resident(self) -> None:
        """Keep the broker's resident size flat: written index entries leave the resident set every pass."""
        for f in self._files:
            f.drop_resident()

    # -------------------------------------------------------------------------------------- reading

    def query_offset(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryOffsetResult:
        max_num = min(max_num, self.max_msgs_num_batch)
        out: list[int] = []
        last_ts = last_phys = 0
        files = self._files
        key_hash = index_key_hash(f"{topic}#{key}")
        for i in range(len(files) - 1, -1, -1):
            f = files[i]
            if i == len(files) - 1:
                last_ts, last_phys = f.end_timestamp, f.end_phy_offset
            if f.is_time_matched(begin, end) and f.mf.hold():
                try:
                    f.select_phy_offsets(key_hash, max_num, begin, end, out)
                finally:
                    f.mf.release()
            if f.begin_timestamp < begin or len(out) >= max_num:
                break
        return QueryOffsetResult(out, last_ts, last_phys)

    # ------------------------------------------------------------------------------------ retention

    def delete_expired(self, min_phy_offset: int) -> int:
        """Delete index files (never the last) that only point below the commit log's first byte."""
        files = self._files[:-1]
        victims = [f for f in files if f.end_phy_offset < min_phy_offset]
        if not victims:
            return 0
        gone = {id(f) for f in victims}
        with self._lock:
            self._files = [f for f in self._files if id(f) not in gone]
        now = self._clock()
        for f in victims:
            if not f.destroy(3000, now):
                self._pending_destroy.append(f)
        return len(victims)

    def retry_pending_destroy(self, interval_forcibly_ms: int) -> None:
        now = self._clock()
        self._pending_destroy = [f for f in self._pending_destroy if not f.destroy(interval_forcibly_ms, now)]

    def truncate(self, phy_offset: int) -> None:
        """Forget entries for messages at or past ``phy_offset`` (the commit log was truncated there)."""
        self.write_pending()  # queued entries past the cut are dropped with the written ones below
        while len(self._files) > 1:
            last, prev = self._files[-1], self._files[-2]
            if last.index_count <= 1:
                if prev.end_phy_offset < phy_offset:
                    break  # an empty file after an untouched one: keep it
            elif last.begin_phy_offset < phy_offset:
                break
            with self._lock:
                self._files = self._files[:-1]
            if not last.destroy(3000, self._clock()):
                self._pending_destroy.append(last)
        if self._files:
            self._files[-1].truncate(phy_offset)
        self._reload_last_indexed()
