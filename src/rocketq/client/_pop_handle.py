"""The client's side of a POP receipt handle: Java's ``ExtraInfoUtil`` format and ``MQClientAPIImpl
.processPopResponse``'s rebuild of each message's handle from the POP_MESSAGE answer header.

The handle (the ``POP_CK`` property, Java's ``extraInfo``) is eight space-separated fields:
``ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId queueOffset``; ``retry`` is ``0``
(the topic), ``1`` (``%RETRY%group_topic``) or ``2`` (the V2 retry topic ``%RETRY%group+topic``). The broker
keeps its own parser (``broker/pop``); the client may not import it, so the format lives here too.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.client.message import MessageExt
from rocketq.protocol.headers import PopMessageResponseHeader
from rocketq.protocol.topics import RETRY_PREFIX

__all__ = [
    "ORDER_REVIVE_QID",
    "PROP_FIRST_POP_TIME",
    "PROP_POP_CK",
    "PopHandle",
    "attach_handles",
    "build_extra_info",
    "parse_offset_info",
    "real_topic",
    "retry_mark",
]

#: Java MessageConst.PROPERTY_POP_CK / PROPERTY_FIRST_POP_TIME
PROP_POP_CK = "POP_CK"
PROP_FIRST_POP_TIME = "1ST_POP_TIME"
#: Java KeyBuilder.POP_ORDER_REVIVE_QUEUE: an orderly pop's handles carry it (no checkpoint)
ORDER_REVIVE_QID = 999


def retry_mark(topic: str) -> str:
    """Java ``ExtraInfoUtil.getRetry(topic)``: ``2`` for a V2 pop retry topic, ``1`` for any ``%RETRY%`` topic."""
    if topic.startswith(RETRY_PREFIX):
        return "2" if "+" in topic else "1"
    return "0"


def real_topic(mark: str, topic: str, group: str) -> str:
    """Java ``ExtraInfoUtil.getRealTopic``: the topic an ack names — the pop retry topic for a retried message."""
    if mark == "0":
        return topic
    if mark == "1":
        return f"{RETRY_PREFIX}{group}_{topic}"
    if mark == "2":
        return f"{RETRY_PREFIX}{group}+{topic}"
    raise ValueError(f"receipt handle retry mark {mark!r} is not 0, 1 or 2")


def build_extra_info(
    ck_offset: int, pop_time: int, invisible_ms: int, revive_qid: int, topic: str, broker_name: str, queue_id: int,
    queue_offset: int | None = None,
) -> str:  # fmt: skip
    """Java ``ExtraInfoUtil.buildExtraInfo`` (seven fields, or eight with ``queue_offset``)."""
    text = f"{ck_offset} {pop_time} {invisible_ms} {revive_qid} {retry_mark(topic)} {broker_name} {queue_id}"
    return text if queue_offset is None else f"{text} {queue_offset}"


@dataclass(slots=True, frozen=True)
class PopHandle:
    """A parsed handle; ``text`` is sent back unchanged as the ack's ``extraInfo``."""

    text: str
    ck_offset: int
    pop_time: int
    invisible_ms: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int

    @property
    def orderly(self) -> bool:
        return self.revive_qid == ORDER_REVIVE_QID

    @classmethod
    def parse(cls, text: str) -> PopHandle:
        """``ValueError`` naming what is wrong with ``text``."""
        parts = text.split(" ")
        if len(parts) != 8:
            raise ValueError(f"receipt handle {text!r} has {len(parts)} fields, 8 expected")
        if parts[4] not in ("0", "1", "2"):
            raise ValueError(f"receipt handle {text!r}: retry mark {parts[4]!r} is not 0, 1 or 2")
        try:
            return cls(text, int(parts[0]), int(parts[1]), int(parts[2]), int(parts[3]), parts[4], parts[5],
                       int(parts[6]), int(parts[7]))  # fmt: skip
        except ValueError:
            raise ValueError(f"receipt handle {text!r}: a number field is not a number") from None


def parse_offset_info(text: str | None) -> dict[str, list[str]]:
    """``startOffsetInfo`` / ``msgOffsetInfo`` / ``orderCountInfo``: ``"<mark> <key> <value>[,value…]"``
    entries separated by ``;`` → {``"<mark>@<key>"``: values}. Java's parse refuses a malformed or
    repeated entry; so does this one (``ValueError``)."""
    out: dict[str, list[str]] = {}
    if not text:
        return out
    for one in text.split(";"):
        split = one.split(" ")
        if len(split) != 3:
            raise ValueError(f"malformed POP offset info entry {one!r}")
        key = f"{split[0]}@{split[1]}"
        if key in out:
            raise ValueError(f"repeated POP offset info entry {key!r}")
        out[key] = split[2].split(",")
    return out


def attach_handles(
    msgs: list[MessageExt], header: PopMessageResponseHeader, topic: str, broker_name: str, order: bool
) -> None:
    """Set each popped message's ``POP_CK`` handle, ``1ST_POP_TIME``, broker name and topic (the requested one,
    also for a message read from the retry topic) — Java's ``processPopResponse`` for a POP answer.

    A handle the broker already put in the message (a retried message it re-encoded) is kept.
    """
    start_info = parse_offset_info(header.start_offset_info)
    msg_info = parse_offset_info(header.msg_offset_info)
    order_info = parse_offset_info(header.order_count_info)
    # the popped offsets of each (mark@queueId), in body order: the index of a message in its list finds its
    # offset in msgOffsetInfo
    sort_map: dict[str, list[int]] = {}
    for m in msgs:
        ck = m.properties.get(PROP_POP_CK)
        mark = PopHandle.parse(ck).retry if ck else retry_mark(m.topic)
        sort_map.setdefault(f"{mark}@{m.queue_id}", []).append(m.queue_offset)
    first_ck: dict[str, str] = {}
    for m in msgs:
        if not start_info:
            # an old broker: no offset info, the first message of each queue starts the checkpoint
            key = f"{m.topic}{m.queue_id}"
            if key not in first_ck:
                first_ck[key] = build_extra_info(m.queue_offset, header.pop_time, header.invisible_time,
                                                 header.revive_qid, m.topic, broker_name, m.queue_id)  # fmt: skip
            m.properties[PROP_POP_CK] = f"{first_ck[key]} {m.queue_offset}"
        elif PROP_POP_CK not in m.properties:
            mark = retry_mark(m.topic)
            qkey = f"{mark}@{m.queue_id}"
            if qkey not in start_info or qkey not in msg_info:
                raise ValueError(f"the POP answer has no offset info for {qkey!r}")
            index = sort_map[qkey].index(m.queue_offset)
            offsets = msg_info[qkey]
            if index >= len(offsets):
                raise ValueError(f"the POP answer's msgOffsetInfo for {qkey!r} has {len(offsets)} offsets")
            m.properties[PROP_POP_CK] = build_extra_info(
                int(start_info[qkey][0]), header.pop_time, header.invisible_time, header.revive_qid, m.topic,
                broker_name, m.queue_id, int(offsets[index]),
            )  # fmt: skip
            if order and order_info:
                count = order_info.get(f"{mark}@qo{m.queue_id}%{m.queue_offset}") or order_info.get(qkey)
                if count is not None and int(count[0]) > 0:
                    m.reconsume_times = int(count[0])
        m.properties.setdefault(PROP_FIRST_POP_TIME, str(header.pop_time))
        m.broker_name = broker_name
        m.topic = topic
