"""The POP requests over remoting (Java 5's ``MQClientAPIImpl.popMessageAsync`` / ``ackMessageAsync`` /
``changeInvisibleTimeAsync``): POP_MESSAGE (200050), ACK_MESSAGE (200051), CHANGE_MESSAGE_INVISIBLETIME (200053).

A message's handle is its ``POP_CK`` text (``_pop_handle``); an ack or change names the topic the message was
read from (the pop retry topic for a retried message), the queue and offset from that handle.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass

from rocketq.client._api import MQClientAPI, broker_error
from rocketq.client._pop_handle import PROP_POP_CK, PopHandle, attach_handles, build_extra_info, real_topic
from rocketq.client.message import MessageExt, decode_body
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import ProtocolError, error_for_code
from rocketq.protocol import fastjson
from rocketq.protocol.headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketq.protocol.pullcodec import decode_messages

__all__ = [
    "NOT_FOUND_CODES",
    "PopAnswer",
    "ack_message",
    "batch_ack_body",
    "batch_ack_message",
    "change_invisible_time",
    "group_is_orderly",
    "pop_message",
]

#: answers that mean "nothing to hand out now" (Java's PopStatus POLLING_FULL / POLLING_NOT_FOUND)
NOT_FOUND_CODES = frozenset({ResponseCode.POLLING_FULL, ResponseCode.POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND})


@dataclass(slots=True)
class PopAnswer:
    """A POP answer: its code (SUCCESS or one of ``NOT_FOUND_CODES``), the messages with their handles."""

    code: int
    messages: list[MessageExt]
    rest_num: int = 0


async def pop_message(
    api: MQClientAPI, addr: str, broker_name: str, header: PopMessageRequestHeader, cls: type[MessageExt],
    timeout: float,
) -> PopAnswer:  # fmt: skip
    """One POP_MESSAGE; every message of a SUCCESS answer is an instance of ``cls`` with its ``POP_CK`` handle
    set. Any other answer but ``NOT_FOUND_CODES`` raises its ``BrokerError``."""
    ext = header.to_ext()
    ext["bname"] = broker_name
    resp = await api.invoke(addr, api.request(RequestCode.POP_MESSAGE, ext), timeout)
    if resp.code in NOT_FOUND_CODES:
        return PopAnswer(resp.code, [], _rest_num(resp.ext_fields))
    if resp.code != ResponseCode.SUCCESS:
        raise broker_error(resp, addr)
    try:
        rh = PopMessageResponseHeader.from_ext(resp.ext_fields)
        msgs: list[MessageExt] = decode_messages(bytes(resp.body), cls, broker_name, None, decode_body)
        attach_handles(msgs, rh, header.topic, broker_name, header.order)
    except (ProtocolError, ValueError) as exc:
        raise error_for_code(ResponseCode.SYSTEM_ERROR, f"bad POP answer from {addr}: {exc}") from exc
    return PopAnswer(resp.code, msgs, rh.rest_num)


def _rest_num(ext: dict[str, str]) -> int:
    try:
        return int(ext.get("restNum", "0"))
    except ValueError:
        return 0


def handle_of(msg: MessageExt) -> PopHandle:
    text = msg.properties.get(PROP_POP_CK)
    if not text:
        raise ValueError("the message has no receipt handle (it was not received by POP)")
    return PopHandle.parse(text)


async def ack_message(api: MQClientAPI, addr: str, group: str, topic: str, handle: PopHandle, timeout: float) -> None:
    """ACK_MESSAGE for ``handle`` of a message of ``topic`` (the subscribed topic); a refusal raises."""
    header = AckMessageRequestHeader(
        consumer_group=group, topic=real_topic(handle.retry, topic, group), queue_id=handle.queue_id,
        extra_info=handle.text, offset=handle.queue_offset,
    )  # fmt: skip
    ext = header.to_ext()
    ext["bname"] = handle.broker_name
    await api.call(addr, RequestCode.ACK_MESSAGE, ext, timeout)


async def change_invisible_time(
    api: MQClientAPI, addr: str, group: str, topic: str, handle: PopHandle, invisible_ms: int, timeout: float
) -> PopHandle:
    """CHANGE_MESSAGE_INVISIBLETIME; the new handle rebuilt from the answer as Java's client does (its
    checkpoint offset is the message's own offset); a refusal raises."""
    rtopic = real_topic(handle.retry, topic, group)
    header = ChangeInvisibleTimeRequestHeader(
        consumer_group=group, topic=rtopic, queue_id=handle.queue_id, extra_info=handle.text,
        offset=handle.queue_offset, invisible_time=invisible_ms,
    )  # fmt: skip
    ext = header.to_ext()
    ext["bname"] = handle.broker_name
    resp = await api.call(addr, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, ext, timeout)
    try:
        rh = ChangeInvisibleTimeResponseHeader.from_ext(resp.ext_fields)
    except ProtocolError as exc:
        raise error_for_code(ResponseCode.SYSTEM_ERROR, f"bad CHANGE_MESSAGE_INVISIBLETIME answer: {exc}") from exc
    text = build_extra_info(handle.queue_offset, rh.pop_time, rh.invisible_time, rh.revive_qid, rtopic,
                            handle.broker_name, handle.queue_id, handle.queue_offset)  # fmt: skip
    return PopHandle.parse(text)


def batch_ack_body(group: str, topic: str, handles: Sequence[PopHandle]) -> bytes:
    """Java ``batchAckMessageAsync``'s ``BatchAckMessageRequestBody``: one ``BatchAck`` per (retry mark, queue,
    checkpoint start, pop time), its acked offsets a ``java.util.BitSet`` relative to the start — which fastjson
    writes as the base64 of ``BitSet.toByteArray()`` (little-endian)."""
    merged: dict[tuple[str, int, int, int], tuple[PopHandle, int]] = {}
    for h in handles:
        key = (h.retry, h.queue_id, h.ck_offset, h.pop_time)
        first, bits = merged.get(key, (h, 0))
        if h.queue_offset < h.ck_offset:
            raise ValueError(f"receipt handle {h.text!r}: its offset is before its checkpoint start")
        merged[key] = (first, bits | 1 << (h.queue_offset - h.ck_offset))
    acks = [
        {"c": group, "t": topic, "r": h.retry, "so": h.ck_offset, "q": h.queue_id, "rq": h.revive_qid,
         "pt": h.pop_time, "it": h.invisible_ms,
         "b": base64.b64encode(bits.to_bytes((bits.bit_length() + 7) // 8, "little")).decode()}
        for h, bits in merged.values()
    ]  # fmt: skip
    return json.dumps({"acks": acks, "brokerName": handles[0].broker_name if handles else ""}).encode()


async def batch_ack_message(
    api: MQClientAPI, addr: str, group: str, topic: str, handles: Sequence[PopHandle], timeout: float
) -> None:
    """BATCH_ACK_MESSAGE (200151) for ``handles`` of one broker; a refusal raises."""
    await api.call(addr, RequestCode.BATCH_ACK_MESSAGE, None, timeout, batch_ack_body(group, topic, handles))


async def group_is_orderly(api: MQClientAPI, addr: str, group: str, timeout: float) -> bool | None:
    """The group's ``consumeMessageOrderly`` (RocketMQ 5) by GET_SUBSCRIPTIONGROUP_CONFIG (352); None when the
    broker does not answer it (a 4.9 broker: REQUEST_CODE_NOT_SUPPORTED) or does not know the group."""
    resp = await api.invoke(addr, api.request(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": group}), timeout)
    if resp.code != ResponseCode.SUCCESS:
        return None
    try:
        doc = fastjson.loads(bytes(resp.body))
    except ValueError:
        return None
    return bool(doc.get("consumeMessageOrderly")) if isinstance(doc, dict) else None
