"""A plain SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE request's extFields: the pure twin of ``_sendext_c`` (the spec).

``v2_ext`` is what ``build_send_request`` writes for a send to a topic that is not a retry topic: the V2 header's
single-letter keys in the typed header's order (``send_header_to_v2``), the numbers as decimal text, the properties
as Java's ``messageProperties2String`` without the last separator (``properties_to_string``), and the constant
fields a producer always sends (``j`` reconsume times 0, ``k`` unit mode false). The compiled twin builds the same
dict in one call; ``tests/unit/client/test_sendext.py`` holds them to the same output.

``v2_head`` is the frame head (length words and JSON header) of a single plain SEND_MESSAGE_V2 with those
extFields: what the remoting layer writes for the command ``build_send_request`` makes, given the opaque the
connection assigns. The producer's task-less send calls it when nothing has to see the command first (no ACL
signing hook); the compiled twin writes the head without making the dict and the command.

``send_answer`` reads a stored send's answer (its extFields) into the ``SendResult`` when the fields have their
usual shape; anything else gives None and ``MQClientAPI.process_send_response`` reads them the general way.
``batch_results`` splits an auto-batch's answer into each message's own result (``split_batch_result``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rocketq.client._validators import properties_to_string
from rocketq.client.message import DEFAULT_REGION, SendResult, SendStatus, make_send_result
from rocketq.codes import RequestCode
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.command import RemotingCommand, encode_header, encode_prefix

__all__ = ["batch_results", "send_answer", "v2_ext", "v2_head"]

#: an int as the broker writes it: decimal digits, a minus sign at most, within a Java long
_DECIMAL = re.compile(r"-?[0-9]{1,18}")


def v2_ext(
    group: str, topic: str, create_topic_key: str, default_queue_nums: int, queue_id: int, sys_flag: int, born_ms: int,
    flag: int, props: Mapping[str, str], batch: str, broker_name: str,
) -> dict[str, str]:
    """The extFields of a V2 send of ``topic`` to queue ``queue_id`` of ``broker_name`` (``batch`` is "true" or
    "false")."""
    return {
        "a": group,
        "b": topic,
        "c": create_topic_key,
        "d": str(default_queue_nums),
        "e": str(queue_id),
        "f": str(sys_flag),
        "g": str(born_ms),
        "h": str(flag),
        "i": properties_to_string(props),
        "j": "0",
        "k": "false",
        "m": batch,
        "n": broker_name,
    }


def v2_head(
    opaque: int, language: str, version: int, group: str, topic: str, create_topic_key: str, default_queue_nums: int,
    queue_id: int, sys_flag: int, born_ms: int, flag: int, props: Mapping[str, str], broker_name: str,
    body: bytes | bytearray,
) -> bytes:
    """The head of the frame that sends ``body`` as a single (not batch) V2 message; ``body`` follows it unchanged."""
    ext = v2_ext(group, topic, create_topic_key, default_queue_nums, queue_id, sys_flag, born_ms, flag, props, "false",
                 broker_name)  # fmt: skip
    cmd = RemotingCommand(RequestCode.SEND_MESSAGE_V2, opaque, 0, language, version, None, ext, body)
    return encode_prefix(cmd, encode_header(cmd))


def send_answer(ext: Mapping[str, str], status: SendStatus, uniq_id: str, mq: MessageQueue) -> SendResult | None:
    """The result of the send of ``uniq_id`` to ``mq`` whose answer carries ``ext``, when ``msgId`` is text,
    ``queueId`` is ``mq``'s and ``queueOffset`` a plain decimal, and ``MSG_REGION`` / ``TRACE_ON`` are text or
    absent; else None."""
    offset_msg_id = ext.get("msgId")
    queue_id = ext.get("queueId")
    queue_offset = ext.get("queueOffset")
    region = ext.get("MSG_REGION")
    trace = ext.get("TRACE_ON")
    if (
        offset_msg_id.__class__ is not str
        or not _is_decimal(queue_id)
        or not _is_decimal(queue_offset)
        or int(queue_id) != mq.queue_id  # type: ignore[arg-type]
        or (region is not None and region.__class__ is not str)
        or (trace is not None and trace.__class__ is not str)
    ):
        return None
    return make_send_result(status, uniq_id, offset_msg_id, mq, int(queue_offset), ext.get("transactionId"),  # type: ignore[arg-type]
                            region or DEFAULT_REGION, trace != "false")  # fmt: skip


def _is_decimal(value: object) -> bool:
    return isinstance(value, str) and value.__class__ is str and _DECIMAL.fullmatch(value) is not None


def batch_results(result: SendResult, count: int) -> list[SendResult] | None:
    """The results of the ``count`` messages of a batch answered with ``result`` (comma-joined ids, the first
    message's queue offset), in order; None when its ids do not number ``count``."""
    msg_ids = result.msg_id.split(",")
    offset_ids = result.offset_msg_id.split(",")
    if len(msg_ids) != count or len(offset_ids) != count:
        return None
    first = result.queue_offset
    status, mq, tx, region, trace_on = (result.status, result.message_queue, result.transaction_id,
                                        result.region_id, result.trace_on)  # fmt: skip
    return [make_send_result(status, msg_ids[i], offset_ids[i], mq, first + i, tx, region, trace_on)
            for i in range(count)]  # fmt: skip
