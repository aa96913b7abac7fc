"""Exactly-once sink commits: SINK_STAGE_MESSAGES (9001), SINK_COMMIT_BATCH (9002), SINK_QUERY_STATE (9003).

rocketq-private request codes (see ``rocketq.protocol.sink`` for the wire contract). The Spark sink's tasks
stage their rows as prepared messages in ``RQ_SYS_SINK_STAGING``, tagged with the sink id and batch number;
the driver's commit then asks the broker to apply the batch. The broker applies it only when its number is
above the sink's watermark, so a batch replayed after a failure (before or after the first commit reached
the broker) is stored exactly once.

Strategy for atomicity. A commit is handled synchronously on the event loop, so no other request of this
broker interleaves with it. Before the first re-put the broker records the commit's intent (batch id, staged
ranges, current end of the commit log) durably in ``config/sinkWatermark.json``; after the last re-put it
stores the new watermark and drops the intent in one write. If the broker stops in between (crash, disk
full), the intent survives: on start — and before any later commit of that sink — the broker re-puts the
staged messages whose ``UNIQ_KEY`` does not yet appear after the recorded offset, then records the watermark.
So a batch, once its commit was accepted, ends up applied once and completely.

This machinery is independent of RocketMQ's half-message transactions (END_TRANSACTION is per message, and a
repeated commit there would write the message twice); it reuses the store's batch append for staging and the
ordinary put path (delay levels included) for applying.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable, Iterable, Iterator

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.sink_watermark import PendingCommit
from rocketq.broker.managers.topic_manager import AUTO_CREATE_TOPIC, NOT_ALLOWED_SEND_TOPICS, topic_name_error
from rocketq.broker.messaging.semantics import MessageSemantics
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError, ProtocolError
from rocketq.protocol.bodies import PERM_WRITE
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.header_codec import INT64_MAX
from rocketq.protocol.message import (
    BLANK_MAGIC,
    PROP_CLUSTER,
    PROP_REAL_QID,
    PROP_REAL_TOPIC,
    PROP_UNIQ_KEY,
    SYSFLAG_TX_MASK,
    decode_batch,
    decode_record,
)
from rocketq.protocol.sink import (
    FIELD_APPLIED,
    FIELD_BATCH_ID,
    FIELD_COUNT,
    FIELD_END,
    FIELD_LAST_BATCH_ID,
    FIELD_MESSAGES,
    FIELD_PENDING,
    FIELD_SINK_ID,
    FIELD_START,
    PROP_SINK_BATCH,
    PROP_SINK_ID,
    SINK_COMMIT_BATCH,
    SINK_QUERY_STATE,
    SINK_STAGE_MESSAGES,
    STAGING_TOPIC,
    StagedRange,
    check_sink_id,
    decode_commit_body,
)
from rocketq.remoting.connection import Connection
from rocketq.store import StoreBatch, StoreMessage

log = logging.getLogger("rocketq.broker.sink_commit")

_SIZE_MAGIC = struct.Struct(">iI")
#: Queues a topic auto-created by a staged message gets (the client's ``defaultTopicQueueNums``).
_AUTO_CREATE_QUEUE_NUMS = 4
_STRIPPED = (PROP_REAL_TOPIC, PROP_REAL_QID, PROP_SINK_ID, PROP_SINK_BATCH)


class SinkCommitError(BrokerError):
    """A commit that cannot be applied as asked (staged data missing or not this sink's)."""

    code = ResponseCode.SYSTEM_ERROR


class SinkCommitProcessor:
    def __init__(self, ctx: BrokerContext, semantics: MessageSemantics) -> None:
        self._ctx = ctx
        self._semantics = semantics
        self.watermarks = ctx.watermarks
        #: Tests: called as ``fault_hook(sink_id, batch_id, applied_so_far)`` after each re-put; may raise.
        self.fault_hook: Callable[[str, int, int], None] | None = None

    def register(self) -> None:
        self.recover()
        d = self._ctx.gate
        d.register(SINK_STAGE_MESSAGES, self.stage)
        d.register(SINK_COMMIT_BATCH, self.commit)
        d.register(SINK_QUERY_STATE, self.query)

    # ------------------------------------------------------------------------------------------ stage

    def stage(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        broker = self._ctx
        refusal = self._check_writable(cmd)
        if refusal is not None:
            return refusal
        sink_id, batch_id = _sink_header(cmd)
        items = decode_batch(memoryview(cmd.body))
        if not items:
            return cmd.response(ResponseCode.MESSAGE_ILLEGAL, "nothing to stage")
        cfg = broker.config
        for i, item in enumerate(items):
            props = item.properties
            topic = props.get(PROP_REAL_TOPIC, "")
            error = topic_name_error(topic)
            if error is not None:
                return cmd.response(ResponseCode.MESSAGE_ILLEGAL, f"staged message {i}: {error}")
            if topic in NOT_ALLOWED_SEND_TOPICS or topic == STAGING_TOPIC:
                return cmd.response(
                    ResponseCode.NO_PERMISSION, f"staged message {i}: sending to topic[{topic}] is forbidden"
                )
            tc = broker.topics.get(topic)
            if tc is None:
                tc = broker.topics.create_in_send(topic, AUTO_CREATE_TOPIC, _AUTO_CREATE_QUEUE_NUMS)
                if tc is None:
                    return cmd.response(
                        ResponseCode.TOPIC_NOT_EXIST,
                        f"staged message {i}: topic[{topic}] not exist, apply first please!",
                    )
                broker.registrar.kick()
            if not tc.perm & PERM_WRITE:
                return cmd.response(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
            try:
                queue_id = int(props.get(PROP_REAL_QID, ""))
            except ValueError:
                return cmd.response(ResponseCode.MESSAGE_ILLEGAL, f"staged message {i}: no valid {PROP_REAL_QID}")
            if not 0 <= queue_id < max(tc.read_queue_nums, tc.write_queue_nums):
                return cmd.response(
                    ResponseCode.MESSAGE_ILLEGAL,
                    f"staged message {i}: queueId[{queue_id}] is illegal for topic {topic}",
                )
            if len(item.body) > cfg.maxMessageSize:
                return cmd.response(
                    ResponseCode.MESSAGE_ILLEGAL,
                    f"staged message {i}: body size {len(item.body)} > {cfg.maxMessageSize}",
                )
            if not props.get(PROP_UNIQ_KEY):
                return cmd.response(ResponseCode.MESSAGE_ILLEGAL, f"staged message {i}: no {PROP_UNIQ_KEY}")
            # Whatever the real put would refuse is refused now, while the task can still name the row.
            probe = StoreMessage(topic=topic, body=item.body, queue_id=queue_id, properties=dict(props))
            self._semantics.before_put(probe)  # on a copy: it may rewrite the message (timers, transactions)
        broker.topics.create_system_if_absent(STAGING_TOPIC, 1, PERM_WRITE)
        batch = StoreBatch(
            topic=STAGING_TOPIC,
            items=items,
            queue_id=0,
            born_timestamp=int(time.time() * 1000),
            born_host=conn.remote_host,
            store_host=broker.store_host,
            properties={PROP_SINK_ID: sink_id, PROP_SINK_BATCH: str(batch_id)},
        )
        result = broker.store.put_messages(batch)
        ar = result.append_result
        if not result.is_ok or ar is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"staging failed: {result.status.name}")
        return cmd.response(
            ResponseCode.SUCCESS,
            None,
            {FIELD_START: str(ar.wrote_offset), FIELD_END: str(ar.end_offset), FIELD_COUNT: str(ar.msg_num)},
        )

    # ----------------------------------------------------------------------------------------- commit

    def commit(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        refusal = self._check_writable(cmd)
        if refusal is not None:
            return refusal
        sink_id, batch_id = _sink_header(cmd)
        ranges = decode_commit_body(cmd.body)
        state = self.watermarks.get(sink_id)
        if state.pending is not None:
            self._roll_forward(sink_id, state.pending)
            state = self.watermarks.get(sink_id)
        if batch_id <= state.last_batch_id:
            log.info("sink.commit_replay sink=%s batch=%s last=%s", sink_id, batch_id, state.last_batch_id)
            return self._answer(cmd, False, state.last_batch_id, 0)
        count = self._check_staged(sink_id, batch_id, ranges)
        store = self._ctx.store
        self.watermarks.begin(sink_id, PendingCommit(batch_id, store.get_max_phy_offset(), ranges))
        end = self._apply(sink_id, batch_id, self._staged(ranges))
        self.watermarks.complete(sink_id, batch_id)
        log.info("sink.commit_applied sink=%s batch=%s messages=%s", sink_id, batch_id, count)
        if end is not None and self._answer_after_flush(conn, cmd, end, batch_id, count):
            return None
        return self._answer(cmd, True, batch_id, count)

    def query(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        sink_id = check_sink_id(cmd.ext_fields.get(FIELD_SINK_ID, ""))
        state = self.watermarks.get(sink_id)
        return cmd.response(
            ResponseCode.SUCCESS,
            None,
            {FIELD_LAST_BATCH_ID: str(state.last_batch_id), FIELD_PENDING: str(state.pending is not None).lower()},
        )

    # -------------------------------------------------------------------------------------- internals

    def recover(self) -> None:
        """Finish every commit a previous run left half-applied."""
        for sink_id, pending in list(self.watermarks.pending()):
            try:
                self._roll_forward(sink_id, pending)
            except BrokerError:
                log.exception(
                    "sink.recover_failed sink=%s batch=%s; it is retried at the next commit", sink_id, pending.batch_id
                )

    def _roll_forward(self, sink_id: str, pending: PendingCommit) -> None:
        try:
            count = self._check_staged(sink_id, pending.batch_id, pending.ranges)
        except SinkCommitError as exc:
            # The staged data is gone (retention): nothing more can be applied, and applying it again on a
            # replay could duplicate what was already applied. Close the batch.
            log.error("sink.recover_incomplete sink=%s batch=%s error=%s", sink_id, pending.batch_id, exc)
            self.watermarks.complete(sink_id, pending.batch_id)
            return
        done = self._uniq_keys_since(pending.scan_from)
        todo = (m for m in self._staged(pending.ranges) if m.properties.get(PROP_UNIQ_KEY) not in done)
        self._apply(sink_id, pending.batch_id, todo)
        self.watermarks.complete(sink_id, pending.batch_id)
        log.warning("sink.recovered sink=%s batch=%s messages=%s already=%s", sink_id, pending.batch_id, count,
                    len(done))

    def _check_staged(self, sink_id: str, batch_id: int, ranges: list[StagedRange]) -> int:
        """Check (headers only) that ``ranges`` hold exactly this sink's batch; returns how many messages."""
        store = self._ctx.store
        want_batch = str(batch_id)
        total = 0
        for r in ranges:
            off = r.start
            n = 0
            while off < r.end:
                sel = store.get_commit_log_data(off)
                if sel is None:
                    raise SinkCommitError(f"staged message at commit-log offset {off} is gone")
                try:
                    rec = decode_record(sel.view, 0, with_body=False)
                except ProtocolError:
                    raise SinkCommitError(f"no staged message at commit-log offset {off}") from None
                finally:
                    sel.release()
                props = rec.properties
                if rec.topic != STAGING_TOPIC or props.get(PROP_SINK_ID) != sink_id:
                    raise SinkCommitError(f"commit-log offset {off} is not a message staged by sink {sink_id}")
                if props.get(PROP_SINK_BATCH) != want_batch:
                    raise SinkCommitError(
                        f"message at {off} was staged for batch {props.get(PROP_SINK_BATCH)}, not {batch_id}"
                    )
                off += rec.store_size
                n += 1
            if off != r.end or n != r.count:
                raise SinkCommitError(f"staged range [{r.start}, {r.end}) holds {n} messages, expected {r.count}")
            total += n
        return total

    def _staged(self, ranges: list[StagedRange]) -> Iterator[StoreMessage]:
        """The real messages behind checked ``ranges``, in order, one at a time (a batch may be large)."""
        store = self._ctx.store
        store_host = self._ctx.store_host
        cluster = self._ctx.config.brokerClusterName
        for r in ranges:
            off = r.start
            while off < r.end:
                rec = store.look_message_by_offset(off)
                if rec is None:
                    raise SinkCommitError(f"staged message at commit-log offset {off} is gone")
                props = rec.properties
                real = {k: v for k, v in props.items() if k not in _STRIPPED}
                real[PROP_CLUSTER] = cluster
                yield StoreMessage(
                    topic=props[PROP_REAL_TOPIC],
                    body=rec.body,
                    queue_id=int(props[PROP_REAL_QID]),
                    flag=rec.flag,
                    properties=real,
                    sys_flag=rec.sys_flag & ~SYSFLAG_TX_MASK,
                    born_timestamp=rec.born_timestamp,
                    born_host=rec.born_host,
                    store_host=store_host,
                )
                off += rec.store_size

    def _apply(self, sink_id: str, batch_id: int, messages: Iterable[StoreMessage]) -> int | None:
        """Re-put ``messages`` to their real topics; returns the commit-log end of the last one."""
        broker = self._ctx
        end: int | None = None
        for i, msg in enumerate(messages):
            result = broker.store.put_message(self._semantics.before_put(msg))
            ar = result.append_result
            if not result.is_ok or ar is None:
                raise SinkCommitError(
                    f"applying batch {batch_id} of sink {sink_id} stopped at message {i}: {result.status.name}; "
                    "it is finished at the next commit or broker start",
                )
            end = ar.end_offset
            if self.fault_hook is not None:
                self.fault_hook(sink_id, batch_id, i + 1)
        return end

    def _uniq_keys_since(self, offset: int) -> set[str]:
        """UNIQ_KEYs of the records stored from ``offset`` to the end of the log (staging records excluded)."""
        store = self._ctx.store
        file_size = store.config.mapped_file_size_commit_log
        keys: set[str] = set()
        end = store.get_max_phy_offset()
        while offset < end:
            sel = store.get_commit_log_data(offset)
            if sel is None:
                offset = (offset // file_size + 1) * file_size
                continue
            try:
                view = sel.view
                pos = 0
                blank = False
                while pos + 8 <= len(view):
                    size, magic = _SIZE_MAGIC.unpack_from(view, pos)
                    if magic == BLANK_MAGIC or size <= 0:
                        blank = True
                        break
                    rec = decode_record(view, pos, with_body=False)
                    if rec.topic != STAGING_TOPIC:
                        key = rec.properties.get(PROP_UNIQ_KEY)
                        if key:
                            keys.add(key)
                    pos += size
            finally:
                sel.release()
            if blank or pos == 0:
                offset = (offset // file_size + 1) * file_size
            else:
                offset += pos
        return keys

    def _check_writable(self, cmd: RemotingCommand) -> RemotingCommand | None:
        cfg = self._ctx.config
        if not cfg.brokerPermission & PERM_WRITE:
            return cmd.response(ResponseCode.NO_PERMISSION, f"the broker[{cfg.brokerIP1}] sending message is forbidden")
        if self._ctx.role.is_slave:
            return cmd.response(ResponseCode.SERVICE_NOT_AVAILABLE, "the broker is a slave, sink commits refused")
        return None

    @staticmethod
    def _answer(cmd: RemotingCommand, applied: bool, last: int, messages: int) -> RemotingCommand:
        return cmd.response(
            ResponseCode.SUCCESS,
            None,
            {FIELD_APPLIED: str(applied).lower(), FIELD_LAST_BATCH_ID: str(last), FIELD_MESSAGES: str(messages)},
        )

    def _answer_after_flush(
        self, conn: Connection, cmd: RemotingCommand, end: int, batch_id: int, messages: int
    ) -> bool:
        """Answer once ``PutAck`` says the applied batch may be (SYNC_FLUSH, SYNC_MASTER); False: answer now."""

        def done(code: int) -> None:
            if code == ResponseCode.SUCCESS:
                resp = self._answer(cmd, True, batch_id, messages)
            else:
                resp = cmd.response(code, "batch applied; flush or replication timed out")
            self._ctx.gate.reply(conn, cmd, resp)

        return self._ctx.put_ack.wait(end, done)


def _sink_header(cmd: RemotingCommand) -> tuple[str, int]:
    ext = cmd.ext_fields
    sink_id = check_sink_id(ext.get(FIELD_SINK_ID, ""))
    try:
        batch_id = int(ext.get(FIELD_BATCH_ID, ""))
    except ValueError:
        raise ProtocolError(f"bad {FIELD_BATCH_ID}: {ext.get(FIELD_BATCH_ID)!r}") from None
    if not 0 <= batch_id <= INT64_MAX:  # a long, as it is stored in sinkWatermark.json
        raise ProtocolError(f"{FIELD_BATCH_ID} must be a long >= 0, got {batch_id}")
    return sink_id, batch_id
