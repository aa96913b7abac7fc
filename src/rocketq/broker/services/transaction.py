"""Transactional messages (RocketMQ 4.9's TransactionalMessageService and its check service).

* A send whose property ``TRAN_MSG`` is true becomes a *half* message: stored under
  ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with its real topic and queue in ``REAL_TOPIC``/``REAL_QID``,
  transaction bits cleared, so no consumer of the real topic sees it.
* ``END_TRANSACTION`` commit (8) writes the real message (transaction bits = COMMIT, prepared-transaction
  offset = the half message's commit-log offset) and an *op* record; rollback (12) writes only the op
  record. Op records go to ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` with tag ``d`` and the half message's queue
  offset as body — the log of which half messages are finished.
* The check service walks the half queue from its progress offset (kept, as in Java, as the offsets of
  the system group ``CID_RMQ_SYS_TRANS``): finished entries are skipped; an unfinished one older than
  ``transactionTimeOut`` (or its ``CHECK_IMMUNITY_TIME_IN_SECONDS``) is put back at the end of the half queue
  with ``TRANSACTION_CHECK_TIMES`` + 1 and a CHECK_TRANSACTION_STATE is sent (oneway) to a live producer
  of its group; after ``transactionCheckMax`` checks it is moved to ``TRANS_CHECK_MAX_TIME_TOPIC``.

Everything lives in the commit log and the offset table, so pending half messages survive a restart.
"""

from __future__ import annotations

import asyncio
import logging
import time

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.topic_manager import TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from rocketq.broker.services.requeue import read_queue, restore
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError, NoPermissionError
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketq.protocol.message import (
    PROP_CHECK_IMMUNITY_TIME_IN_SECONDS,
    PROP_PGROUP,
    PROP_REAL_QID,
    PROP_REAL_TOPIC,
    PROP_TRAN_MSG,
    PROP_TRAN_PREPARED_QUEUE_OFFSET,
    PROP_TRANSACTION_CHECK_TIMES,
    PROP_UNIQ_KEY,
    SYSFLAG_TX_COMMIT,
    SYSFLAG_TX_MASK,
    SYSFLAG_TX_NOT,
    MessageRecord,
    encode_record,
    make_offset_msg_id,
)
from rocketq.store import StoreMessage

log = logging.getLogger("rocketq.broker.services.transaction")

CHECK_GROUP = "CID_RMQ_SYS_TRANS"
OP_TAG = "d"
COMMIT = 8
ROLLBACK = 12


def is_half(props: dict[str, str]) -> bool:
    return props.get(PROP_TRAN_MSG, "").lower() == "true"


def root_offset(half: MessageRecord) -> int:
    """The half-queue offset of the first copy: put-back copies keep it in TRAN_PREPARED_QUEUE_OFFSET.

    Op records name roots, so finishing any copy finishes them all — a late END_TRANSACTION for an older
    copy can never commit a transaction twice.
    """
    raw = half.properties.get(PROP_TRAN_PREPARED_QUEUE_OFFSET)
    if raw is not None and raw.lstrip("-").isdigit():
        return int(raw)
    return half.queue_offset


class TransactionService:
    def __init__(self, ctx: BrokerContext) -> None:
        self._ctx = ctx
        cfg = ctx.config
        self.check_interval = cfg.transactionCheckInterval / 1000.0
        self.timeout_ms = cfg.transactionTimeOut
        self.check_max = cfg.transactionCheckMax
        self._task: asyncio.Task[None] | None = None

    # --------------------------------------------------------------------------------------- half send

    def to_half(self, msg: StoreMessage) -> StoreMessage:
        """Rewrite a TRAN_MSG send to the half topic (TransactionalMessageBridge.parseHalfMessageInner)."""
        if self._ctx.config.rejectTransactionMessage:
            raise NoPermissionError("the broker sending transaction message is forbidden")
        self._ctx.topics.create_system_if_absent(TRANS_HALF_TOPIC, 1, PERM_READ | PERM_WRITE)
        self._ctx.metrics.on_half(msg.topic)
        msg.properties[PROP_REAL_TOPIC] = msg.topic
        msg.properties[PROP_REAL_QID] = str(msg.queue_id)
        msg.sys_flag = (msg.sys_flag & ~SYSFLAG_TX_MASK) | SYSFLAG_TX_NOT
        msg.topic = TRANS_HALF_TOPIC
        msg.queue_id = 0
        msg.tags_code = None
        return msg

    # ------------------------------------------------------------------------------- end transaction

    def end_transaction(self, h: EndTransactionRequestHeader) -> tuple[int, str | None] | None:
        """Commit or roll back a half message; the answer's (code, remark), or None: no answer (Java's
        TRANSACTION_NOT_TYPE, left for the check service)."""
        if self._ctx.role.is_slave:
            return ResponseCode.SLAVE_NOT_AVAILABLE, "the broker is a slave, end transaction refused"
        if h.commit_or_rollback not in (COMMIT, ROLLBACK):
            return None
        half = self._ctx.store.look_message_by_offset(h.commit_log_offset)
        if half is None or half.topic != TRANS_HALF_TOPIC:
            return ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed"
        if half.properties.get(PROP_PGROUP) != h.producer_group:
            return ResponseCode.SYSTEM_ERROR, "The producer group wrong"
        if half.queue_offset != h.tran_state_table_offset:
            return ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong"
        root = root_offset(half)
        if self._is_done(root):
            # Already finished (a retried END_TRANSACTION, or a check answer after a commit): idempotent.
            return ResponseCode.SUCCESS, None
        metrics, real_topic = self._ctx.metrics, half.properties.get(PROP_REAL_TOPIC, half.topic)
        if h.commit_or_rollback == COMMIT:
            result = self._ctx.store.put_message(self._committed(half))
            if result.status.name != "PUT_OK":
                return ResponseCode.SYSTEM_ERROR, f"commit failed: {result.status.name}"
            metrics.on_commit(real_topic, half.born_timestamp, int(time.time() * 1000))
        else:
            metrics.on_rollback(real_topic)
        self._write_op(root)
        return ResponseCode.SUCCESS, None

    def _committed(self, half: MessageRecord) -> StoreMessage:
        props = dict(half.properties)
        topic = props.pop(PROP_REAL_TOPIC, half.topic)
        qid = int(props.pop(PROP_REAL_QID, "0") or 0)
        props.pop(PROP_TRAN_MSG, None)
        props.pop(PROP_TRANSACTION_CHECK_TIMES, None)
        props.pop(PROP_TRAN_PREPARED_QUEUE_OFFSET, None)
        return restore(
            half,
            topic,
            qid,
            props,
            sys_flag=(half.sys_flag & ~SYSFLAG_TX_MASK) | SYSFLAG_TX_COMMIT,
            prepared_transaction_offset=half.commit_log_offset,
        )

    def _write_op(self, half_queue_offset: int) -> None:
        self._ctx.topics.create_system_if_absent(TRANS_OP_HALF_TOPIC, 1, PERM_READ | PERM_WRITE)
        op = StoreMessage(
            topic=TRANS_OP_HALF_TOPIC,
            queue_id=0,
            body=str(half_queue_offset).encode(),
            properties={"TAGS": OP_TAG},
            born_timestamp=int(time.time() * 1000),
            born_host=(self._ctx.store_host[0], 0),
            store_host=self._ctx.store_host,
        )
        self._ctx.store.put_message(op)

    # ------------------------------------------------------------------------------ finished records

    def _done_offsets(self, from_op_offset: int) -> dict[int, int]:
        """Root half-queue offset → op queue offset, for every op record from ``from_op_offset``."""
        done: dict[int, int] = {}
        for rec in read_queue(self._ctx.store, TRANS_OP_HALF_TOPIC, 0, from_op_offset, 1_000_000):
            if rec.tags == OP_TAG:
                try:
                    done[int(rec.body)] = rec.queue_offset
                except ValueError:
                    continue
        return done

    def _is_done(self, half_queue_offset: int) -> bool:
        op_progress = max(0, self._ctx.offsets.query(CHECK_GROUP, TRANS_OP_HALF_TOPIC, 0))
        return half_queue_offset in self._done_offsets(op_progress)

    # -------------------------------------------------------------------------------------- checking

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.check_interval)
            try:
                self.check_once()
            except BrokerError:
                log.exception("transaction.check_failed")
            except Exception:
                log.exception("transaction.check_failed")

    def check_once(self, now_ms: int | None = None) -> int:
        """One pass over the half queue; returns how many checks were sent."""
        broker = self._ctx
        store = broker.store
        if broker.topics.get(TRANS_HALF_TOPIC) is None:
            return 0
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        half_offset = max(0, broker.offsets.query(CHECK_GROUP, TRANS_HALF_TOPIC, 0))
        half_offset = max(half_offset, store.get_min_offset_in_queue(TRANS_HALF_TOPIC, 0))
        op_offset = max(0, broker.offsets.query(CHECK_GROUP, TRANS_OP_HALF_TOPIC, 0))
        done = self._done_offsets(op_offset)
        max_half = store.get_max_offset_in_queue(TRANS_HALF_TOPIC, 0)
        # Only messages present when the pass starts: those put back during it wait for the next pass.
        halves = read_queue(store, TRANS_HALF_TOPIC, 0, half_offset, max(0, max_half - half_offset))
        sent = 0
        offset = half_offset
        for half in halves:
            own_offset = half.queue_offset  # _put_back rewrites the record to describe its new copy
            root = root_offset(half)
            if root in done:
                offset = own_offset + 1
                continue
            wait_ms = self.timeout_ms
            immunity_s = half.properties.get(PROP_CHECK_IMMUNITY_TIME_IN_SECONDS, "")
            if immunity_s.isdigit() and int(immunity_s) > 0:
                wait_ms = max(wait_ms, int(immunity_s) * 1000)
            if now_ms - half.born_timestamp < wait_ms:
                break  # later messages are younger
            times = int(half.properties.get(PROP_TRANSACTION_CHECK_TIMES, "0") or 0)
            if times >= self.check_max:
                self._discard(half)
                self._write_op(root)
                done[root] = -1
            else:
                copy = self._put_back(half, times + 1)
                if copy is not None:
                    self._send_check(copy)
                    sent += 1
            # Either way this copy is superseded: progress moves past it.
            offset = own_offset + 1
        broker.offsets.commit(CHECK_GROUP, TRANS_HALF_TOPIC, 0, offset)
        # Op records stay needed while a pending copy (at or after the new progress) may refer to their root.
        pending_roots = [root_offset(h) for h in halves[offset - half_offset :]]
        if pending_roots:
            min_root = min(pending_roots)
            needed = [op for r, op in done.items() if r >= min_root and op >= 0]
            new_op = min(needed) if needed else store.get_max_offset_in_queue(TRANS_OP_HALF_TOPIC, 0)
        else:
            new_op = store.get_max_offset_in_queue(TRANS_OP_HALF_TOPIC, 0)
        broker.offsets.commit(CHECK_GROUP, TRANS_OP_HALF_TOPIC, 0, max(op_offset, new_op))
        return sent

    def _put_back(self, half: MessageRecord, times: int) -> MessageRecord | None:
        props = dict(half.properties)
        props[PROP_TRANSACTION_CHECK_TIMES] = str(times)
        props.setdefault(PROP_TRAN_PREPARED_QUEUE_OFFSET, str(half.queue_offset))
        msg = restore(half, TRANS_HALF_TOPIC, 0, props)
        result = self._ctx.store.put_message(msg)
        if result.status.name != "PUT_OK" or result.append_result is None:
            log.error("transaction.put_back_failed status=%s", result.status.name)
            return None
        half.properties = props
        half.queue_offset = result.append_result.logics_offset
        half.commit_log_offset = result.append_result.wrote_offset
        return half

    def _discard(self, half: MessageRecord) -> None:
        self._ctx.topics.create_system_if_absent(TRANS_CHECK_MAX_TIME_TOPIC, 1, PERM_READ | PERM_WRITE)
        msg = restore(half, TRANS_CHECK_MAX_TIME_TOPIC, 0, dict(half.properties), reconsume_times=0)
        self._ctx.store.put_message(msg)
        self._ctx.metrics.on_discard(half.properties.get(PROP_REAL_TOPIC, half.topic))
        log.warning("transaction.discarded uniq_key=%s checks=%s", half.properties.get(PROP_UNIQ_KEY), self.check_max)

    def _send_check(self, half: MessageRecord) -> None:
        group = half.properties.get(PROP_PGROUP, "")
        channel = self._ctx.producers.any_channel(group)
        if channel is None:
            log.warning("transaction.check_skipped group=%s reason=no live producer", group)
            return
        uniq = half.properties.get(PROP_UNIQ_KEY)
        offset_id = make_offset_msg_id(half.store_host, half.commit_log_offset)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=half.queue_offset,
            commit_log_offset=half.commit_log_offset,
            msg_id=uniq,
            transaction_id=uniq,
            offset_msg_id=offset_id,
        )
        # The producer sees the message as it sent it: real topic and queue restored.
        view = MessageRecord(**{f: getattr(half, f) for f in MessageRecord.__dataclass_fields__})
        view.topic = half.properties.get(PROP_REAL_TOPIC, half.topic)
        view.queue_id = int(half.properties.get(PROP_REAL_QID, "0") or 0)
        body = encode_record(view)
        cmd = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, header.to_ext(), body, language="JAVA")
        channel.conn.send_oneway(cmd)


__all__ = ["COMMIT", "ROLLBACK", "TransactionService", "is_half", "root_offset"]
