"""Delayed delivery by level (RocketMQ 4.9's ScheduleMessageService).

The store rewrites a message with ``DELAY`` = L > 0 to ``SCHEDULE_TOPIC_XXXX``, queue L − 1, with its real topic
and queue in ``REAL_TOPIC``/``REAL_QID``, and puts its delivery time in the consume-queue tags slot. One
task walks each level's queue in order (messages of one level become due in store order) and re-puts due
messages to their real topic and queue with ``DELAY`` removed. Progress per level is persisted to
``config/delayOffset.json`` so a restart neither loses nor repeats (beyond the last persisted batch)
deliveries.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.entries import INT64, BadEntry, int_key_error, prune_map
from rocketq.broker.managers.persist import PersistedLoopService
from rocketq.broker.managers.topic_manager import SCHEDULE_TOPIC
from rocketq.broker.services.requeue import restore
from rocketq.protocol.message import (
    PROP_DELAY,
    PROP_REAL_QID,
    PROP_REAL_TOPIC,
    decode_record,
)
from rocketq.store import GetMessageStatus

log = logging.getLogger("rocketq.broker.services.schedule")


class ScheduleService(PersistedLoopService):
    def __init__(self, ctx: BrokerContext, interval: float = 0.1) -> None:
        path = Path(ctx.config.storePathRootDir) / "config" / "delayOffset.json"
        super().__init__(path, ctx.persister, "schedule")
        self._ctx = ctx
        self.levels = ctx.config.delay_levels_ms()
        self.interval = interval
        self.offsets: dict[int, int] = {}

    def decode(self, obj: dict[str, Any]) -> None:
        if obj:
            self.offsets = {int(k): int(v) for k, v in (obj.get("offsetTable") or {}).items()}

    def check(self, doc: dict[str, Any]) -> list[BadEntry]:
        return prune_map(doc, "offsetTable", lambda level, offset: int_key_error(level) or INT64(offset))

    def snapshot(self) -> Callable[[], dict[str, object]]:
        offsets = dict(self.offsets)
        return lambda: {"offsetTable": {str(k): v for k, v in sorted(offsets.items())}}

    async def _loop(self) -> None:
        while True:
            try:
                delivered = self.deliver_due()
            except Exception:
                log.exception("schedule.failed")
                delivered = 0
            self.persist_if_due()
            if not delivered:
                await asyncio.sleep(self.interval)
            else:
                await asyncio.sleep(0)

    def deliver_due(self, limit: int = 256) -> int:
        """Re-put every due message (at most ``limit`` per level per call); returns how many moved."""
        store = self._ctx.store
        now_ms = int(time.time() * 1000)
        moved = 0
        for level, delay_ms in enumerate(self.levels, start=1):
            qid = level - 1
            offset = self.offsets.get(level, 0)
            min_offset = store.get_min_offset_in_queue(SCHEDULE_TOPIC, qid)
            offset = max(offset, min_offset)
            for _ in range(limit):
                result = store.get_message(SCHEDULE_TOPIC, qid, offset, 1, None, counted=False)
                try:
                    if result.status != GetMessageStatus.FOUND:
                        if result.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY):
                            offset = result.next_begin_offset
                            continue
                        break
                    rec = decode_record(result.buffers[0].view)
                finally:
                    result.release()
                if rec.store_timestamp + delay_ms > now_ms:
                    break
                self._reput(rec)
                offset += 1
                moved += 1
                self._dirty = True
            self.offsets[level] = offset
        return moved

    def _reput(self, rec: object) -> None:
        from rocketq.protocol.message import MessageRecord

        assert isinstance(rec, MessageRecord)
        props = dict(rec.properties)
        props.pop(PROP_DELAY, None)
        real_topic = props.get(PROP_REAL_TOPIC, rec.topic)
        try:
            real_qid = int(props.get(PROP_REAL_QID, "0"))
        except ValueError:
            real_qid = 0
        msg = restore(rec, real_topic, real_qid, props, prepared_transaction_offset=rec.prepared_transaction_offset)
        result = self._ctx.store.put_message(msg)
        if result.status.name != "PUT_OK":
            log.error("schedule.reput_failed topic=%s status=%s", real_topic, result.status.name)
