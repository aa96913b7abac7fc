"""SendMessage and EndTransaction: gRPC in, ``SendService`` / ``TransactionService`` out.

The checks of the proxy's ``SendMessageActivity`` (``convert.to_properties``) come first; then the send is a
``SendMessageRequestHeader`` to this broker's ``SendService.send`` — the same rules as a remoting send
(permissions, role, half messages, delivery times through the timer service). The server picks the queue
(§3.4): a message group hashes to a write queue with Guava's ``consistentHash(group.hashCode(), n)``, any other
send takes the next queue round robin. The answer waits for ``PutAck`` like a remoting send (SYNC_FLUSH,
SYNC_MASTER).

Transactions: a half message's (commit-log offset, half-queue offset) is remembered under (producer group =
topic, transaction id = the message id), as the proxy keeps its transaction data; EndTransaction finds it
there, and so does the answer to an orphan check (``remember`` is called for each check sent).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict

from rocketq.broker.context import BrokerContext
from rocketq.broker.messaging.send import SendOutcome, SendService
from rocketq.broker.services.transaction import COMMIT, ROLLBACK, TransactionService
from rocketq.codes import CURRENT_VERSION, ResponseCode
from rocketq.common.hashing import java_string_hash
from rocketq.errors import BrokerError, ProtocolError
from rocketq.grpc.convert import SendLimits, to_properties
from rocketq.grpc.names import topic_of
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.grpc.status import Code, GrpcRefusal, combined, status
from rocketq.protocol.bodies import PERM_WRITE
from rocketq.protocol.headers import EndTransactionRequestHeader, SendMessageRequestHeader
from rocketq.protocol.message import Host, encode_properties, parse_offset_msg_id

_MASK64 = (1 << 64) - 1
_TRANSACTIONS_MAX = 100_000

#: remoting codes of a stored send → the gRPC code its entry carries (SendMessageActivity's table)
_STORED_CODES: dict[int, int] = {
    ResponseCode.SUCCESS: Code.OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: Code.MASTER_PERSISTENCE_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: Code.SLAVE_PERSISTENCE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: Code.HA_NOT_AVAILABLE,
}
_REFUSED_CODES: dict[int, int] = {
    ResponseCode.NO_PERMISSION: Code.FORBIDDEN,
    ResponseCode.TOPIC_NOT_EXIST: Code.TOPIC_NOT_FOUND,
    ResponseCode.MESSAGE_ILLEGAL: Code.BAD_REQUEST,
    ResponseCode.SERVICE_NOT_AVAILABLE: Code.INTERNAL_SERVER_ERROR,
    ResponseCode.SYSTEM_BUSY: Code.TOO_MANY_REQUESTS,
}


def consistent_hash(value: int, buckets: int) -> int:
    """Guava's ``Hashing.consistentHash(long, int)`` (its linear congruential generator, bit for bit)."""
    state = value & _MASK64
    candidate = 0
    while True:
        state = (2862933555777941757 * state + 1) & _MASK64
        high = state >> 33
        high = high - (1 << 31) if high >= 1 << 31 else high  # Java's (int) cast
        next_double = (high + 1) / float(1 << 31)
        nxt = int((candidate + 1) / next_double) if next_double > 0 else -1
        if 0 <= nxt < buckets:
            candidate = nxt
        else:
            return candidate


def group_queue(message_group: str, write_queues: int) -> int:
    return consistent_hash(java_string_hash(message_group), write_queues)


def _born_host(peer: str) -> Host:
    host, _, port = peer.rpartition(":")
    return (host.strip("[]") or "127.0.0.1", int(port) if port.isdigit() else 0)


class ProducerService:
    def __init__(self, ctx: BrokerContext, sends: SendService, transactions: TransactionService,
                 limits: SendLimits) -> None:  # fmt: skip
        self._ctx = ctx
        self._sends = sends
        self._transactions = transactions
        self.limits = limits
        self._round_robin = itertools.count()
        #: (producer group, transaction id) → (commit-log offset, half-queue offset)
        self._transactions_table: OrderedDict[tuple[str, str], tuple[int, int]] = OrderedDict()

    # ------------------------------------------------------------------------------------------- send

    async def send(self, req: svc.SendMessageRequest, peer: str) -> svc.SendMessageResponse:
        if not req.messages:
            raise GrpcRefusal(Code.MESSAGE_CORRUPTED, "no message to send")
        first = req.messages[0].topic
        for msg in req.messages:
            if msg.topic != first:
                raise GrpcRefusal(Code.MESSAGE_CORRUPTED, "topic in message is not same")
        topic = topic_of(first)
        tc = self._ctx.topics.get(topic)
        if tc is None:
            raise GrpcRefusal(Code.TOPIC_NOT_FOUND, f"topic not found: {topic}")
        if not tc.perm & PERM_WRITE or tc.write_queue_nums <= 0:
            raise GrpcRefusal(Code.FORBIDDEN, f"no writable queue of topic {topic}")
        now = int(time.time() * 1000)
        converted = [to_properties(m, topic, peer, self.limits, now) for m in req.messages]
        entries = []
        for msg, conv in zip(req.messages, converted, strict=True):
            group = conv.message_group if len(req.messages) == 1 else ""
            queue_id = (group_queue(group, tc.write_queue_nums) if group
                        else next(self._round_robin) % tc.write_queue_nums)  # fmt: skip
            header = SendMessageRequestHeader(
                producer_group=topic, topic=topic, queue_id=queue_id, sys_flag=conv.sys_flag,
                born_timestamp=conv.born_timestamp, properties=encode_properties(conv.properties),
                reconsume_times=msg.system_properties.delivery_attempt,
            )  # fmt: skip
            entries.append(await self._send_one(header, msg, peer))
        return svc.SendMessageResponse(status=combined([e.status.code for e in entries]), entries=entries)

    async def _send_one(self, header: SendMessageRequestHeader, msg: pb.Message, peer: str) -> svc.SendResultEntry:
        try:
            outcome = self._sends.send(header, msg.body, _born_host(peer), client_version=CURRENT_VERSION,
                                       remote=peer)  # fmt: skip
        except BrokerError as exc:
            outcome = SendOutcome(exc.code, exc.remark)
        except ProtocolError as exc:
            outcome = SendOutcome(ResponseCode.MESSAGE_ILLEGAL, str(exc))
        code = outcome.code
        if outcome.stored and code == ResponseCode.SUCCESS:
            code = await self._put_ack(outcome)
        if outcome.msg_id is None or code not in _STORED_CODES:
            mapped = _STORED_CODES.get(code) or _REFUSED_CODES.get(code, Code.INTERNAL_SERVER_ERROR)
            return svc.SendResultEntry(status=status(mapped, f"send message failed: {outcome.remark or code}"))
        mapped = _STORED_CODES[code]
        if mapped != Code.OK:
            return svc.SendResultEntry(status=status(mapped, f"send message failed, code={code}"))
        message_id = msg.system_properties.message_id
        transaction_id = ""
        if msg.system_properties.message_type == pb.TRANSACTION:
            transaction_id = message_id
            _, commit_log_offset = parse_offset_msg_id(outcome.msg_id)
            self.remember(header.producer_group, transaction_id, commit_log_offset, outcome.queue_offset)
        return svc.SendResultEntry(status=status(Code.OK), message_id=message_id, transaction_id=transaction_id,
                                   offset=outcome.queue_offset)  # fmt: skip

    async def _put_ack(self, outcome: SendOutcome) -> int:
        """The code once ``PutAck`` says the stored send may be answered (flush / replication waits)."""
        put_ack = self._ctx.put_ack
        if put_ack.immediate:
            return int(ResponseCode.SUCCESS)
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def done(code: int) -> None:
            if not fut.done():
                fut.set_result(code)

        if not put_ack.wait(outcome.end_offset, done, wait_store=outcome.wait_store):
            return int(ResponseCode.SUCCESS)
        return await fut

    # ----------------------------------------------------------------------------------- transactions

    def remember(self, group: str, transaction_id: str, commit_log_offset: int, queue_offset: int) -> None:
        table = self._transactions_table
        table[(group, transaction_id)] = (commit_log_offset, queue_offset)
        table.move_to_end((group, transaction_id))
        while len(table) > _TRANSACTIONS_MAX:
            table.popitem(last=False)

    def end_transaction(self, req: svc.EndTransactionRequest) -> svc.EndTransactionResponse:
        topic = topic_of(req.topic)
        if not req.transaction_id.strip():
            raise GrpcRefusal(Code.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
        if req.resolution == pb.COMMIT:
            resolution = COMMIT
        elif req.resolution == pb.ROLLBACK:
            resolution = ROLLBACK
        else:
            raise GrpcRefusal(Code.BAD_REQUEST, "the transaction resolution must be COMMIT or ROLLBACK")
        found = self._transactions_table.get((topic, req.transaction_id))
        if found is None:
            raise GrpcRefusal(Code.INTERNAL_SERVER_ERROR,
                              f"cannot found transaction data: topic={topic} transactionId={req.transaction_id}")
        commit_log_offset, queue_offset = found
        header = EndTransactionRequestHeader(
            producer_group=topic, tran_state_table_offset=queue_offset, commit_log_offset=commit_log_offset,
            commit_or_rollback=resolution, from_transaction_check=req.source == pb.SOURCE_SERVER_CHECK,
            msg_id=req.message_id, transaction_id=req.transaction_id,
        )  # fmt: skip
        answer = self._transactions.end_transaction(header)
        code, remark = answer if answer is not None else (ResponseCode.SYSTEM_ERROR, "not ended")
        if code != ResponseCode.SUCCESS:
            mapped = _REFUSED_CODES.get(code, Code.INTERNAL_SERVER_ERROR)
            if code == ResponseCode.SLAVE_NOT_AVAILABLE:
                mapped = Code.HA_NOT_AVAILABLE
            return svc.EndTransactionResponse(status=status(mapped, remark))
        self._transactions_table.pop((topic, req.transaction_id), None)
        return svc.EndTransactionResponse(status=status(Code.OK))
