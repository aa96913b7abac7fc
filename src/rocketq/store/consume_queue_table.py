"""All consume queues of the store, by (topic, queue id): ``<root>/consumequeue/<topic>/<queueId>/``."""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Iterator

from rocketq.store.config import Clock, system_clock
from rocketq.store.consume_queue import ConsumeQueue

log = logging.getLogger(__name__)


class ConsumeQueueTable:
    def __init__(self, root_dir: str, mapped_file_size: int, clock: Clock = system_clock) -> None:
        self.root_dir = root_dir
        self.mapped_file_size = mapped_file_size
        self._clock = clock
        #: (topic, queue id) → queue; replaced, never changed in place, so readers take it without the lock
        #: (the append path reads it for every message)
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}
        self._by_topic: dict[str, dict[int, ConsumeQueue]] = {}
        self._lock = threading.Lock()

    def load(self) -> bool:
        if not os.path.isdir(self.root_dir):
            return True
        for topic in sorted(os.listdir(self.root_dir)):
            topic_dir = os.path.join(self.root_dir, topic)
            if not os.path.isdir(topic_dir):
                continue
            for qid in sorted(os.listdir(topic_dir)):
                if not qid.lstrip("-").isdigit():
                    continue
                cq = ConsumeQueue(topic, int(qid), self.root_dir, self.mapped_file_size, self._clock)
                if not cq.load():
                    return False
                self._add(cq)
        return True

    def _add(self, cq: ConsumeQueue) -> None:
        self.queues = {**self.queues, (cq.topic, cq.queue_id): cq}
        self._by_topic.setdefault(cq.topic, {})[cq.queue_id] = cq

    def recover(self) -> int:
        """Recover every queue; returns the highest commit-log offset any of them points past (or -1)."""
        max_phys = -1
        for cq in self.queues.values():
            cq.recover()
            max_phys = max(max_phys, cq.max_physic_offset)
        return max_phys

    # -------------------------------------------------------------------------------------- lookup

    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.queues.get((topic, queue_id))

    def get(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.queues.get((topic, queue_id))

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = self.queues.get((topic, queue_id))
        if cq is not None:
            return cq
        with self._lock:
            cq = self.queues.get((topic, queue_id))
            if cq is None:
                cq = ConsumeQueue(topic, queue_id, self.root_dir, self.mapped_file_size, self._clock)
                self._add(cq)
            return cq

    def __iter__(self) -> Iterator[ConsumeQueue]:
        return iter(list(self.queues.values()))

    def __len__(self) -> int:
        return len(self.queues)

    def topics(self) -> list[str]:
        return sorted(self._by_topic)

    def queue_ids(self, topic: str) -> list[int]:
        return sorted(self._by_topic.get(topic, {}))

    def max_physic_offset(self) -> int:
        return max((cq.max_physic_offset for cq in self.queues.values()), default=-1)

    # ----------------------------------------------------------------------------------- mutation

    def delete_topic(self, topic: str) -> bool:
        with self._lock:
            queues = self._by_topic.pop(topic, None)
            if queues is None:
                return False
            self.queues = {k: v for k, v in self.queues.items() if k[0] != topic}
        for cq in queues.values():
            cq.destroy()
        shutil.rmtree(os.path.join(self.root_dir, topic), ignore_errors=True)
        return True

    def delete_queue(self, topic: str, queue_id: int) -> bool:
        """Drop one queue (its files too); the topic goes when its last queue does."""
        with self._lock:
            queues = self._by_topic.get(topic)
            cq = queues.pop(queue_id, None) if queues is not None else None
            if cq is None:
                return False
            if not queues:
                del self._by_topic[topic]
            self.queues = {k: v for k, v in self.queues.items() if k != (topic, queue_id)}
        cq.destroy()
        shutil.rmtree(os.path.join(self.root_dir, topic, str(queue_id)), ignore_errors=True)
        if topic not in self._by_topic:
            shutil.rmtree(os.path.join(self.root_dir, topic), ignore_errors=True)
        return True

    def destroy(self) -> None:
        with self._lock:
            queues = list(self.queues.values())
            self.queues = {}
            self._by_topic = {}
        for cq in queues:
            cq.destroy()

    def truncate_dirty(self, phys_offset: int) -> None:
        for cq in self.queues.values():
            if cq.max_physic_offset > phys_offset:
                cq.truncate_dirty(phys_offset)

    def correct_min_offsets(self, phy_min_offset: int) -> None:
        for cq in self.queues.values():
            cq.correct_min_offset(phy_min_offset)

    def delete_expired(self, phy_min_offset: int) -> int:
        return sum(cq.delete_expired(phy_min_offset) for cq in self.queues.values())

    def flush(self, least_pages: int) -> None:
        for cq in self.queues.values():
            cq.flush(least_pages)

    def flush_all(self) -> None:
        for cq in self.queues.values():
            cq.flush_all()

    def retry_pending_destroy(self, interval_forcibly_ms: int) -> None:
        for cq in self.queues.values():
            if cq.mfq.pending_destroy_count:
                cq.mfq.retry_pending_destroy(interval_forcibly_ms)

    def close(self) -> None:
        for cq in self.queues.values():
            cq.close()
