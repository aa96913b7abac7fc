"""Consumer-side vocabulary shared by the push and lite-pull consumers: message model, start position,
subscription expressions, and the pull wrapper that applies the client-side tag re-check."""

from __future__ import annotations

import datetime as _dt
import enum
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketq.protocol.bodies import SubscriptionData
from rocketq.protocol.message import PROP_RETRY_TOPIC

if TYPE_CHECKING:
    from rocketq.client.message import MessageExt

__all__ = [
    "ConsumeFromWhere",
    "ExpressionType",
    "MessageModel",
    "MessageSelector",
    "build_subscription_data",
    "parse_consume_timestamp",
]

SUB_ALL = "*"
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))


class MessageModel(enum.Enum):
    """CLUSTERING: the group shares the queues; BROADCASTING: every member gets every message."""

    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(enum.Enum):
    """Where a queue with no committed offset for the group starts (Java ``ConsumeFromWhere``)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class ExpressionType(enum.Enum):
    TAG = "TAG"
    SQL92 = "SQL92"


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """A subscription expression: ``MessageSelector.by_tag("A || B")`` or ``MessageSelector.by_sql("a > 3")``."""

    expression_type: ExpressionType
    expression: str

    @classmethod
    def by_tag(cls, expression: str | None = SUB_ALL) -> MessageSelector:
        return cls(ExpressionType.TAG, expression or SUB_ALL)

    @classmethod
    def by_sql(cls, expression: str) -> MessageSelector:
        if not expression or not expression.strip():
            raise ValueError("an SQL92 expression can not be empty")
        return cls(ExpressionType.SQL92, expression)


def build_subscription_data(
    topic: str, expression: str | MessageSelector | None = SUB_ALL, sub_version: int | None = None
) -> SubscriptionData:
    """Java ``FilterAPI.build``: for TAG, split on ``||``, Java-trim, keep non-empty tags and their hash codes."""
    from rocketq.common.hashing import java_string_hash

    version = int(time.time() * 1000) if sub_version is None else sub_version
    if isinstance(expression, MessageSelector):
        if expression.expression_type is ExpressionType.SQL92:
            return SubscriptionData(topic, expression.expression, [], [], version, ExpressionType.SQL92.value)
        expression = expression.expression
    if expression is None or expression == SUB_ALL or expression == "":
        return SubscriptionData(topic, SUB_ALL, [], [], version, ExpressionType.TAG.value)
    tags: list[str] = []
    for part in expression.split("||"):
        tag = part.strip(_JAVA_TRIM)
        if tag and tag not in tags:
            tags.append(tag)
    return SubscriptionData(topic, expression, tags, [java_string_hash(t) for t in tags], version, "TAG")


def parse_consume_timestamp(value: str | int | float | _dt.datetime) -> int:
    """Epoch ms from ``"yyyyMMddHHmmss"`` (local time, Java's format), a datetime, or epoch ms / s numbers."""
    if isinstance(value, _dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, int | float):
        return int(value if value > 10**11 else value * 1000)
    return int(_dt.datetime.strptime(value, "%Y%m%d%H%M%S").timestamp() * 1000)


def restore_retry_topic(msgs: Sequence[MessageExt], retry_topic_name: str) -> None:
    """Java ``resetRetryAndNamespace``: a message read from the group's retry topic gets its original topic back."""
    for msg in msgs:
        original = msg.properties.get(PROP_RETRY_TOPIC)
        if original is not None and msg.topic == retry_topic_name:
            msg.topic = original
