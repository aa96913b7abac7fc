"""Arbitrary delivery times per message (RocketMQ 5's ``TIMER_DELIVER_MS`` / ``TIMER_DELAY_SEC`` /
``TIMER_DELAY_MS``), beyond 4.x's fixed delay levels.

A timed message is stored under the system topic ``rmq_sys_wheel_timer`` (queue 0) with its real topic and
queue in ``REAL_TOPIC``/``REAL_QID`` and its absolute due time in ``TIMER_OUT_MS``. The timer service loads
pending messages into a heap ordered by due time and re-puts the due ones to their real queue. It does not
poll: it sleeps until the earliest due time, or until ``notify_stored`` (the store's arrival listener, for a
put to the timer topic) wakes it; ``scheduleIntervalMills`` is only the retry delay after a failed pass.
Progress is a watermark (every timer-queue offset below it is delivered) plus the set
of delivered offsets above it, persisted to ``config/timerProgress.json`` about once a second and at
shutdown; after a crash, messages delivered in the last second before it may be delivered again
(at-least-once, like RocketMQ's timer).
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.persist import PersistedLoopService
from rocketq.broker.services.requeue import restore
from rocketq.broker.services.wake import WakeSignal
from rocketq.errors import MessageIllegalError
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE
from rocketq.protocol.message import (
    PROP_REAL_QID,
    PROP_REAL_TOPIC,
    PROP_TIMER_DELAY_MS,
    PROP_TIMER_DELAY_SEC,
    PROP_TIMER_DELIVER_MS,
    decode_record,
)
from rocketq.store import GetMessageStatus, StoreMessage

log = logging.getLogger("rocketq.broker.services.timer")

TIMER_TOPIC = "rmq_sys_wheel_timer"
PROP_TIMER_OUT_MS = "TIMER_OUT_MS"
TIMER_PROPS = (PROP_TIMER_DELIVER_MS, PROP_TIMER_DELAY_SEC, PROP_TIMER_DELAY_MS)
# RocketMQ 5's default timerMaxDelaySec: three days.
MAX_DELAY_MS = 3 * 24 * 3600 * 1000


def due_time_ms(props: dict[str, str], now_ms: int) -> int | None:
    """The absolute delivery time a message asks for, or None if it asks for none."""
    for key, scale, absolute in (
        (PROP_TIMER_DELIVER_MS, 1, True),
        (PROP_TIMER_DELAY_SEC, 1000, False),
        (PROP_TIMER_DELAY_MS, 1, False),
    ):
        raw = props.get(key)
        if raw is None:
            continue
        try:
            value = int(raw)
        except ValueError:
            raise MessageIllegalError(f"property {key}={raw!r} is not an integer") from None
        due = value if absolute else now_ms + value * scale
        if due - now_ms > MAX_DELAY_MS:
            raise MessageIllegalError(f"{key}: delivery more than {MAX_DELAY_MS // 1000} s ahead is not allowed")
        return due
    return None


class TimerService(PersistedLoopService):
    def __init__(self, ctx: BrokerContext, interval: float = 0.1) -> None:
        path = Path(ctx.config.storePathRootDir) / "config" / "timerProgress.json"
        super().__init__(path, ctx.persister, "timer")
        self._ctx = ctx
        self.interval = interval
        self.watermark = 0
        self.delivered: set[int] = set()
        self._loaded_until = 0
        self._heap: list[tuple[int, int, int]] = []  # (due ms, timer-queue offset, commit-log offset)
        self._wake = WakeSignal()

    # ------------------------------------------------------------------------------------------ put side

    def to_timer(self, msg: StoreMessage, now_ms: int | None = None) -> StoreMessage:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        due = due_time_ms(msg.properties, now_ms)
        if due is None:
            return msg
        if due <= now_ms:
            for key in TIMER_PROPS:
                msg.properties.pop(key, None)
            return msg  # already due: an ordinary message
        self._ctx.topics.create_system_if_absent(TIMER_TOPIC, 1, PERM_READ | PERM_WRITE)
        msg.properties[PROP_REAL_TOPIC] = msg.topic
        msg.properties[PROP_REAL_QID] = str(msg.queue_id)
        msg.properties[PROP_TIMER_OUT_MS] = str(due)
        msg.topic = TIMER_TOPIC
        msg.queue_id = 0
        msg.tags_code = None
        return msg

    # ------------------------------------------------------------------------------------ persistence

    def decode(self, obj: dict[str, Any]) -> None:
        self.watermark = int(obj.get("watermark", 0))
        self.delivered = {int(x) for x in obj.get("delivered", []) if int(x) >= self.watermark}

    def load(self) -> None:
        super().load()
        self._loaded_until = self.watermark

    def snapshot(self) -> Callable[[], dict[str, object]]:
        watermark, delivered = self.watermark, sorted(self.delivered)
        return lambda: {"watermark": watermark, "delivered": delivered}

    # --------------------------------------------------------------------------------------- delivery

    def start(self) -> None:
        self._wake.bind()
        super().start()

    def notify_stored(self) -> None:
        """A message was put to the timer topic (any thread): wake the task if it is waiting."""
        self._wake.set()

    async def _loop(self) -> None:
        while True:
            self._wake.clear()  # before the pass: a put during it ends the wait below at once
            timeout: float | None
            try:
                self.tick()
                timeout = None if not self._heap else max(0.001, self._heap[0][0] / 1000 - time.time())
            except Exception:
                log.exception("timer.failed")
                timeout = self.interval
            if self._dirty:  # unsaved progress: come back for persist_if_due (it writes at most once a second)
                timeout = 1.0 if timeout is None else min(timeout, 1.0)
            await self._wake.wait(timeout)

    def tick(self, now_ms: int | None = None) -> int:
        """Load newly stored timed messages and deliver the due ones; returns how many were delivered."""
        self._load_new()
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        moved = 0
        while self._heap and self._heap[0][0] <= now_ms:
            _, queue_offset, phys = heapq.heappop(self._heap)
            if queue_offset in self.delivered or queue_offset < self.watermark:
                continue
            self._deliver(phys)
            self.delivered.add(queue_offset)
            moved += 1
        if moved:
            while self.watermark in self.delivered:
                self.delivered.discard(self.watermark)
                self.watermark += 1
            self._dirty = True
        self.persist_if_due()
        return moved

    def pending(self) -> int:
        return len(self._heap)

    def _load_new(self) -> None:
        store = self._ctx.store
        if self._ctx.topics.get(TIMER_TOPIC) is None:
            return
        offset = max(self._loaded_until, store.get_min_offset_in_queue(TIMER_TOPIC, 0))
        while True:
            result = store.get_message(TIMER_TOPIC, 0, offset, 32, None, counted=False)
            try:
                if result.status != GetMessageStatus.FOUND:
                    break
                for buf in result.buffers:
                    rec = decode_record(buf.view, with_body=False)
                    if rec.queue_offset not in self.delivered and rec.queue_offset >= self.watermark:
                        due = int(rec.properties.get(PROP_TIMER_OUT_MS, "0") or 0)
                        heapq.heappush(self._heap, (due, rec.queue_offset, rec.commit_log_offset))
            finally:
                result.release()
            offset = result.next_begin_offset
        self._loaded_until = offset

    def _deliver(self, phys: int) -> None:
        rec = self._ctx.store.look_message_by_offset(phys)
        if rec is None:
            log.error("timer.lost offset=%s (removed by retention before its time)", phys)
            return
        props = dict(rec.properties)
        for key in (*TIMER_PROPS, PROP_TIMER_OUT_MS):
            props.pop(key, None)
        msg = restore(rec, props.get(PROP_REAL_TOPIC, rec.topic), int(props.get(PROP_REAL_QID, "0") or 0), props)
        result = self._ctx.store.put_message(msg)
        if result.status.name != "PUT_OK":
            log.error("timer.reput_failed topic=%s status=%s", msg.topic, result.status.name)
