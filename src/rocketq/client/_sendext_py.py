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
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketq.client._validators import properties_to_string
from rocketq.codes import RequestCode
from rocketq.protocol.command import RemotingCommand, encode_header, encode_prefix

__all__ = ["v2_ext", "v2_head"]


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
