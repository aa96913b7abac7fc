"""Client-side checks (Java ``Validators``; name rules from ``protocol.topics``) and Java property/batch encodings."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rocketq.client.errors import InvalidMessageError
from rocketq.errors import ClientError
from rocketq.protocol.topics import NOT_ALLOWED_SEND_TOPICS, group_name_error, topic_name_error

if TYPE_CHECKING:
    from rocketq.client.message import Message


def check_topic(topic: str) -> None:
    # Java's client calls a name of spaces only "blank" before applying the broker's rule (protocol.topics).
    if not topic or not topic.strip():
        raise InvalidMessageError("the specified topic is blank")
    error = topic_name_error(topic)
    if error is not None:
        raise InvalidMessageError(error)


def check_group(group: str) -> None:
    error = group_name_error(group)
    if error is not None:
        raise ClientError(error)


#: Topics that passed ``check_message``'s topic checks (a pure function of the name): a send to a known topic
#: skips the regex. Bounded: cleared when full.
_SENDABLE_TOPICS: set[str] = set()
_SENDABLE_TOPICS_MAX = 4096


def check_message(msg: Message, max_message_size: int) -> None:
    topic = msg.topic
    if topic.__class__ is not str or topic not in _SENDABLE_TOPICS:
        check_topic(topic)
        if topic in NOT_ALLOWED_SEND_TOPICS:
            raise InvalidMessageError(f"sending message to topic [{topic}] is forbidden")
        if len(_SENDABLE_TOPICS) >= _SENDABLE_TOPICS_MAX:
            _SENDABLE_TOPICS.clear()
        _SENDABLE_TOPICS.add(topic)
    body = msg.body
    if body is None:
        raise InvalidMessageError("the message body is null")
    n = len(body)
    if n == 0:
        raise InvalidMessageError("the message body length is zero")
    if n > max_message_size:
        raise InvalidMessageError(f"the message body size over max value, MAX: {max_message_size}")


def properties_to_string(props: Mapping[str, str]) -> str:
    """Java ``messageProperties2String``: ``k\\x01v`` joined by ``\\x02`` (no trailing separator)."""
    return "\x02".join([f"{k}\x01{v}" for k, v in props.items() if v is not None])


_BATCH_HEAD = struct.Struct(">iiiii")  # total size, magic 0, body crc 0, flag, body length
_I16 = struct.Struct(">h")


def encode_batch_item(flag: int, body: bytes, props: Mapping[str, str]) -> bytes:
    """One message of a SEND_BATCH_MESSAGE body (Java ``MessageDecoder.encodeMessage``)."""
    props_b = properties_to_string(props).encode()
    total = 20 + len(body) + 2 + len(props_b)
    return b"".join((_BATCH_HEAD.pack(total, 0, 0, flag, len(body)), body, _I16.pack(len(props_b)), props_b))


def split_batch(encoded: Sequence[bytes], max_size: int) -> list[list[int]]:
    """Group item indexes into consecutive runs whose encoded size stays ≤ ``max_size``.

    Raises ``InvalidMessageError`` for an item that alone exceeds the limit.
    """
    return split_batch_sizes([len(item) for item in encoded], max_size)


def split_batch_sizes(sizes: Sequence[int], max_size: int) -> list[list[int]]:
    """``split_batch`` given the encoded sizes of the items."""
    groups: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i, n in enumerate(sizes):
        if n > max_size:
            raise InvalidMessageError(f"message {i} of the batch is {n} bytes encoded, over the {max_size} limit")
        if current and size + n > max_size:
            groups.append(current)
            current, size = [], 0
        current.append(i)
        size += n
    if current:
        groups.append(current)
    return groups
