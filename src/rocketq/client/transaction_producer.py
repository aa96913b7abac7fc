"""The transaction producer (Java ``TransactionMQProducer`` and the transaction half of ``DefaultMQProducerImpl``).

``send_message_in_transaction`` sends a half message (``TRAN_MSG``: the broker stores it where no consumer sees
it), runs the local transaction, then commits or rolls it back with a oneway END_TRANSACTION. For a half message
left undecided the broker asks with CHECK_TRANSACTION_STATE; the listener's ``check_local_transaction`` answers,
again with END_TRANSACTION.
"""

from __future__ import annotations

import enum
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from rocketq.client._util import call_user
from rocketq.client._validators import check_message
from rocketq.client.errors import BrokerNotFoundError
from rocketq.client.message import Message, MessageExt, SendResult, SendStatus
from rocketq.client.producer import Producer
from rocketq.client.trace import end_transaction_context
from rocketq.errors import ClientError, RemotingError
from rocketq.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketq.protocol.message import (
    PROP_PGROUP,
    PROP_TRAN_MSG,
    PROP_UNIQ_KEY,
    SYSFLAG_TX_COMMIT,
    SYSFLAG_TX_NOT,
    SYSFLAG_TX_ROLLBACK,
    parse_offset_msg_id,
)

__all__ = ["LocalTransactionState", "TransactionListener", "TransactionProducer", "TransactionSendResult"]

# The producer's logger: these were always its events ("transaction.*"), and log filters name it.
log = logging.getLogger("rocketq.client.producer")


class LocalTransactionState(enum.Enum):
    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


_COMMIT_OR_ROLLBACK = {
    LocalTransactionState.COMMIT_MESSAGE: SYSFLAG_TX_COMMIT,
    LocalTransactionState.ROLLBACK_MESSAGE: SYSFLAG_TX_ROLLBACK,
    LocalTransactionState.UNKNOW: SYSFLAG_TX_NOT,
}


class TransactionListener(Protocol):
    """Both methods may be plain functions (run in a thread) or coroutine functions."""

    def execute_local_transaction(self, msg: Message, arg: Any) -> Any: ...

    def check_local_transaction(self, msg: MessageExt) -> Any: ...


@dataclass(frozen=True, slots=True)
class TransactionSendResult:
    send_result: SendResult
    local_transaction_state: LocalTransactionState


class TransactionProducer(Producer):
    """Sends half messages, runs the local transaction, then commits or rolls back (END_TRANSACTION).

    The broker asks about undecided transactions with CHECK_TRANSACTION_STATE; the listener's
    ``check_local_transaction`` answers.
    """

    def __init__(
        self, group: str, transaction_listener: TransactionListener, *, check_thread_pool_size: int = 1,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(group, **kwargs)
        self.transaction_listener = transaction_listener
        self._executor = ThreadPoolExecutor(max_workers=max(1, check_thread_pool_size),
                                            thread_name_prefix=f"rocketq-tx-{group}")  # fmt: skip

    async def shutdown(self) -> None:
        await super().shutdown()
        self._executor.shutdown(wait=False)

    async def send_message_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        msg.properties.pop("DELAY", None)
        check_message(msg, self.max_message_size)
        msg.properties[PROP_TRAN_MSG] = "true"
        msg.properties[PROP_PGROUP] = self.group
        try:
            result = await self.send(msg)
        except Exception as exc:
            raise ClientError(f"send message exception: {exc}") from exc
        state = LocalTransactionState.UNKNOW
        local_exc: BaseException | None = None
        if result.status == SendStatus.SEND_OK:
            if result.transaction_id is not None:
                msg.properties["__transactionId__"] = result.transaction_id
            msg.transaction_id = msg.uniq_key
            try:
                got = await call_user(self.transaction_listener.execute_local_transaction, msg, arg,
                                      executor=self._executor)  # fmt: skip
                state = got if isinstance(got, LocalTransactionState) else LocalTransactionState.UNKNOW
            except Exception as exc:
                log.info("transaction.local_failed msg_id=%s error=%r", result.msg_id, exc)
                local_exc = exc
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        try:
            await self._end_transaction(msg, result, state, local_exc)
        except Exception as exc:
            log.warning("transaction.end_failed state=%s error=%s", state.value, exc)
        return TransactionSendResult(result, state)

    async def _end_transaction(
        self, msg: Message, result: SendResult, state: LocalTransactionState, local_exc: BaseException | None
    ) -> None:
        _, commit_log_offset = parse_offset_msg_id(result.offset_msg_id or result.msg_id)
        broker_name = result.message_queue.broker_name
        addr = self.instance.find_broker_address_in_publish(broker_name)
        if addr is None:
            raise BrokerNotFoundError(broker_name)
        header = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=result.queue_offset,
            commit_log_offset=commit_log_offset,
            commit_or_rollback=_COMMIT_OR_ROLLBACK[state],
            from_transaction_check=False,
            msg_id=result.msg_id,
            transaction_id=result.transaction_id,
        )
        remark = f"executeLocalTransactionBranch exception: {local_exc!r}" if local_exc is not None else None
        await self.instance.api.end_transaction_oneway(addr, header, broker_name, remark)
        self._trace_end(msg, result.msg_id, addr, state, result.transaction_id, False)

    def _trace_end(self, msg: Message, msg_id: str | None, addr: str, state: LocalTransactionState,
                   transaction_id: str | None, from_check: bool) -> None:  # fmt: skip
        trace = self._trace
        if trace is not None and msg.topic != trace.trace_topic:
            trace.append(end_transaction_context(self.group, msg, msg_id, addr, state.value, transaction_id,
                                                 from_check))  # fmt: skip

    async def check_transaction_state(
        self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        async def run() -> None:
            state = LocalTransactionState.UNKNOW
            exc: BaseException | None = None
            try:
                got = await call_user(self.transaction_listener.check_local_transaction, msg, executor=self._executor)
                if isinstance(got, LocalTransactionState):
                    state = got
            except Exception as e:
                log.error("transaction.check_failed msg_id=%s error=%r", msg.msg_id, e)
                exc = e
            end = EndTransactionRequestHeader(
                producer_group=self.group,
                tran_state_table_offset=header.tran_state_table_offset,
                commit_log_offset=header.commit_log_offset,
                commit_or_rollback=_COMMIT_OR_ROLLBACK[state],
                from_transaction_check=True,
                msg_id=msg.properties.get(PROP_UNIQ_KEY) or msg.msg_id,
                transaction_id=header.transaction_id,
            )
            remark = f"checkLocalTransactionState Exception: {exc!r}" if exc is not None else None
            try:
                await self.instance.api.end_transaction_oneway(addr, end, None, remark)
                self._trace_end(msg, end.msg_id, addr, state, header.transaction_id, True)
            except (RemotingError, ClientError) as e:
                log.warning("transaction.check_reply_failed addr=%s error=%s", addr, e)

        self._tasks.spawn(run(), "check-transaction")
