"""ReceiveMessage, AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue on ``PopService``.

rocketmq-5x-grpc.md §3.7–3.10. A receive pops from every queue of this broker (queue id -1, as the proxy
does whatever queue the request names), FIFO when the group is orderly. The gRPC receipt handle is the POP
handle's text plus the message's commit-log offset (9 fields, as the proxy appends it). Messages already
delivered ``max_delivery_attempts`` times go to the dead-letter queue instead of the client (proxy's rule).

Push consumers (``auto_renew``) get 60 s of invisibility and the endpoint renews it (``renew.Renewals``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

from rocketq.broker.context import BrokerContext
from rocketq.broker.pop.service import PopService
from rocketq.broker.pop.types import AckOutcome, PopRequest, ReceiptHandle
from rocketq.codes import ResponseCode
from rocketq.grpc.convert import to_message
from rocketq.grpc.names import group_of, topic_of
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.renew import Renewals
from rocketq.grpc.status import Code, GrpcRefusal, code_of_remoting, combined, status
from rocketq.grpc.telemetry import duration_ms, filter_of

log = logging.getLogger(__name__)

MIN_INVISIBLE_MS = 10_000
MAX_INVISIBLE_MS = 12 * 3600 * 1000
AUTO_RENEW_INVISIBLE_MS = 60_000
MAX_BATCH = 32


def handle_text(handle: ReceiptHandle, commit_log_offset: int) -> str:
    return f"{handle.text()} {commit_log_offset}"


def parse_handle(text: str) -> tuple[ReceiptHandle, int | None]:
    """(POP handle, commit-log offset or None); ``GrpcRefusal(INVALID_RECEIPT_HANDLE)`` for anything else."""
    parts = text.split(" ")
    try:
        handle = ReceiptHandle.parse(" ".join(parts[:8]))
    except ValueError as exc:
        raise GrpcRefusal(Code.INVALID_RECEIPT_HANDLE, f"receipt handle is invalid: {exc}") from None
    offset = int(parts[8]) if len(parts) > 8 and parts[8].lstrip("-").isdigit() else None
    return handle, offset


def _now_ms() -> int:
    return int(time.time() * 1000)


class ConsumerService:
    def __init__(self, ctx: BrokerContext, pop: PopService, renewals: Renewals) -> None:
        self._ctx = ctx
        self._pop = pop
        self.renewals = renewals
        #: the long-polling clamp (ProxyConfig grpcClientConsumerMin/MaxLongPollingTimeoutMillis)
        self.min_polling_ms = 5_000
        self.max_polling_ms = 20_000
        #: answered this long before the deadline when the poll is cut to it (longPollingReserveTimeInMillis)
        self.reserve_ms = 100

    def _group_config(self, group: str) -> tuple[bool, int]:
        cfg = self._ctx.groups.find_or_create(group)
        if cfg is None:
            raise GrpcRefusal(Code.CONSUMER_GROUP_NOT_FOUND, f"consumer group not found: {group}")
        return cfg.consume_message_orderly, cfg.max_delivery_attempts

    def polling_ms(self, req: svc.ReceiveMessageRequest, time_left_ms: int | None, request_timeout_ms: int,
                   client_version: str = "") -> int:  # fmt: skip
        """Java's rule: the request's time or (deadline − request timeout / 2), clamped to [min, max], then to
        the deadline (less ``reserve_ms``, so the answer is out before it); ILLEGAL_POLLING_TIME (BAD_REQUEST for
        clients older than 5.0.3) when less than the minimum is left."""
        if req.HasField("long_polling_timeout"):
            wanted = duration_ms(req.long_polling_timeout)
        elif time_left_ms is not None:
            wanted = time_left_ms - request_timeout_ms // 2
        else:
            wanted = self.max_polling_ms
        wanted = min(max(wanted, self.min_polling_ms), self.max_polling_ms)
        if time_left_ms is not None and wanted > time_left_ms:
            if time_left_ms < self.min_polling_ms:
                code = Code.BAD_REQUEST if not client_version or client_version < "5.0.3" else Code.ILLEGAL_POLLING_TIME
                raise GrpcRefusal(code, "The deadline time remaining is not enough for polling, please check "
                                        "network condition")  # fmt: skip
            wanted = time_left_ms - self.reserve_ms
        return max(0, wanted)

    async def receive(
        self, req: svc.ReceiveMessageRequest, client_id: str, time_left_ms: int | None, request_timeout_ms: int,
        client_version: str = "",
    ) -> AsyncIterator[svc.ReceiveMessageResponse]:
        """The frames of one receive: a status, the messages, then the delivery timestamp."""
        try:
            frames = await self._receive(req, client_id, time_left_ms, request_timeout_ms, client_version)
        except GrpcRefusal as exc:
            frames = [svc.ReceiveMessageResponse(status=status(exc.code, exc.message))]
        for frame in frames:
            yield frame
        done = svc.ReceiveMessageResponse()
        done.delivery_timestamp.GetCurrentTime()
        yield done

    async def _receive(self, req: svc.ReceiveMessageRequest, client_id: str, time_left_ms: int | None,
                       request_timeout_ms: int, client_version: str) -> list[svc.ReceiveMessageResponse]:  # fmt: skip
        group = group_of(req.group)
        topic = topic_of(req.message_queue.topic)
        orderly, max_attempts = self._group_config(group)
        poll_ms = self.polling_ms(req, time_left_ms, request_timeout_ms, client_version)
        if req.auto_renew:
            invisible_ms = AUTO_RENEW_INVISIBLE_MS
        else:
            invisible_ms = duration_ms(req.invisible_duration) if req.HasField("invisible_duration") else 0
            if not MIN_INVISIBLE_MS <= invisible_ms <= MAX_INVISIBLE_MS:
                raise GrpcRefusal(Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime must be {MIN_INVISIBLE_MS} .. "
                                                               f"{MAX_INVISIBLE_MS} ms, not {invisible_ms}")
        kind, expression = filter_of(req.filter_expression)
        batch = min(max(req.batch_size, 1), MAX_BATCH)
        outcome = await self._pop.pop(PopRequest(
            group=group, topic=topic, queue_id=-1, max_nums=batch, invisible_ms=invisible_ms, poll_ms=poll_ms,
            expression_type=kind, expression=expression, order=orderly,
            attempt_id=req.attempt_id if req.HasField("attempt_id") else None, client=client_id,
        ))  # fmt: skip
        if outcome.code == ResponseCode.POLLING_TIMEOUT:
            return [svc.ReceiveMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no new message"))]
        if outcome.code == ResponseCode.POLLING_FULL:
            return [svc.ReceiveMessageResponse(status=status(Code.TOO_MANY_REQUESTS, "polling full"))]
        if outcome.code != ResponseCode.SUCCESS:
            return [svc.ReceiveMessageResponse(status=status(code_of_remoting(outcome.code), outcome.remark))]
        namespace = req.message_queue.topic.resource_namespace
        messages = []
        for popped in outcome.messages:
            rec = popped.record
            if popped.reconsume_times >= max_attempts:
                # delivered often enough: to the dead-letter queue instead of the client (the proxy's rule)
                self._pop.forward_to_dlq(group, popped.origin_topic, popped.handle)
                continue
            text = handle_text(popped.handle, rec.commit_log_offset)
            msg = to_message(rec, popped.origin_topic, namespace=namespace, receipt_handle=text,
                             delivery_attempt=popped.reconsume_times + 1)  # fmt: skip
            messages.append(msg)
            if req.auto_renew:
                self.renewals.track(client_id, group, popped.origin_topic, msg.system_properties.message_id, text)
        if not messages:
            return [svc.ReceiveMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no match message"))]
        return [svc.ReceiveMessageResponse(status=status(Code.OK)),
                *(svc.ReceiveMessageResponse(message=m) for m in messages)]  # fmt: skip

    # ------------------------------------------------------------------------------------ settlement

    def _live_handle(self, group: str, topic: str, message_id: str, text: str) -> tuple[ReceiptHandle, int | None]:
        """The handle to act on: the newest renewed one when the endpoint renews this message."""
        latest = self.renewals.release(group, topic, message_id, text)
        handle, offset = parse_handle(latest or text)
        if handle.expires_at <= _now_ms():
            raise GrpcRefusal(Code.INVALID_RECEIPT_HANDLE, "receipt handle is expired")
        return handle, offset

    def _ack_one(self, group: str, topic: str, entry: svc.AckMessageEntry) -> svc.AckMessageResultEntry:
        try:
            handle, _ = self._live_handle(group, topic, entry.message_id, entry.receipt_handle)
            outcome: AckOutcome = self._pop.ack(group, topic, handle)
            code = Code.OK if outcome.code == ResponseCode.SUCCESS else code_of_remoting(outcome.code)
            st = status(code, None if code == Code.OK else outcome.remark)
        except GrpcRefusal as exc:
            st = status(exc.code, exc.message)
        return svc.AckMessageResultEntry(message_id=entry.message_id, receipt_handle=entry.receipt_handle, status=st)

    def ack(self, req: svc.AckMessageRequest) -> svc.AckMessageResponse:
        group = group_of(req.group)
        topic = topic_of(req.topic)
        entries = [self._ack_one(group, topic, e) for e in req.entries]
        if not entries:
            raise GrpcRefusal(Code.BAD_REQUEST, "no entry to ack")
        return svc.AckMessageResponse(status=combined([e.status.code for e in entries]), entries=entries)

    def change_invisible(self, req: svc.ChangeInvisibleDurationRequest) -> svc.ChangeInvisibleDurationResponse:
        group = group_of(req.group)
        topic = topic_of(req.topic)
        invisible_ms = duration_ms(req.invisible_duration)
        if not 0 <= invisible_ms <= MAX_INVISIBLE_MS:
            raise GrpcRefusal(Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime must be 0 .. {MAX_INVISIBLE_MS} ms")
        handle, offset = self._live_handle(group, topic, req.message_id, req.receipt_handle)
        outcome = self._pop.change_invisible(group, topic, handle, invisible_ms)
        if outcome.code != ResponseCode.SUCCESS or outcome.handle is None:
            return svc.ChangeInvisibleDurationResponse(status=status(code_of_remoting(outcome.code), outcome.remark))
        text = outcome.handle.text() if offset is None else handle_text(outcome.handle, offset)
        return svc.ChangeInvisibleDurationResponse(status=status(Code.OK), receipt_handle=text)

    def forward_to_dlq(self, req: svc.ForwardMessageToDeadLetterQueueRequest,
                       ) -> svc.ForwardMessageToDeadLetterQueueResponse:  # fmt: skip
        group = group_of(req.group)
        topic = topic_of(req.topic)
        handle, offset = self._live_handle(group, topic, req.message_id, req.receipt_handle)
        if offset is None:
            raise GrpcRefusal(Code.INVALID_RECEIPT_HANDLE, "receipt handle has no commit-log offset")
        outcome = self._pop.forward_to_dlq(group, topic, handle)
        code = Code.OK if outcome.code == ResponseCode.SUCCESS else code_of_remoting(outcome.code)
        return svc.ForwardMessageToDeadLetterQueueResponse(status=status(code, None if code == Code.OK
                                                                         else outcome.remark))  # fmt: skip
