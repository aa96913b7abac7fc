"""Bringing the store to a consistent state on load (RocketMQ's recoverNormally / recoverAbnormally + reput).

Clean restart (no abort marker): validate the commit log from the highest offset any consume queue points past
(normally nothing is left to do; RocketMQ re-checks its last three files), then dispatch from there.

After a crash (abort marker present): validate, with CRCs, from the last file whose first message is older
than the checkpoint's ``min(physic, logics, index) - 3 s``, dispatching each valid record on the way (the
consume queues and the index skip what they already have). The first invalid record ends the log: the rest
of that file is zeroed, later files deleted, and consume-queue/index entries pointing at or past it removed.

Either way, a consume queue found with a hole (a unit missing before one being added) is refilled by a
second pass from the start of the log for that queue only (offsets whose message is gone get blank units).
Finally the queue-offset table is rebuilt from the consume queues and their min offsets corrected against
the first commit-log byte.
"""

from __future__ import annotations

import logging

from rocketq.store.checkpoint import StoreCheckpoint
from rocketq.store.commit_log import CommitLog
from rocketq.store.consume_queue_table import ConsumeQueueTable
from rocketq.store.dispatcher import Dispatcher
from rocketq.store.index_service import IndexService

log = logging.getLogger(__name__)


def recover(
    commit_log: CommitLog,
    cq_table: ConsumeQueueTable,
    index: IndexService | None,
    dispatcher: Dispatcher,
    checkpoint: StoreCheckpoint,
    *,
    last_exit_ok: bool,
    check_crc: bool,
) -> None:
    cq_table.recover()
    files = commit_log.mfq.mapped_files
    if not files:
        if len(cq_table) or (index is not None and index.files):
            log.warning("recovery.no_commit_log: deleting consume queues and index")
            cq_table.destroy()
            if index is not None:
                index.destroy()
        commit_log.set_end(0)
    elif last_exit_ok:
        # Trust the consume queues: validate only what follows the last message they point at (normally
        # nothing), unless that is not a record boundary in the last three files; then the whole last file.
        last_start = files[-1].file_from_offset
        trusted = cq_table.max_physic_offset()
        recent = files[max(0, len(files) - 3)].file_from_offset
        start = trusted if recent <= trusted <= commit_log.get_max_offset() else last_start
        end = commit_log.scan(start, check_crc, None)
        if end == start and start != last_start and not commit_log.is_zero_at(start):
            log.warning("recovery.untrusted_queue_end offset=%d: validating the last file", start)
            end = commit_log.scan(last_start, check_crc, None)
        cut_tail(commit_log, cq_table, index, end)
        if index is not None:
            index.trust_last()
        reput_from = max(cq_table.max_physic_offset(), commit_log.get_min_offset())
        if reput_from < end:
            commit_log.scan(reput_from, False, dispatcher.dispatch_record, stop_offset=end)
        log.info("recovery.normal end=%d reput_from=%d", end, reput_from)
    else:
        start = files[commit_log.first_file_for_recovery(checkpoint.min_timestamp_index())].file_from_offset
        end = commit_log.scan(start, check_crc, dispatcher.dispatch_record)
        cut_tail(commit_log, cq_table, index, end)
        log.warning("recovery.abnormal from=%d end=%d", start, end)

    if dispatcher.gaps:
        only = set(dispatcher.gaps)
        dispatcher.gaps.clear()
        log.warning("recovery.refill queues=%s", sorted(only))
        commit_log.scan(commit_log.get_min_offset(), False, lambda info, mf: dispatcher.refill_record(info, mf, only))

    rebuild_queue_offsets(commit_log, cq_table)
    cq_table.correct_min_offsets(commit_log.get_min_offset())
    dispatcher.last_dispatched_store_timestamp = commit_log.last_store_timestamp


def rebuild_queue_offsets(commit_log: CommitLog, cq_table: ConsumeQueueTable) -> None:
    """The next queue offset of every queue, from its consume queue (after recovery or a cut tail)."""
    commit_log.topic_queue_table = {
        (cq.topic, cq.queue_id): cq.max_offset_in_queue for cq in cq_table if cq.max_offset_in_queue > 0
    }


def cut_tail(commit_log: CommitLog, cq_table: ConsumeQueueTable, index: IndexService | None, end: int) -> None:
    """End the log at ``end``: the commit log, and the consume-queue units and index entries at or past it
    (recovery's damaged tail, and a replica's divergent one)."""
    commit_log.set_end(end)
    cq_table.truncate_dirty(end)
    if index is not None:
        index.truncate(end)  # entries for lost messages, and torn entries past the count
