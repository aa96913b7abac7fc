"""Builds the derived data (consume queues and index) for each stored message (RocketMQ's reput dispatchers).

Every consume-queue unit and every index key the store builds goes through ``Dispatcher``, by one of two doors
that build the same data (``tests/unit/store/test_dispatch.py`` holds them to it):

* **appended** — the master's append path, in the writer's thread under the put lock, right after the
  record was written, from the fields the writer has at hand (nothing is read back):
  ``dispatch_appended`` per message of a run, then ``finish_appended`` once per run (it hands the run's
  index keys over in one call); ``dispatch_appended_batch`` for a SEND_BATCH_MESSAGE batch, whose units
  and keys ``appendcodec.write_batch`` already packed.
* **record** — a record that is already in the commit log, decoded from its bytes: recovery's replay and,
  next, a slave's reput of the bytes its master sent (written at the master's offsets, so the same units
  and keys follow). ``dispatch_record`` skips what is already there — a consume queue ignores offsets it
  has, the index ignores messages at or below the last one it indexed — so a replay may overlap what
  was dispatched before. A queue found with a hole is left for ``refill_record`` (recovery's second pass).

Units reach each consume queue in queue-offset order because both doors run one message at a time in
commit-log order (under the put lock, or in the single recovery/reput thread).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from rocketq.protocol.message import (
    PROP_KEYS,
    PROP_UNIQ_KEY,
    SYSFLAG_TX_COMMIT,
    SYSFLAG_TX_MASK,
    SYSFLAG_TX_NOT,
    SYSFLAG_TX_PREPARED,
    SYSFLAG_TX_ROLLBACK,
    decode_properties,
)
from rocketq.store.appendcodec import index_entries
from rocketq.store.consume_queue import PUT_GAP, PUT_WRITTEN
from rocketq.store.consume_queue_table import ConsumeQueueTable
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file import MappedFile
from rocketq.store.record import RecordInfo
from rocketq.store.tags import compute_tags_code

log = logging.getLogger(__name__)

QueueKey = tuple[str, int]


def goes_to_consume_queue(sys_flag: int) -> bool:
    """Prepared and rolled-back transactional messages get no consume-queue unit."""
    tx = sys_flag & SYSFLAG_TX_MASK
    return tx in (SYSFLAG_TX_NOT, SYSFLAG_TX_COMMIT)


class Dispatcher:
    """The consume-queue and index writer of a store; see the module docstring for its two doors."""

    def __init__(
        self,
        cq_table: ConsumeQueueTable,
        index: IndexService | None,
        delay_table: Mapping[int, int],
    ) -> None:
        self.cq_table = cq_table
        self.index = index
        self.delay_table = delay_table
        #: store time of the newest message dispatched (the logics checkpoint mark)
        self.last_dispatched_store_timestamp = 0
        self._topics: dict[bytes, str] = {}
        #: queues found with a hole during the last replay (they need a replay from the log's start)
        self.gaps: set[QueueKey] = set()
        #: index keys ([hash, phys, ...]) of the run being appended, handed over by finish_appended (the plain-run
        #: writer extends it in place)
        self.run_keys: list[int] = []

    # ======================================================================== appended (the master)

    def index_prefix(self, topic: str) -> int:
        """The unsigned Java hash of ``topic#`` that batch keys are hashed from; -1 when there is no index."""
        index = self.index
        return -1 if index is None else index.prefix_hash(topic)

    def dispatch_appended(
        self,
        topic: str,
        queue_id: int,
        phys: int,
        size: int,
        tags_code: int,
        queue_offset: int,
        sys_flag: int,
        uniq_key: str | None,
        keys: str | None,
    ) -> bool:
        """One message of a run, just appended: its consume-queue unit now, its index keys at ``finish_appended``.

        Returns whether it got a unit (not for prepared or rolled-back transactional messages), that is
        whether a consumer can see it.
        """
        index = self.index
        # the keys first: a consume-queue write that fails must not lose them (the store stops writing then)
        if index is not None and (uniq_key or keys) and sys_flag & SYSFLAG_TX_MASK != SYSFLAG_TX_ROLLBACK:
            self.run_keys += index_entries(index.prefix_hash(topic), phys, uniq_key, keys)
        if sys_flag & SYSFLAG_TX_PREPARED:  # a half (0x4) or a rollback (0xC): no unit
            return False
        cq_table = self.cq_table
        (cq_table.queues.get((topic, queue_id)) or cq_table.find_or_create(topic, queue_id)).put(
            phys, size, tags_code, queue_offset
        )
        return True

    def finish_appended(self, last_phys: int, store_timestamp: int) -> None:
        """End of a run whose last message is at ``last_phys``: its index keys go to the index in one call."""
        keys, self.run_keys = self.run_keys, []
        index = self.index
        if index is not None:
            index.build_index_batch(keys, last_phys, store_timestamp)
        self.last_dispatched_store_timestamp = store_timestamp

    def dispatch_appended_batch(
        self,
        topic: str,
        queue_id: int,
        units: bytes,
        first_queue_offset: int,
        index_keys: list[int],
        last_phys: int,
        store_timestamp: int,
    ) -> None:
        """A batch just appended: ``units`` packed ``>qiq`` for consecutive queue offsets from
        ``first_queue_offset``, ``index_keys`` hashed from ``index_prefix(topic)`` (see ``appendcodec``)."""
        self.cq_table.find_or_create(topic, queue_id).put_packed(units, first_queue_offset)
        index = self.index
        if index is not None:
            index.build_index_batch(index_keys, last_phys, store_timestamp)
        self.last_dispatched_store_timestamp = store_timestamp

    # ================================================================ record (recovery, a slave's reput)

    def topic_of(self, raw: bytes) -> str:
        t = self._topics.get(raw)
        if t is None:
            t = self._topics[raw] = raw.decode("utf-8", "replace")
        return t

    def dispatch_record(self, info: RecordInfo, mf: MappedFile) -> int | None:
        """A validated record in ``mf`` → its unit and index keys, unless they already exist.

        Returns the tags code of the unit it wrote (what an arrival listener needs, with
        ``topic_of(info.topic)``, ``info.queue_id``, ``info.queue_offset + 1`` and ``info.store_timestamp``);
        None when it wrote none: a transactional half or rollback, a unit already there, or a queue with a
        hole (recorded in ``gaps`` for ``refill_record``).
        """
        topic = self.topic_of(info.topic)
        props: dict[str, str] | None = None
        written: int | None = None
        if goes_to_consume_queue(info.sys_flag) and (topic, info.queue_id) not in self.gaps:
            cq = self.cq_table.find_or_create(topic, info.queue_id)
            if info.queue_offset >= cq.max_offset_in_queue:  # decode nothing for what the queue has
                props = self._props(info, mf)
                tags = compute_tags_code(topic, props, info.store_timestamp, self.delay_table)
                outcome = cq.put(info.phys, info.size, tags, info.queue_offset)
                if outcome == PUT_WRITTEN:
                    written = tags
                elif outcome == PUT_GAP:
                    self.gaps.add((topic, info.queue_id))
        index = self.index
        if index is not None and info.phys >= index.last_indexed_phys:
            if props is None:
                props = self._props(info, mf)
            index.build_index(
                topic, info.phys, info.store_timestamp, info.sys_flag, props.get(PROP_UNIQ_KEY), props.get(PROP_KEYS)
            )
        self.last_dispatched_store_timestamp = info.store_timestamp
        return written

    def refill_record(self, info: RecordInfo, mf: MappedFile, queues: set[QueueKey]) -> None:
        """Recovery's second pass, from the log's first record: units for ``queues`` only (found with a hole).

        Offsets whose message is gone for good get blank units. The index is not touched.
        """
        topic = self.topic_of(info.topic)
        if (topic, info.queue_id) not in queues or not goes_to_consume_queue(info.sys_flag):
            return
        cq = self.cq_table.find_or_create(topic, info.queue_id)
        if info.queue_offset < cq.max_offset_in_queue:
            return
        tags = compute_tags_code(topic, self._props(info, mf), info.store_timestamp, self.delay_table)
        if cq.put(info.phys, info.size, tags, info.queue_offset) == PUT_GAP:
            cq.pad_to(info.queue_offset)
            cq.put(info.phys, info.size, tags, info.queue_offset)

    @staticmethod
    def _props(info: RecordInfo, mf: MappedFile) -> dict[str, str]:
        if info.props_len == 0:
            return {}
        pos = info.props_pos  # position inside the file
        return decode_properties(mf.mm[pos : pos + info.props_len].decode("utf-8", "replace"))
