"""The remoting front of POP: Java 5.x's POP_MESSAGE (200050), ACK_MESSAGE (200051), BATCH_ACK_MESSAGE (200151),
CHANGE_MESSAGE_INVISIBLETIME (200053), and rocketq's POP_INFLIGHT_STATS — header in, ``PopService`` call,
answer out through the gate. A pop that long-polls is an async handler: the gate runs it as its own task."""

from __future__ import annotations

import base64
import binascii
import time
from typing import Any

import orjson

from rocketq.broker.context import BrokerContext
from rocketq.broker.pop.service import PopService
from rocketq.broker.pop.types import PopRequest, ReceiptHandle
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PeekMessageRequestHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketq.protocol.pop_admin import POP_INFLIGHT_STATS
from rocketq.remoting.connection import Connection

#: Java's rule: a pop whose born time plus poll time is more than this in the past has timed out already
_LATE_MS = 500
_EMPTY_POP = PopMessageResponseHeader(pop_time=0, invisible_time=0, revive_qid=0, rest_num=0)


class PopProcessors:
    def __init__(self, ctx: BrokerContext, pop: PopService) -> None:
        self._ctx = ctx
        self._pop = pop

    def register(self) -> None:
        gate = self._ctx.gate
        gate.register(RequestCode.POP_MESSAGE, self.pop)
        gate.register(RequestCode.ACK_MESSAGE, self.ack)
        gate.register(RequestCode.BATCH_ACK_MESSAGE, self.batch_ack)
        gate.register(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, self.change_invisible)
        gate.register(RequestCode.PEEK_MESSAGE, self.peek)
        gate.register(RequestCode.NOTIFICATION, self.notification)
        gate.register(RequestCode.POLLING_INFO, self.polling_info)
        gate.register(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, self.group_config)
        gate.register(POP_INFLIGHT_STATS, self.inflight)

    async def pop(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = PopMessageRequestHeader.from_ext(cmd.ext_fields)  # a HeaderError: the gate answers and logs it
        now = int(time.time() * 1000)
        if now - h.born_time - h.poll_time > _LATE_MS:  # Java: also for pollTime 0
            return cmd.response(ResponseCode.POLLING_TIMEOUT, f"pop message is timeout too much: received "
                                f"{now - h.born_time} ms after it was sent, pollTime {h.poll_time} ms",
                                _EMPTY_POP.to_ext())  # fmt: skip
        req = PopRequest(
            group=h.consumer_group, topic=h.topic, queue_id=h.queue_id, max_nums=h.max_msg_nums,
            invisible_ms=h.invisible_time, poll_ms=max(0, h.poll_time), init_mode=h.init_mode,
            expression_type=h.exp_type or "TAG", expression=h.exp or "*", order=h.order, attempt_id=h.attempt_id,
            client=conn.remote,
        )  # fmt: skip
        out = await self._pop.pop(req)
        if out.code != ResponseCode.SUCCESS:
            # Java answers every refusal with the four header fields (0): its client decodes them on 209/210 too
            return cmd.response(out.code, out.remark, _EMPTY_POP.to_ext())
        header = PopMessageResponseHeader(
            pop_time=out.pop_time, invisible_time=out.invisible_ms, revive_qid=out.revive_qid, rest_num=out.rest_num,
            start_offset_info=out.start_offset_info or None, msg_offset_info=out.msg_offset_info or None,
            order_count_info=out.order_count_info or None,
        )  # fmt: skip
        return cmd.response(ResponseCode.SUCCESS, None, header.to_ext(), out.body)

    def _handle(self, extra_info: str, offset: int) -> ReceiptHandle | None:
        try:
            handle = ReceiptHandle.parse(extra_info + (f" {offset}" if len(extra_info.split(" ")) == 7 else ""))
        except ValueError:
            return None
        return handle if handle.queue_offset == offset else ReceiptHandle(
            handle.ck_offset, handle.pop_time, handle.invisible_ms, handle.revive_qid, handle.retry,
            handle.broker_name, handle.queue_id, offset)  # fmt: skip

    def ack(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = AckMessageRequestHeader.from_ext(cmd.ext_fields)
        handle = self._handle(h.extra_info, h.offset)
        if handle is None:
            return cmd.response(ResponseCode.MESSAGE_ILLEGAL, f"extraInfo {h.extra_info!r} is not a pop handle")
        out = self._pop.ack(h.consumer_group, _origin(h.topic, h.consumer_group), handle)
        return cmd.response(out.code, out.remark)

    def batch_ack(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """BATCH_ACK_MESSAGE: JSON ``{"acks": [{c, t, r, so, q, rq, pt, it, b: [offsets relative to so]}]}``
        (``b`` is Java's BitSet; rocketq reads a list of set bits or an integer bit mask)."""
        try:
            doc: Any = orjson.loads(bytes(cmd.body or b""))
            acks = doc["acks"]
            for a in acks:
                so, rq, pt, it = int(a["so"]), int(a["rq"]), int(a["pt"]), int(a.get("it", 0))
                group, topic, retry = str(a["c"]), str(a["t"]), str(a.get("r", "0")) != "0"
                for bit in _bits(a.get("b")):
                    handle = ReceiptHandle(so, pt, it, rq, retry, self._ctx.config.brokerName, int(a["q"]), so + bit)
                    out = self._pop.ack(group, _origin(topic, group), handle)
                    if out.code != ResponseCode.SUCCESS:
                        return cmd.response(out.code, out.remark)
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            return cmd.response(ResponseCode.MESSAGE_ILLEGAL, f"batch ack body is not readable: {exc}")
        return cmd.response(ResponseCode.SUCCESS, None)

    def change_invisible(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = ChangeInvisibleTimeRequestHeader.from_ext(cmd.ext_fields)
        handle = self._handle(h.extra_info, h.offset)
        if handle is None:
            return cmd.response(ResponseCode.MESSAGE_ILLEGAL, f"extraInfo {h.extra_info!r} is not a pop handle")
        out = self._pop.change_invisible(h.consumer_group, _origin(h.topic, h.consumer_group), handle,
                                         h.invisible_time)  # fmt: skip
        if out.code != ResponseCode.SUCCESS or out.handle is None:
            return cmd.response(out.code, out.remark)
        header = ChangeInvisibleTimeResponseHeader(pop_time=out.handle.pop_time, invisible_time=out.handle.invisible_ms,
                                                   revive_qid=out.handle.revive_qid)  # fmt: skip
        return cmd.response(ResponseCode.SUCCESS, None, header.to_ext())

    def peek(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = PeekMessageRequestHeader.from_ext(cmd.ext_fields)
        out, found = self._pop.peek(h.consumer_group, h.topic, h.queue_id, h.max_msg_nums)
        if out.code != ResponseCode.SUCCESS:
            return cmd.response(out.code, out.remark)
        header = PopMessageResponseHeader(pop_time=0, invisible_time=0, revive_qid=0, rest_num=out.rest_num)
        code = ResponseCode.SUCCESS if found else ResponseCode.PULL_NOT_FOUND
        return cmd.response(code, None, header.to_ext(), b"".join(found))

    async def notification(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = NotificationRequestHeader.from_ext(cmd.ext_fields)
        code, has_msg = await self._pop.notification(h.consumer_group, h.topic, h.queue_id, h.poll_time, h.order,
                                                     h.attempt_id)  # fmt: skip
        if code not in (ResponseCode.SUCCESS, ResponseCode.POLLING_FULL):
            return cmd.response(code, "the group or topic cannot be popped")
        header = NotificationResponseHeader(has_msg=has_msg, polling_full=code == ResponseCode.POLLING_FULL)
        return cmd.response(ResponseCode.SUCCESS, None, header.to_ext())

    def polling_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = PollingInfoRequestHeader.from_ext(cmd.ext_fields)
        if self._ctx.topics.get(h.topic) is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please!")
        header = PollingInfoResponseHeader(polling_num=self._pop.polling_count(h.topic))
        return cmd.response(ResponseCode.SUCCESS, None, header.to_ext())

    def group_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """GET_SUBSCRIPTIONGROUP_CONFIG (352, Java 5): one group's configuration as JSON (created first when the
        broker auto-creates groups, as Java's findSubscriptionGroupConfig does). 5.x consumers read
        ``consumeMessageOrderly`` from it."""
        group = (cmd.ext_fields or {}).get("group") or ""
        cfg = self._ctx.groups.table.get(group) or (self._ctx.groups.find_or_create(group) if group else None)
        if cfg is None:
            return cmd.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker")
        body = cfg.to_json() | {"consumeMessageOrderly": cfg.consume_message_orderly}
        return cmd.response(ResponseCode.SUCCESS, None, body=orjson.dumps(body))

    def inflight(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        group = (cmd.ext_fields or {}).get("consumerGroup") or None
        rows = [{"topic": c.topic, "group": c.group, "inflight": c.inflight, "invisible": c.invisible,
                 "ready": c.ready} for c in self._pop.inflight(group)]  # fmt: skip
        return cmd.response(ResponseCode.SUCCESS, body=orjson.dumps(rows))


def _origin(topic: str, group: str) -> str:
    """Java clients ack a retried message on its retry topic; the service wants the subscribed one."""
    prefix = f"%RETRY%{group}_"
    return topic[len(prefix) :] if topic.startswith(prefix) else topic


def _bits(raw: object) -> list[int]:
    if isinstance(raw, str):  # Java: base64 of BitSet.toByteArray() (little-endian bytes, bit i = offset so + i)
        data = base64.b64decode(raw, validate=True)
        return [i * 8 + j for i, byte in enumerate(data) for j in range(8) if byte >> j & 1]
    if isinstance(raw, int):
        return [i for i in range(raw.bit_length()) if raw >> i & 1]
    if isinstance(raw, list):
        return [int(b) for b in raw]
    raise ValueError(f"b={raw!r} is neither a bit mask nor a list of offsets")
