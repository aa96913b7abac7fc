"""Builds the derived data (consume queues and index) for each stored message (RocketMQ's reput dispatchers).

The store dispatches synchronously right after each append, in the writer's thread and under the put
lock, so units reach each consume queue in queue-offset order. Recovery replays the commit log through
``dispatch_record``, which skips what is already there: a consume queue ignores offsets it already has,
the index ignores messages at or below the last one it indexed.
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
    decode_properties,
)
from rocketq.store.consume_queue import PUT_GAP
from rocketq.store.consume_queue_table import ConsumeQueueTable
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file import MappedFile
from rocketq.store.record import RecordInfo
from rocketq.store.tags import compute_tags_code

log = logging.getLogger(__name__)


def goes_to_consume_queue(sys_flag: int) -> bool:
    """Prepared and rolled-back transactional messages get no consume-queue unit."""
    tx = sys_flag & SYSFLAG_TX_MASK
    return tx in (SYSFLAG_TX_NOT, SYSFLAG_TX_COMMIT)


class Dispatcher:
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
        self.gaps: set[tuple[str, int]] = set()

    def dispatch(
        self,
        topic: str,
        queue_id: int,
        phys: int,
        size: int,
        tags_code: int,
        store_timestamp: int,
        queue_offset: int,
        sys_flag: int,
        uniq_key: str | None,
        keys: str | None,
    ) -> None:
        """Append path: the caller has every field at hand."""
        tx = sys_flag & SYSFLAG_TX_MASK
        if tx in (SYSFLAG_TX_NOT, SYSFLAG_TX_COMMIT):
            cq = self.cq_table.get(topic, queue_id) or self.cq_table.find_or_create(topic, queue_id)
            cq.put(phys, size, tags_code, queue_offset)
        index = self.index
        if index is not None:
            index.build_index(topic, phys, store_timestamp, sys_flag, uniq_key, keys)
        self.last_dispatched_store_timestamp = store_timestamp

    def dispatch_batch(
        self,
        topic: str,
        queue_id: int,
        units: list[tuple[int, int, int]],
        first_queue_offset: int,
        store_timestamp: int,
        sys_flag: int,
        keys: list[tuple[str | None, str | None]],
    ) -> None:
        if goes_to_consume_queue(sys_flag):
            self.cq_table.find_or_create(topic, queue_id).put_many(units, first_queue_offset)
        if self.index is not None:
            for (phys, _, _), (uniq_key, k) in zip(units, keys, strict=True):
                self.index.build_index(topic, phys, store_timestamp, sys_flag, uniq_key, k)
        self.last_dispatched_store_timestamp = store_timestamp

    def topic_of(self, raw: bytes) -> str:
        t = self._topics.get(raw)
        if t is None:
            t = self._topics[raw] = raw.decode("utf-8", "replace")
        return t

    def dispatch_record(
        self, info: RecordInfo, mf: MappedFile, only: set[tuple[str, int]] | None = None
    ) -> None:
        """Replay path: dispatch a validated record unless its units/entries already exist.

        ``only`` restricts the replay to those queues (and skips the index): used to refill queues that
        were found with a hole.
        """
        topic = self.topic_of(info.topic)
        props: dict[str, str] | None = None
        if goes_to_consume_queue(info.sys_flag):
            key = (topic, info.queue_id)
            if (only is None and key not in self.gaps) or (only is not None and key in only):
                cq = self.cq_table.find_or_create(topic, info.queue_id)
                if info.queue_offset >= cq.max_offset_in_queue:
                    props = self._props(info, mf)
                    tags = compute_tags_code(topic, props, info.store_timestamp, self.delay_table)
                    if cq.put(info.phys, info.size, tags, info.queue_offset) == PUT_GAP:
                        if only is None:
                            self.gaps.add(key)
                        else:  # refill pass: the messages before this one are gone for good
                            cq.pad_to(info.queue_offset)
                            cq.put(info.phys, info.size, tags, info.queue_offset)
        if only is None and self.index is not None and info.phys >= self.index.last_indexed_phys:
            if props is None:
                props = self._props(info, mf)
            self.index.build_index(
                topic, info.phys, info.store_timestamp, info.sys_flag, props.get(PROP_UNIQ_KEY), props.get(PROP_KEYS)
            )
        self.last_dispatched_store_timestamp = info.store_timestamp

    @staticmethod
    def _props(info: RecordInfo, mf: MappedFile) -> dict[str, str]:
        if info.props_len == 0:
            return {}
        pos = info.props_pos  # position inside the file
        return decode_properties(mf.mm[pos : pos + info.props_len].decode("utf-8", "replace"))
