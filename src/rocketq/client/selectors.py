"""Message queue selectors for ordered sends (Java ``MessageQueueSelector``).

A selector is any callable ``(queues, message, arg) -> MessageQueue``; ``queues`` is the topic's publish list
(sorted by broker name, then queue id), so the same ``arg`` lands on the same queue as long as the topic's
queues do not change.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rocketq.common.hashing import java_string_hash
from rocketq.protocol.bodies import MessageQueue

if TYPE_CHECKING:
    from rocketq.client.message import Message

__all__ = ["MessageQueueSelector", "java_hash_code", "select_by_hash", "select_by_random"]

MessageQueueSelector = Callable[[Sequence[MessageQueue], "Message", Any], MessageQueue]


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


def java_hash_code(arg: object) -> int:
    """``arg.hashCode()`` as Java computes it for the argument's natural Java type.

    ``str`` → ``String.hashCode``; ``bool`` → ``Boolean.hashCode``; ``int`` → ``Integer.hashCode`` in the
    int range, else ``Long.hashCode``; anything else → the ``String.hashCode`` of ``str(arg)``.
    """
    if isinstance(arg, str):
        return java_string_hash(arg)
    if isinstance(arg, bool):
        return 1231 if arg else 1237
    if isinstance(arg, int):
        if -(2**31) <= arg < 2**31:
            return arg
        v = arg & 0xFFFFFFFFFFFFFFFF
        return _int32(v ^ (v >> 32))
    return java_string_hash(str(arg))


def select_by_hash(queues: Sequence[MessageQueue], msg: Message | None, arg: Any) -> MessageQueue:
    """Java ``SelectMessageQueueByHash``: ``abs(arg.hashCode() % len(queues))`` (Java's truncating ``%``)."""
    if not queues:
        raise ValueError("no message queue to select from")
    return queues[abs(java_hash_code(arg)) % len(queues)]


def select_by_random(queues: Sequence[MessageQueue], msg: Message | None, arg: Any) -> MessageQueue:
    """Java ``SelectMessageQueueByRandom``."""
    if not queues:
        raise ValueError("no message queue to select from")
    return random.choice(list(queues))
