"""The revive loop and the start-up replay of the revive topic.

Revive: every checkpoint whose invisible time is over gives its un-acked messages back — into the group's
retry topic with ``reconsumeTimes + 1``, or into ``%DLQ%group`` once they have been delivered the group's max
attempts — then a revive mark (``rv``) is stored and the checkpoint is settled. Each revive queue's offset for
``CID_RMQ_SYS_REVIVE_GROUP`` moves to its lowest still-pending checkpoint; it is persisted in the same
consumerOffset.json snapshot as the groups' pop positions, so the two always agree.

Replay (``load``): every revive queue is read from that offset; checkpoints, acks and revive marks are paired
again, and a group's pop position is moved past every checkpoint found (the offsets file may be older than the
last pops). So a kill -9 loses no pop state: un-acked messages come back, acked ones do not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from rocketq.broker.context import BrokerContext
from rocketq.broker.pop.records import (
    ACK_TAG,
    CK_TAG,
    REVIVE_GROUP,
    REVIVED_TAG,
    Checkpoint,
    CkKey,
    parse_ack,
    revived_json,
)
from rocketq.broker.pop.service import PopService, now_ms
from rocketq.broker.pop.util import origin_topic
from rocketq.broker.services.requeue import read_queue

log = logging.getLogger("rocketq.broker.pop.revive")


class ReviveService:
    def __init__(self, ctx: BrokerContext, pop: PopService, *, interval: float = 1.0) -> None:
        self._ctx = ctx
        self._pop = pop
        #: the longest sleep between passes (a stored checkpoint due earlier wakes the loop)
        self.interval = interval
        self._wake = asyncio.Event()
        pop.on_checkpoint.append(self._wake)
        self._task: asyncio.Task[None] | None = None
        self.revived = 0
        self.loaded = False

    # ------------------------------------------------------------------------------------------- replay

    def load(self) -> int:
        """Rebuild the pending checkpoints from the revive topic (once); returns how many are pending."""
        ctx, pop = self._ctx, self._pop
        if self.loaded:
            return len(pop.pending)
        self.loaded = True
        # the store, not the topic table, says whether there are records: a kill -9 may have come before the
        # table (written in the background) had the revive topic
        if not any(ctx.store.get_max_offset_in_queue(pop.revive_topic, q) > 0 for q in range(pop.revive_queue_num)):
            return 0
        ctx.topics.create_system_if_absent(pop.revive_topic, pop.revive_queue_num)
        cks: dict[CkKey, Checkpoint] = {}
        acked: dict[CkKey, set[int]] = {}
        settled: set[CkKey] = set()
        for qid in range(pop.revive_queue_num):
            start = max(ctx.offsets.query(REVIVE_GROUP, pop.revive_topic, qid), 0)
            end = ctx.store.get_max_offset_in_queue(pop.revive_topic, qid)
            offset = start
            while offset < end:
                records = read_queue(ctx.store, pop.revive_topic, qid, offset, 256)
                if not records:
                    break
                for rec in records:
                    try:
                        if rec.tags == CK_TAG:
                            ck = Checkpoint.from_json(rec.body, rec.queue_offset)
                            cks[ck.key] = ck
                        elif rec.tags == ACK_TAG:
                            key, acked_offset = parse_ack(rec.body)
                            acked.setdefault(key, set()).add(acked_offset)
                        elif rec.tags == REVIVED_TAG:
                            settled.add(parse_ack(rec.body)[0])
                    except (ValueError, KeyError, TypeError) as exc:
                        log.error("revive.bad_record queue=%s offset=%s error=%s", qid, rec.queue_offset, exc)
                offset = records[-1].queue_offset + 1
        for key, ck in cks.items():
            # the group's position passes every message a stored checkpoint handed out
            position = ctx.offsets.query(key.group, key.topic, key.queue_id)
            if ck.offsets and max(ck.offsets) + 1 > position:
                ctx.offsets.commit(key.group, key.topic, key.queue_id, max(ck.offsets) + 1)
            pop.seen.add((key.group, origin_topic(key.group, key.topic)))
            if key not in settled:
                pop.pending.add(ck, acked.get(key))
        self._advance()
        log.info("revive.loaded pending=%s records=%s", len(pop.pending), len(cks))
        return len(pop.pending)

    # ------------------------------------------------------------------------------------------- loop

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="pop-revive")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            try:
                self.revive_due()
            except Exception:  # a bad pass is logged and retried; the loop never dies
                log.exception("revive.pass_failed")
            due = self._pop.pending.next_due_ms()
            sleep = self.interval if due is None else min(self.interval, max(0.0, (due - now_ms()) / 1000.0))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(sleep, 0.005))

    def revive_due(self) -> int:
        """Revive every checkpoint that is due now; returns how many messages came back."""
        pop = self._pop
        now = now_ms()
        back = 0
        for ck, unacked in pop.pending.pop_due(now):
            key = ck.key
            origin = origin_topic(key.group, key.topic)
            cfg = self._ctx.groups.table.get(key.group)
            max_attempts = cfg.max_delivery_attempts if cfg is not None else 17
            ok = True
            for offset in unacked:
                rec = pop.read(key.topic, key.queue_id, offset)
                if rec is None:
                    log.warning("revive.gone topic=%s queue=%s offset=%s", key.topic, key.queue_id, offset)
                    continue
                if rec.reconsume_times + 1 >= max_attempts:
                    ok = pop.to_dead_letter(rec, key.group, origin) and ok
                else:
                    ok = pop.to_retry(rec, key.group, origin, key.pop_time) and ok
                back += 1
            if not ok:
                pop.pending.retry_at(key, now + 1000)  # the store refused: try again in a second
                continue
            pop.store_record(ck.revive_qid, REVIVED_TAG, revived_json(key))
            pop.pending.remove(key)
        if back:
            self.revived += back
        self._advance()
        return back

    def _advance(self) -> None:
        ctx, pop = self._ctx, self._pop
        if ctx.topics.get(pop.revive_topic) is None:
            return
        for qid in range(pop.revive_queue_num):
            lowest = pop.pending.lowest_stored(qid)
            target = lowest if lowest is not None else ctx.store.get_max_offset_in_queue(pop.revive_topic, qid)
            if target > ctx.offsets.query(REVIVE_GROUP, pop.revive_topic, qid):
                ctx.offsets.commit(REVIVE_GROUP, pop.revive_topic, qid, target)
