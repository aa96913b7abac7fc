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

Across a failover. The intent and the completion are also appended to the commit log as markers
(``RQ_SYS_SINK_COMMIT``: the intent before the first re-put, the completion after the last), so they reach a
slave with the batch's bytes and in order. A broker folds the markers it holds into its table when it starts
and when it becomes master, before answering any sink request: a successor refuses a replay of a batch its
predecessor applied, and finishes a batch its predecessor left half-applied (the intent without the
completion) exactly as a restarted broker does. The staged ranges are commit-log offsets, the same on every
replica.

This machinery is independent of RocketMQ's half-message transactions (END_TRANSACTION is per message, and a
repeated commit there would write the message twice); it reuses the store's batch append for staging and the
ordinary put path (delay levels included) for applying.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable, Iterable, Iterator

import orjson

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.sink_watermark import PendingCommit
from rocketq.broker.managers.topic_manager import AUTO_CREATE_TOPIC, NOT_ALLOWED_SEND_TOPICS, topic_name_error
from rocketq.broker.messaging.semantics import MessageSemantics
from rocketq.broker.role import RoleSnapshot
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
    MessageRecord,
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
from rocketq.protocol.topics import SINK_COMMIT_TOPIC
from rocketq.remoting.connection import Connection
from rocketq.store import StoreBatch, StoreMessage

log = logging.getLogger("rocketq.broker.sink_commit")

_SIZE_MAGIC = struct.Struct(">iI")
#: Queues a topic auto-created by a staged message gets (the client's ``defaultTopicQueueNums``).
_AUTO_CREATE_QUEUE_NUMS = 4
_STRIPPED = (PROP_REAL_TOPIC, PROP_REAL_QID, PROP_SINK_ID, PROP_SINK_BATCH)
#: Marker property: ``begin`` (an intent, the body its JSON) or ``done`` (the batch is the new watermark).
_PROP_MARK = "__RQ_SINK_MARK"


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
        #: the replicated markers must be folded in before the next sink request (start, became master)
        self._fold_due = True

    def register(self) -> None:
        self._ctx.role.on_change(self._on_role_changed)
        self.recover()
        d = self._ctx.gate
        d.register(SINK_STAGE_MESSAGES, self.stage)
        d.register(SINK_COMMIT_BATCH, self.commit)
        d.register(SINK_QUERY_STATE, self.query)

    # ------------------------------------------------------------------------------------------ stage

    def stage(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
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
            if topic in NOT_ALLOWED_SEND_TOPICS or topic in (STAGING_TOPIC, SINK_COMMIT_TOPIC):
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
        ok = cmd.response(
            ResponseCode.SUCCESS,
            None,
            {FIELD_START: str(ar.wrote_offset), FIELD_END: str(ar.end_offset), FIELD_COUNT: str(ar.msg_num)},
        )

        # answered as a send is (SYNC_FLUSH, SYNC_MASTER): a successor of this master holds what was staged
        def done(code: int) -> None:
            resp = ok if code == ResponseCode.SUCCESS else cmd.response(code, "staged; flush or replication timed out")
            broker.gate.reply(conn, cmd, resp)

        return None if broker.put_ack.wait(ar.end_offset, done) else ok

    # ----------------------------------------------------------------------------------------- commit

    def commit(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        refusal = self._check_writable(cmd)
        if refusal is not None:
            return refusal
        sink_id, batch_id = _sink_header(cmd)
        ranges = decode_commit_body(cmd.body)
        self._fold_markers()
        state = self.watermarks.get(sink_id)
        if state.pending is not None:
            self._roll_forward(sink_id, state.pending)
            state = self.watermarks.get(sink_id)
        if batch_id <= state.last_batch_id:
            log.info("sink.commit_replay sink=%s batch=%s last=%s", sink_id, batch_id, state.last_batch_id)
            # answered once what this broker holds is replicated: the replay may follow a commit whose own answer
            # timed out waiting for the slave, and "already applied" must mean a successor has it too
            if self._answer_after_flush(conn, cmd, self._ctx.store.get_max_phy_offset(), batch_id, 0,
                                        applied=False, last=state.last_batch_id):
                return None
            return self._answer(cmd, False, state.last_batch_id, 0)
        count = self._check_staged(sink_id, batch_id, ranges)
        store = self._ctx.store
        pending = PendingCommit(batch_id, store.get_max_phy_offset(), ranges)
        self.watermarks.begin(sink_id, pending)
        self._mark(sink_id, batch_id, "begin", orjson.dumps(pending.to_json()))
        self._apply(sink_id, batch_id, self._staged(ranges))
        end = self._complete(sink_id, batch_id)
        log.info("sink.commit_applied sink=%s batch=%s messages=%s", sink_id, batch_id, count)
        if end is not None and self._answer_after_flush(conn, cmd, end, batch_id, count):
            return None
        return self._answer(cmd, True, batch_id, count)

    def query(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        sink_id = check_sink_id(cmd.ext_fields.get(FIELD_SINK_ID, ""))
        if self._ctx.role.is_master:
            self._fold_markers()
        state = self.watermarks.get(sink_id)
        return cmd.response(
            ResponseCode.SUCCESS,
            None,
            {FIELD_LAST_BATCH_ID: str(state.last_batch_id), FIELD_PENDING: str(state.pending is not None).lower()},
        )

    # -------------------------------------------------------------------------------------- internals

    def recover(self) -> None:
        """Finish every commit a previous run (or, as master, a predecessor) left half-applied."""
        if self._ctx.role.is_slave:
            return  # a slave writes nothing: done when it becomes master (before its first sink request)
        self._fold_markers()
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
            self._complete(sink_id, pending.batch_id)
            return
        done = self._uniq_keys_since(pending.scan_from)
        todo = (m for m in self._staged(pending.ranges) if m.properties.get(PROP_UNIQ_KEY) not in done)
        # the intent again: a crash may have kept the file's intent but not the first marker
        self._mark(sink_id, pending.batch_id, "begin", orjson.dumps(pending.to_json()))
        self._apply(sink_id, pending.batch_id, todo)
        self._complete(sink_id, pending.batch_id)
        log.warning("sink.recovered sink=%s batch=%s messages=%s already=%s", sink_id, pending.batch_id, count,
                    len(done))

    # ------------------------------------------------------------------------------- replicated markers

    def _on_role_changed(self, before: RoleSnapshot, after: RoleSnapshot) -> None:
        # lazily, at the next sink request: the store may still be settling into the new role now
        if after.role != before.role and not self._ctx.role.is_slave:
            self._fold_due = True

    def _mark(self, sink_id: str, batch_id: int, kind: str, body: bytes = b"") -> int:
        """Append a commit marker; returns its commit-log end offset (raises if it cannot be stored)."""
        broker = self._ctx
        broker.topics.create_system_if_absent(SINK_COMMIT_TOPIC, 1, PERM_WRITE)
        msg = StoreMessage(topic=SINK_COMMIT_TOPIC, body=body or b"-", queue_id=0,
                           properties={PROP_SINK_ID: sink_id, PROP_SINK_BATCH: str(batch_id), _PROP_MARK: kind},
                           born_timestamp=int(time.time() * 1000), store_host=broker.store_host)  # fmt: skip
        result = broker.store.put_message(msg)
        ar = result.append_result
        if not result.is_ok or ar is None:
            raise SinkCommitError(f"sink {sink_id} batch {batch_id}: the {kind} marker could not be stored: "
                                  f"{result.status.name}")  # fmt: skip
        if self.watermarks.scanned_to == ar.wrote_offset:  # nothing unfolded before it: skip it next time
            self.watermarks.scanned_to = ar.end_offset
        return ar.end_offset

    def _complete(self, sink_id: str, batch_id: int) -> int:
        end = self._mark(sink_id, batch_id, "done")
        self.watermarks.complete(sink_id, batch_id)
        return end

    def _fold_markers(self) -> None:
        """Fold the markers stored beyond ``scannedTo`` (a predecessor's, replicated) into the table."""
        if not self._fold_due:
            return
        store = self._ctx.store
        wm = self.watermarks
        end = store.get_max_phy_offset()
        start = max(min(wm.scanned_to, end), store.get_min_phy_offset())
        folded = 0
        for off, rec in self._records_since(start, end):
            if rec.topic != SINK_COMMIT_TOPIC:
                continue
            props = rec.properties
            try:
                sink_id, batch_id, kind = props[PROP_SINK_ID], int(props[PROP_SINK_BATCH]), props[_PROP_MARK]
                if kind == "begin":
                    full = store.look_message_by_offset(off)
                    if full is None:
                        continue
                    wm.fold_begin(sink_id, PendingCommit.from_json(orjson.loads(full.body)))
                elif kind == "done":
                    wm.fold_complete(sink_id, batch_id, rec.store_timestamp)
                folded += 1
            except (KeyError, ValueError, TypeError, orjson.JSONDecodeError):
                log.warning("sink.bad_marker offset=%s", off)
        self._fold_due = False
        if folded or wm.scanned_to != end:
            wm.scanned_to = end
            wm.persist()
        if folded:
            log.info("sink.markers_folded from=%s to=%s markers=%s", start, end, folded)

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
        keys: set[str] = set()
        for _, rec in self._records_since(offset, self._ctx.store.get_max_phy_offset()):
            if rec.topic != STAGING_TOPIC:
                key = rec.properties.get(PROP_UNIQ_KEY)
                if key:
                    keys.add(key)
        return keys

    def _records_since(self, offset: int, end: int) -> Iterator[tuple[int, MessageRecord]]:
        """``(commit-log offset, record without body)`` of every record from ``offset`` to ``end``."""
        store = self._ctx.store
        file_size = store.config.mapped_file_size_commit_log
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
                    yield offset + pos, decode_record(view, pos, with_body=False)
                    pos += size
            finally:
                sel.release()
            if blank or pos == 0:
                offset = (offset // file_size + 1) * file_size
            else:
                offset += pos

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
        self, conn: Connection, cmd: RemotingCommand, end: int, batch_id: int, messages: int, *,
        applied: bool = True, last: int | None = None,
    ) -> bool:  # fmt: skip
        """Answer once ``PutAck`` says the applied batch may be (SYNC_FLUSH, SYNC_MASTER); False: answer now."""

        def done(code: int) -> None:
            if code == ResponseCode.SUCCESS:
                resp = self._answer(cmd, applied, batch_id if last is None else last, messages)
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
