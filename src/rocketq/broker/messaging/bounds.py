"""Ranges the broker checks before it stores a number or a name a client sent (docs/reliability.md,
"Validation at the gate").

The header codec already holds every integer to its Java type's width; these are the semantic ranges on top:
a queue count within ``maxTopicQueueNums``, a queue id inside it, an offset that is not negative, a group name
a Java client could use. Each check answers the reason (naming the field) or None; the caller answers it with
the code Java uses for bad input in that request (SYSTEM_ERROR throughout).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rocketq.errors import ProtocolError
from rocketq.protocol.header_codec import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from rocketq.protocol.topics import GROUP_MAX_LENGTH, topic_name_error

#: SubscriptionGroupConfig's number fields and their Java width (int: 32, long: 64)
GROUP_INT_FIELDS = {"retryQueueNums": 32, "retryMaxTimes": 32, "brokerId": 64, "whichBrokerWhenConsumeSlowly": 64}


def check_body_ints(obj: Mapping[str, Any], fields: Mapping[str, int], body: str) -> None:
    """Each of ``fields`` present in a JSON body must be a number fastjson would put in its Java field: an
    integer (or integer text, or a finite float it truncates) within the field's width; ProtocolError names
    the field otherwise (Java: a JSONException, answered SYSTEM_ERROR)."""
    for key, bits in fields.items():
        value = obj.get(key)
        if value is None:
            continue
        try:
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise ValueError
            number = int(value) if not isinstance(value, float) or math.isfinite(value) else None
        except ValueError:
            number = None
        if number is None:
            raise ProtocolError(f"{body} field {key!r} is not a number: {str(value)[:40]!r}")
        low, high = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
        if not low <= number <= high:
            raise ProtocolError(f"{body} field {key!r} is out of range for a {bits}-bit integer: {str(value)[:40]}")


def queue_count_error(field: str, value: int, max_queue_nums: int, *, low: int = 1) -> str | None:
    """A topic's (or a group's retry topic's) queue count: ``low`` to ``maxTopicQueueNums``."""
    if low <= value <= max_queue_nums:
        return None
    return f"{field} {value} is out of range: {low} to {max_queue_nums} (maxTopicQueueNums)"


def queue_id_error(field: str, value: int, max_queue_nums: int) -> str | None:
    """A queue id no topic of this broker can have: negative, or not below ``maxTopicQueueNums``."""
    if 0 <= value < max_queue_nums:
        return None
    return f"{field} {value} is out of range: 0 to {max_queue_nums - 1} (maxTopicQueueNums - 1)"


def offset_error(field: str, value: int) -> str | None:
    """An offset to be stored: a queue offset is never negative (-1 means "none" in the offset table)."""
    return None if value >= 0 else f"{field} {value} is negative"


def group_error(field: str, group: str) -> str | None:
    """A group name to be stored: not blank and at most 255 characters (Java's client check,
    Validators.checkGroup; the character set is not enforced, as the Java broker does not)."""
    if not group.strip():
        return f"{field} is blank"
    if len(group) > GROUP_MAX_LENGTH:
        return f"{field} is longer than {GROUP_MAX_LENGTH} characters ({len(group)})"
    return None


def commit_error(max_queue_nums: int, group: str, topic: str, queue_id: int, offset: int) -> str | None:
    """An offset commit (UPDATE_CONSUMER_OFFSET, a pull's commitOffset): a valid topic name (the offset table's
    key is ``topic@group``: a topic with '@' would be read back as another), a group name, a queue id inside
    ``maxTopicQueueNums`` and an offset that is not negative."""
    return (
        group_error("consumerGroup", group)
        or topic_name_error(topic)
        or queue_id_error("queueId", queue_id, max_queue_nums)
        or offset_error("commitOffset", offset)
    )
