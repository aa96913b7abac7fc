"""A replica's write side: the master's raw commit-log bytes appended at the master's physical offsets, then
dispatched record by record through ``Dispatcher.dispatch_record`` (the door recovery uses), so the consume
queues and the index are built exactly as the master built them (Java's ``appendToCommitLog`` + reput).

The network is not here: ``rocketq.replication`` hands over byte ranges. A range may stop inside a message;
the reput then waits at that message until the rest arrives (Java's slave reput does the same).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rocketq.store.commit_log import CommitLog
from rocketq.store.dispatcher import Dispatcher
from rocketq.store.mapped_file import MappedFile
from rocketq.store.record import RECORD_BLANK, RecordInfo, check_record

log = logging.getLogger(__name__)

#: called per dispatched message that got a consume-queue unit: (topic, queue id, next queue offset, tags
#: code, store timestamp)
ReputListener = Callable[[str, int, int, int, int], None]


class ReplicaOffsetError(ValueError):
    """Bytes offered at an offset that is not the end of this commit log."""


class ReplicaAppender:
    """Appends master bytes and keeps ``reput_from`` (the first byte not dispatched yet). Callers serialise."""

    def __init__(self, commit_log: CommitLog, dispatcher: Dispatcher) -> None:
        self.commit_log = commit_log
        self.dispatcher = dispatcher
        self.reput_from = commit_log.get_max_offset()
        self.listener: ReputListener | None = None

    def append(self, offset: int, data: bytes | memoryview) -> int:
        """Write ``data`` at commit-log ``offset`` (must be the current end, or anything for an empty log);
        returns how many messages were dispatched. Raises ``ReplicaOffsetError`` on a mismatch (nothing
        written) and OSError when a file cannot be created."""
        cl = self.commit_log
        mfq = cl.mfq
        with cl.put_lock:
            if not mfq.mapped_files:
                # an empty replica starts where the master's stream starts: a file start (the master sends
                # from the beginning of its last file), so the records keep their offsets within the file
                if offset % mfq.mapped_file_size:
                    raise ReplicaOffsetError(f"an empty replica cannot start inside a file, at {offset}")
                mfq.last_for_write(offset)  # even for an empty frame (a heartbeat), as Java does
                self.reput_from = offset
            elif offset != cl.get_max_offset():
                raise ReplicaOffsetError(f"offset {offset} is not this commit log's end {cl.get_max_offset()}")
            view = memoryview(data)
            pos = offset
            while view:
                mf = mfq.last_for_write(pos)
                if mf.file_from_offset + mf.wrote_position != pos:
                    raise ReplicaOffsetError(f"offset {pos} is not the end of file {mf.file_name}")
                n = min(len(view), mf.remaining)
                mf.append(view[:n])
                view = view[n:]
                pos += n
            return self._reput()

    def drop_partial_tail(self) -> int:
        """Cut the bytes after the last complete record (a message the master had not finished sending), so the
        log can be appended to locally (a promoted slave); returns the bytes dropped."""
        cl = self.commit_log
        with cl.put_lock:
            self._reput()
            end = cl.get_max_offset()
            if self.reput_from >= end or not cl.mfq.mapped_files:
                return 0
            log.warning("replica.partial_tail_dropped from=%d to=%d", self.reput_from, end)
            cl.set_end(self.reput_from)
            return end - self.reput_from

    def _reput(self) -> int:
        """Dispatch every complete record from ``reput_from``; stop at a partial one (caller holds put_lock)."""
        cl = self.commit_log
        files = cl.mfq.mapped_files
        count = 0
        while True:
            mf = cl.mfq.find_by_offset(self.reput_from)
            if mf is None:
                return count
            pos = self.reput_from - mf.file_from_offset
            limit = mf.wrote_position
            info = check_record(mf.mm, mf.view, pos, limit, self.reput_from, False)
            if isinstance(info, RecordInfo):
                self._dispatch(info, mf)
                count += 1
                self.reput_from += info.size
            elif info == RECORD_BLANK and limit == mf.file_size:
                self.reput_from = mf.file_from_offset + mf.file_size  # the padding up to the next file
            elif pos >= mf.file_size and mf is not files[-1]:
                self.reput_from = mf.file_from_offset + mf.file_size
            else:
                if limit - pos >= 8 and not _incomplete(mf, pos, limit):
                    log.error("replica.bad_record offset=%d: reput waits", self.reput_from)
                return count

    def _dispatch(self, info: RecordInfo, mf: MappedFile) -> None:
        cl = self.commit_log
        tags = self.dispatcher.dispatch_record(info, mf)
        mf.store_timestamp = info.store_timestamp
        cl.last_store_timestamp = info.store_timestamp
        if tags is not None:
            topic = self.dispatcher.topic_of(info.topic)
            cl.topic_queue_table[(topic, info.queue_id)] = info.queue_offset + 1
            listener = self.listener
            if listener is not None:
                listener(topic, info.queue_id, info.queue_offset + 1, tags, info.store_timestamp)


def _incomplete(mf: MappedFile, pos: int, limit: int) -> bool:
    """The record at ``pos`` announces more bytes than have arrived (wait for them)."""
    size = int.from_bytes(mf.mm[pos : pos + 4], "big", signed=True)
    return size > limit - pos
