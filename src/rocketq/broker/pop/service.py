"""PopService: pop, ack, change invisible time, dead-letter — RocketMQ 5's message-level load balancing.

Facts: ../shared/reference/rocketmq-5x-grpc.md §5 (Java 5.1's PopMessageProcessor, AckMessageProcessor,
ChangeInvisibleTimeProcessor, PopReviveService). The rules in short:

* A pop reads the topic's queues (queue id -1: all of them, from a random one) and the group's retry topic
  ``%RETRY%group_topic`` (first with probability 1/5, else when the batch is not full), from the group's pop
  position. For each queue it read, a non-orderly pop stores a checkpoint in the revive topic and only then
  moves the group's offset past what it handed out: redelivery never relies on offsets.
* An ack stores an ack record naming the checkpoint; a change of invisible time stores a new one-message
  checkpoint and acks the old one.
* The revive loop (``revive.py``) takes every checkpoint whose invisible time is over and puts each un-acked
  message into the retry topic with ``reconsumeTimes + 1``, or, past the group's max delivery attempts
  (``retryMaxTimes + 1``), into ``%DLQ%group``.
* An orderly pop (the request's ``order``) writes no checkpoint: ``fifo.OrderState`` blocks the queue while a
  popped message is un-acked and invisible, and acks commit offsets in order.

Decisions where rocketq differs from Java (docs/pop.md): the dead-letter move happens here, at revive (Java's
proxy does it when it receives a message with too many attempts; Java's broker never does), so remoting POP
clients get it too; checkpoints stay in memory once stored and are replayed from the revive topic at start
(Java also round-trips them through its timer wheel).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass

from rocketq.broker.context import BrokerContext
from rocketq.broker.message_filter import FilterBuildError, build_filter
from rocketq.broker.messaging.bounds import group_error
from rocketq.broker.pop.checkpoints import PendingCheckpoints
from rocketq.broker.pop.fifo import OrderState
from rocketq.broker.pop.records import (
    ACK_TAG,
    CK_TAG,
    Checkpoint,
    CkKey,
    ack_json,
    revive_topic,
)
from rocketq.broker.pop.types import (
    INIT_MODE_MIN,
    ORDER_REVIVE_QID,
    AckOutcome,
    ChangeOutcome,
    InflightCounts,
    PopOutcome,
    PoppedMessage,
    PopRequest,
    ReceiptHandle,
    retry_topic,
)
from rocketq.broker.pop.util import RETRY_PREFIX, inflight_counts, read_one, sub_tags, tag_matches
from rocketq.broker.services.requeue import restore
from rocketq.codes import ResponseCode
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE, SubscriptionData
from rocketq.protocol.message import PROP_ORIGIN_MESSAGE_ID, PROP_RETRY_TOPIC, PROP_TAGS, MessageRecord, decode_record
from rocketq.store import GetMessageStatus, StoreMessage

log = logging.getLogger("rocketq.broker.pop")

#: Java's limit on one pop (PopMessageProcessor: "the broker's pop message can not be more than 32")
MAX_POP_NUMS = 32
DLQ_PREFIX = "%DLQ%"


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class _Read:
    """What one queue gave a pop."""

    topic: str
    queue_id: int
    start: int
    messages: list[PoppedMessage]
    rest: int


class PopService:
    def __init__(self, ctx: BrokerContext, *, revive_queue_num: int = 8, polling_max: int = 100_000) -> None:
        self._ctx = ctx
        self.revive_queue_num = max(1, revive_queue_num)
        self.revive_topic = revive_topic(ctx.config.brokerClusterName)
        self.pending = PendingCheckpoints()
        self.order = OrderState()
        self.polling_max = polling_max
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        self._parked = 0
        self._ck_counter = 0
        #: (group, topic) pairs popped since start (or found at replay): the in-flight views list them
        self.seen: set[tuple[str, str]] = set()
        #: woken when a checkpoint is stored: the revive loop may have to wake earlier
        self.on_checkpoint: list[asyncio.Event] = []

    # ------------------------------------------------------------------------------------------- helpers

    @property
    def broker_name(self) -> str:
        return self._ctx.config.brokerName

    def _put(self, msg: StoreMessage) -> int | None:
        """Store a message; its queue offset, or None (logged) when the store refused it."""
        result = self._ctx.store.put_message(msg)
        if not result.is_ok or result.append_result is None:
            log.error("pop.put_failed topic=%s status=%s", msg.topic, result.status.name)
            return None
        return result.append_result.logics_offset

    def store_record(self, revive_qid: int, tag: str, body: bytes) -> int | None:
        self._ctx.topics.create_system_if_absent(self.revive_topic, self.revive_queue_num, PERM_READ | PERM_WRITE)
        host = self._ctx.store_host
        msg = StoreMessage(topic=self.revive_topic, queue_id=revive_qid, body=body, properties={PROP_TAGS: tag},
                           born_timestamp=now_ms(), born_host=host, store_host=host)  # fmt: skip
        return self._put(msg)

    def store_checkpoint(self, ck: Checkpoint) -> bool:
        offset = self.store_record(ck.revive_qid, CK_TAG, ck.to_json())
        if offset is None:
            return False
        ck.revive_offset = offset
        self.pending.add(ck)
        for event in self.on_checkpoint:
            event.set()
        return True

    def _next_revive_qid(self) -> int:
        self._ck_counter += 1
        return self._ck_counter % self.revive_queue_num

    def _pop_position(self, group: str, topic: str, queue_id: int, init_mode: int, commit: bool = True) -> int:
        ctx = self._ctx
        offset = ctx.offsets.query(group, topic, queue_id)
        if offset >= 0:
            return max(offset, ctx.store.get_min_offset_in_queue(topic, queue_id))
        # Java's getInitOffset: MIN (and any retry topic) from the first message; MAX from the first message
        # when the queue still starts at 0 (initPopOffsetByCheckMsgInMem), else the last message
        min_offset = ctx.store.get_min_offset_in_queue(topic, queue_id)
        if init_mode == INIT_MODE_MIN or topic.startswith(RETRY_PREFIX) or min_offset <= 0:
            offset = min_offset
        else:
            offset = max(0, ctx.store.get_max_offset_in_queue(topic, queue_id) - 1)
        if commit:  # a peek or a notification only looks
            ctx.offsets.commit(group, topic, queue_id, offset)
        return offset

    def _group(self, group: str) -> tuple[int, str] | None:
        """(max delivery attempts, …) of a group, None when it does not exist and may not be created."""
        cfg = self._ctx.groups.table.get(group) or self._ctx.groups.find_or_create(group)
        if cfg is None:
            return None
        return cfg.max_delivery_attempts, group

    # ------------------------------------------------------------------------------------------- pop

    def check(self, req: PopRequest) -> PopOutcome | None:
        """The refusals of a pop (Java's order of checks); None: it may go ahead."""
        ctx = self._ctx
        if not ctx.config.brokerPermission & PERM_READ:
            return PopOutcome(ResponseCode.NO_PERMISSION,
                              f"the broker[{ctx.config.brokerIP1}] pop message is forbidden")  # fmt: skip
        if ctx.role.is_slave:
            return PopOutcome(ResponseCode.NO_PERMISSION, "a slave does not serve pops: pop from the master")
        if req.max_nums > MAX_POP_NUMS or req.max_nums <= 0:
            return PopOutcome(ResponseCode.INVALID_PARAMETER, f"the broker's pop message must be 1..{MAX_POP_NUMS}")
        if req.invisible_ms <= 0:
            return PopOutcome(ResponseCode.SYSTEM_ERROR, f"invisibleTime {req.invisible_ms} must be positive")
        tc = ctx.topics.get(req.topic)
        if tc is None:
            return PopOutcome(ResponseCode.TOPIC_NOT_EXIST, f"topic[{req.topic}] not exist, apply first please!")
        if not tc.perm & PERM_READ:
            return PopOutcome(ResponseCode.NO_PERMISSION, f"the topic[{req.topic}] peeking message is forbidden")
        if req.queue_id >= tc.read_queue_nums or req.queue_id < -1:
            return PopOutcome(ResponseCode.INVALID_PARAMETER,
                              f"queueId[{req.queue_id}] is illegal, topic:[{req.topic}] topicConfig.readQueueNums:"
                              f"[{tc.read_queue_nums}] consumer:[{req.client}]")  # fmt: skip
        error = group_error("consumerGroup", req.group)
        if error is not None:
            return PopOutcome(ResponseCode.SYSTEM_ERROR, error)
        cfg = ctx.groups.table.get(req.group) or ctx.groups.find_or_create(req.group)
        if cfg is None:
            return PopOutcome(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                              f"subscription group [{req.group}] does not exist")  # fmt: skip
        if not cfg.consume_enable:
            return PopOutcome(ResponseCode.NO_PERMISSION, f"subscription group no permission, {req.group}")
        return None

    async def pop(self, req: PopRequest) -> PopOutcome:
        refused = self.check(req)
        if refused is not None:
            return refused
        self.seen.add((req.group, req.topic))
        sub = SubscriptionData.of(req.topic, req.expression or "*", req.expression_type or "TAG")
        try:
            message_filter = build_filter(sub)
        except FilterBuildError as exc:
            return PopOutcome(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc))
        if sub.expression_type != "TAG" and not self._ctx.config.enablePropertyFilter:
            remark = f"The broker does not support consumer to filter message by {sub.expression_type}"
            return PopOutcome(ResponseCode.SYSTEM_ERROR, remark)
        deadline = time.monotonic() + max(0, req.poll_ms) / 1000.0
        while True:
            outcome = self._pop_once(req, sub, message_filter)
            if outcome.messages or outcome.code != ResponseCode.SUCCESS:
                return outcome
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return PopOutcome(ResponseCode.POLLING_TIMEOUT, "POLLING_TIMEOUT")
            if self._parked >= self.polling_max:
                return PopOutcome(ResponseCode.POLLING_FULL, "POLLING_FULL")
            await self._park((req.topic, retry_topic(req.group, req.topic)), remaining)

    async def _park(self, keys: tuple[str, ...], timeout: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for key in keys:
            self._waiters.setdefault(key, set()).add(fut)
        self._parked += 1
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout)
        except TimeoutError:
            pass
        finally:
            self._parked -= 1
            for key in keys:
                waiting = self._waiters.get(key)
                if waiting is not None:
                    waiting.discard(fut)
                    if not waiting:
                        del self._waiters[key]

    def notify(self, topic: str) -> None:
        """A message arrived in ``topic`` (or a FIFO queue unlocked, or a revive filled a retry topic)."""
        for fut in self._waiters.get(topic, ()):
            if not fut.done():
                fut.set_result(None)

    @property
    def parked(self) -> int:
        return self._parked

    def _pop_once(self, req: PopRequest, sub: SubscriptionData, message_filter: object) -> PopOutcome:
        ctx = self._ctx
        tc = ctx.topics.get(req.topic)
        assert tc is not None
        pop_time = now_ms()
        revive_qid = ORDER_REVIVE_QID if req.order else self._next_revive_qid()
        queues = [req.queue_id] if req.queue_id >= 0 else list(range(tc.read_queue_nums))
        if len(queues) > 1:
            start = random.randrange(len(queues))
            queues = queues[start:] + queues[:start]
        rtopic = retry_topic(req.group, req.topic)
        has_retry = not req.order and self._retry_exists(rtopic)
        reads: list[_Read] = []
        want = req.max_nums
        retry_first = has_retry and random.randrange(5) == 0
        plan = ([(rtopic, 0)] if retry_first else []) + [(req.topic, q) for q in queues]
        if has_retry and not retry_first:
            plan.append((rtopic, 0))
        rest = 0
        for topic, queue_id in plan:
            if want <= 0:
                rest += self._ready(req.group, topic, queue_id, req.init_mode)
                continue
            read = self._read_queue(req, topic, queue_id, want, pop_time, revive_qid, message_filter)
            if read is None:
                continue
            if read.messages:
                reads.append(read)
                want -= len(read.messages)
            rest += read.rest
        if reads:
            ctx.metrics.on_group_get(req.topic, req.group, sum(len(r.messages) for r in reads),
                                     sum(len(m.raw) for r in reads for m in r.messages))  # fmt: skip
        return self._outcome(req, reads, pop_time, revive_qid, rest)

    def _retry_exists(self, rtopic: str) -> bool:
        if self._ctx.topics.get(rtopic) is not None:
            return True
        if self._ctx.store.get_max_offset_in_queue(rtopic, 0) > 0:  # stored, but the topic table lost it (kill -9)
            self._ctx.topics.create_system_if_absent(rtopic, 1, PERM_READ | PERM_WRITE)
            return True
        return False

    def _ready(self, group: str, topic: str, queue_id: int, init_mode: int, commit: bool = True) -> int:
        position = self._pop_position(group, topic, queue_id, init_mode, commit)
        return max(0, self._ctx.store.get_max_offset_in_queue(topic, queue_id) - position)

    def _read_queue(
        self, req: PopRequest, topic: str, queue_id: int, want: int, pop_time: int, revive_qid: int,
        message_filter: object,
    ) -> _Read | None:  # fmt: skip
        ctx = self._ctx
        store = ctx.store
        fifo = self.order.get(req.group, topic, queue_id) if req.order else None
        if fifo is not None and fifo.blocked(pop_time, req.attempt_id):
            return None
        offset = self._pop_position(req.group, topic, queue_id, req.init_mode)
        result = store.get_message(topic, queue_id, offset, want, message_filter)  # type: ignore[arg-type]
        popped: list[PoppedMessage] = []
        max_attempts = self._group(req.group)
        attempts_limit = max_attempts[0] if max_attempts else 17
        try:
            status = result.status
            next_begin = result.next_begin_offset
            if status == GetMessageStatus.FOUND:
                for buf in result.buffers:
                    raw = bytes(buf.view)
                    rec = decode_record(raw, with_body=True)
                    if not tag_matches(sub_tags(req), rec):
                        continue
                    if fifo is not None and fifo.is_acked(rec.queue_offset):
                        continue
                    reconsume = rec.reconsume_times
                    if fifo is not None:
                        count = fifo.handed_out(rec.queue_offset, pop_time, req.invisible_ms, req.attempt_id)
                        reconsume = count - 1
                        if reconsume >= attempts_limit:
                            # FIFO: past the group's attempts the message goes to the DLQ and counts as acked
                            self.to_dead_letter(rec, req.group, req.topic)
                            fifo.ack(rec.queue_offset)
                            continue
                    ck_offset = rec.queue_offset if fifo is not None else offset
                    handle = ReceiptHandle(ck_offset, pop_time, req.invisible_ms, revive_qid, topic != req.topic,
                                           self.broker_name, queue_id, rec.queue_offset)  # fmt: skip
                    popped.append(PoppedMessage(rec, raw, handle, req.topic, reconsume))
            elif status == GetMessageStatus.OFFSET_TOO_SMALL:
                pass  # retention removed the head: the position moves to the first message kept
            elif status not in (GetMessageStatus.NO_MATCHED_MESSAGE, GetMessageStatus.MESSAGE_WAS_REMOVING):
                next_begin = offset  # nothing there (yet): the position stays
            max_offset = result.max_offset
        finally:
            result.release()
        if fifo is None:
            if popped:
                ck = Checkpoint(CkKey(req.group, topic, queue_id, offset, pop_time), req.invisible_ms,
                                [m.record.queue_offset for m in popped], revive_qid, self.broker_name)  # fmt: skip
                if not self.store_checkpoint(ck):
                    return None  # nothing handed out: the position stays where it was
            if next_begin != offset:
                ctx.offsets.commit(req.group, topic, queue_id, next_begin)
        elif not popped and next_begin != offset and not fifo.popped:
            ctx.offsets.commit(req.group, topic, queue_id, next_begin)  # skipped filtered messages
        return _Read(topic, queue_id, offset, popped, max(0, max_offset - next_begin))

    def _outcome(self, req: PopRequest, reads: list[_Read], pop_time: int, revive_qid: int, rest: int) -> PopOutcome:
        out = PopOutcome(ResponseCode.SUCCESS, None, pop_time=pop_time, invisible_ms=req.invisible_ms,
                         revive_qid=revive_qid, rest_num=rest)  # fmt: skip
        starts: list[str] = []
        offsets: list[str] = []
        counts: list[str] = []
        for read in reads:
            retry = "1" if read.topic != req.topic else "0"
            out.messages.extend(read.messages)
            starts.append(f"{retry} {read.queue_id} {read.start}")
            offsets.append(f"{retry} {read.queue_id} " + ",".join(str(m.record.queue_offset) for m in read.messages))
            if req.order:
                counts.append(f"{retry} {read.queue_id} {max(m.reconsume_times for m in read.messages)}")
                counts.extend(f"{retry} qo{read.queue_id}%{m.record.queue_offset} {m.reconsume_times}"
                              for m in read.messages)  # fmt: skip
        out.start_offset_info = ";".join(starts)
        out.msg_offset_info = ";".join(offsets)
        out.order_count_info = ";".join(counts)
        return out

    # ------------------------------------------------------------------------------------------- peek, notify

    def peek(self, group: str, topic: str, queue_id: int, max_nums: int) -> tuple[PopOutcome, list[bytes]]:
        """PEEK_MESSAGE: up to ``max_nums`` ready messages from the group's pop positions, handing nothing out
        (no checkpoint, the position stays)."""
        req = PopRequest(group, topic, queue_id, max_nums)
        refused = self.check(req)
        if refused is not None:
            return refused, []
        tc = self._ctx.topics.get(topic)
        assert tc is not None
        found: list[bytes] = []
        rest = 0
        for q in [queue_id] if queue_id >= 0 else range(tc.read_queue_nums):
            offset = self._pop_position(group, topic, q, INIT_MODE_MIN, commit=False)
            result = self._ctx.store.get_message(topic, q, offset, max(0, max_nums - len(found)) or 1, None,
                                                 counted=False)  # fmt: skip
            try:
                if result.status == GetMessageStatus.FOUND and len(found) < max_nums:
                    found.extend(bytes(b.view) for b in result.buffers)
                rest += max(0, result.max_offset - offset)
            finally:
                result.release()
        rest -= len(found)
        return PopOutcome(ResponseCode.SUCCESS, None, rest_num=max(0, rest)), found

    def has_ready(self, group: str, topic: str, queue_id: int, order: bool, attempt_id: str | None) -> bool:
        tc = self._ctx.topics.get(topic)
        if tc is None:
            return False
        now = now_ms()
        targets = [(topic, q) for q in ([queue_id] if queue_id >= 0 else range(tc.read_queue_nums))]
        if not order and self._retry_exists(retry_topic(group, topic)):
            targets.append((retry_topic(group, topic), 0))
        for t, q in targets:
            fifo = self.order.find(group, t, q) if order else None
            if fifo is not None and fifo.blocked(now, attempt_id):
                continue
            if self._ready(group, t, q, INIT_MODE_MIN, commit=False) > 0:
                return True
        return False

    async def notification(
        self, group: str, topic: str, queue_id: int, poll_ms: int, order: bool, attempt_id: str | None
    ) -> tuple[int, bool]:
        """NOTIFICATION: (code, has a message) — waits up to ``poll_ms`` for one to be ready; code POLLING_FULL
        when too many pops and notifications wait already."""
        refused = self.check(PopRequest(group, topic, queue_id))
        if refused is not None:
            return refused.code, False
        deadline = time.monotonic() + max(0, poll_ms) / 1000.0
        while True:
            if self.has_ready(group, topic, queue_id, order, attempt_id):
                return ResponseCode.SUCCESS, True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return ResponseCode.SUCCESS, False
            if self._parked >= self.polling_max:
                return ResponseCode.POLLING_FULL, False
            await self._park((topic, retry_topic(group, topic)), remaining)

    def polling_count(self, topic: str) -> int:
        """POLLING_INFO: how many pops and notifications wait on ``topic`` now."""
        return len(self._waiters.get(topic, ()))

    # ------------------------------------------------------------------------------------------- ack

    def _validate(self, group: str, topic: str, handle: ReceiptHandle) -> tuple[str, AckOutcome | None]:
        ctx = self._ctx
        read_topic = retry_topic(group, topic) if handle.retry else topic
        tc = ctx.topics.get(read_topic)
        if tc is None:
            return read_topic, AckOutcome(ResponseCode.TOPIC_NOT_EXIST, f"topic[{read_topic}] not exist")
        if handle.queue_id < 0 or handle.queue_id >= tc.read_queue_nums:
            return read_topic, AckOutcome(ResponseCode.MESSAGE_ILLEGAL,
                                          f"queueId[{handle.queue_id}] is illegal, topic:[{read_topic}]")  # fmt: skip
        low = ctx.store.get_min_offset_in_queue(read_topic, handle.queue_id)
        high = ctx.store.get_max_offset_in_queue(read_topic, handle.queue_id)
        if handle.queue_offset < low or handle.queue_offset >= high:
            return read_topic, AckOutcome(ResponseCode.NO_MESSAGE,
                                          f"offset is illegal, key:{read_topic}@{handle.queue_id}, "
                                          f"commit:{handle.queue_offset}, store:{low},{high}")  # fmt: skip
        return read_topic, None

    def ack(self, group: str, topic: str, handle: ReceiptHandle) -> AckOutcome:
        """Settle one popped message. ``topic`` is the subscribed topic (the handle says if it was a retry)."""
        read_topic, refused = self._validate(group, topic, handle)
        if refused is not None:
            return refused
        expired = handle.expires_at <= now_ms()
        if handle.orderly:
            fifo = self.order.find(group, read_topic, handle.queue_id)
            commit = fifo.ack(handle.queue_offset) if fifo is not None else None
            if commit is not None:
                self._ctx.offsets.commit(group, read_topic, handle.queue_id, commit)
                self.notify(topic)
            return AckOutcome(ResponseCode.SUCCESS, None, expired)
        key = CkKey(group, read_topic, handle.queue_id, handle.ck_offset, handle.pop_time)
        if self.pending.is_unacked(key, handle.queue_offset):
            ck = self.pending.get(key)
            assert ck is not None
            # stored before it counts: a restart replaying the revive queue sees it
            if self.store_record(ck.revive_qid, ACK_TAG, ack_json(key, handle.queue_offset, self.broker_name)) is None:
                return AckOutcome(ResponseCode.SYSTEM_ERROR, "the ack could not be stored")
            self.pending.ack(key, handle.queue_offset)
        return AckOutcome(ResponseCode.SUCCESS, None, expired)

    def change_invisible(self, group: str, topic: str, handle: ReceiptHandle, invisible_ms: int) -> ChangeOutcome:
        """A new invisible time for one popped message, counted from now; the outcome's handle replaces it."""
        if invisible_ms < 0:
            return ChangeOutcome(ResponseCode.SYSTEM_ERROR, f"invisibleTime {invisible_ms} must not be negative")
        read_topic, refused = self._validate(group, topic, handle)
        if refused is not None:
            return ChangeOutcome(refused.code, refused.remark)
        now = now_ms()
        if handle.orderly:
            fifo = self.order.find(group, read_topic, handle.queue_id)
            if fifo is not None:
                fifo.change(handle.queue_offset, now, invisible_ms)
            new = ReceiptHandle(handle.queue_offset, now, invisible_ms, ORDER_REVIVE_QID, handle.retry,
                                self.broker_name, handle.queue_id, handle.queue_offset)  # fmt: skip
            return ChangeOutcome(ResponseCode.SUCCESS, None, new)
        qid = handle.revive_qid % self.revive_queue_num  # Java keeps the handle's revive queue
        ck = Checkpoint(CkKey(group, read_topic, handle.queue_id, handle.queue_offset, now), invisible_ms,
                        [handle.queue_offset], qid, self.broker_name)  # fmt: skip
        if not self.store_checkpoint(ck):
            return ChangeOutcome(ResponseCode.SYSTEM_ERROR, "the new checkpoint could not be stored")
        old = self.ack(group, topic, handle)
        if old.code != ResponseCode.SUCCESS:
            log.warning("pop.change_ack_failed group=%s topic=%s code=%s", group, topic, old.code)
        new = ReceiptHandle(handle.queue_offset, now, invisible_ms, qid, handle.retry, self.broker_name,
                            handle.queue_id, handle.queue_offset)  # fmt: skip
        return ChangeOutcome(ResponseCode.SUCCESS, None, new)

    def forward_to_dlq(self, group: str, topic: str, handle: ReceiptHandle) -> AckOutcome:
        """ForwardMessageToDeadLetterQueue: the popped message goes to ``%DLQ%group`` now, and is acked."""
        read_topic, refused = self._validate(group, topic, handle)
        if refused is not None:
            return refused
        rec = self.read(read_topic, handle.queue_id, handle.queue_offset)
        if rec is None:
            return AckOutcome(ResponseCode.NO_MESSAGE, f"no message at {read_topic}@{handle.queue_id}")
        if not self.to_dead_letter(rec, group, topic):
            return AckOutcome(ResponseCode.SYSTEM_ERROR, "the dead-letter copy could not be stored")
        return self.ack(group, topic, handle)

    # ------------------------------------------------------------------------------------------- copies

    def read(self, topic: str, queue_id: int, offset: int) -> MessageRecord | None:
        return read_one(self._ctx.store, topic, queue_id, offset)

    def to_dead_letter(self, rec: MessageRecord, group: str, topic: str) -> bool:
        ctx = self._ctx
        dlq = DLQ_PREFIX + group
        ctx.topics.create_system_if_absent(dlq, 1, PERM_READ | PERM_WRITE)
        ctx.registrar.kick()
        props = dict(rec.properties)
        props.setdefault(PROP_RETRY_TOPIC, topic)
        if not props.get(PROP_ORIGIN_MESSAGE_ID, "").strip():
            props[PROP_ORIGIN_MESSAGE_ID] = rec.offset_msg_id
        ok = self._put(restore(rec, dlq, 0, props)) is not None
        if ok:
            ctx.metrics.on_send_to_dlq(group, topic)
        return ok

    def to_retry(self, rec: MessageRecord, group: str, topic: str, pop_time: int) -> bool:
        ctx = self._ctx
        rtopic = retry_topic(group, topic)
        if ctx.topics.get(rtopic) is None:
            ctx.topics.create_system_if_absent(rtopic, 1, PERM_READ | PERM_WRITE)
            ctx.registrar.kick()
        props = dict(rec.properties)
        props.setdefault("1ST_POP_TIME", str(pop_time))  # Java's PROPERTY_FIRST_POP_TIME
        ok = self._put(restore(rec, rtopic, 0, props, reconsume_times=rec.reconsume_times + 1)) is not None
        if ok:
            self.notify(rtopic)
        return ok

    # ------------------------------------------------------------------------------------------- views

    def inflight(self, group: str | None = None) -> list[InflightCounts]:
        """Per group and subscribed topic: popped and not acked, of which still invisible, and ready."""
        return inflight_counts(self._ctx, self.pending, self.order, self.seen, group)
