"""What a message listener gets and returns (Java package ``org.apache.rocketmq.client.consumer.listener``).

A concurrent listener is called as ``listener(msgs, ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus``; an
orderly one as ``listener(msgs, ConsumeOrderlyContext) -> ConsumeOrderlyStatus``. Either may be a plain function
(run in the consumer's thread pool) or a coroutine function (run on the event loop); returning ``None`` counts as
success and raising as failure. ``rocketq.client`` and ``rocketq.client.push_consumer`` export these names too.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Union

from rocketq.client.message import MessageExt
from rocketq.protocol.bodies import MessageQueue

__all__ = [
    "ConcurrentlyListener",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "OrderlyListener",
]


class ConsumeConcurrentlyStatus(enum.Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    SUCCESS = "SUCCESS"
    ROLLBACK = "ROLLBACK"
    COMMIT = "COMMIT"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    """``ack_index``: on success, messages after this index count as failed (default: all succeeded).
    ``delay_level_when_next_consume``: 0 lets the broker choose (3 + reconsume times), -1 sends straight to DLQ."""

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    ack_index: int = 2**31 - 1


@dataclass(slots=True)
class ConsumeOrderlyContext:
    """``auto_commit`` False lets the listener decide with COMMIT / ROLLBACK; ``suspend_current_queue_time`` (s)
    overrides the consumer's suspend time for SUSPEND_CURRENT_QUEUE_A_MOMENT."""

    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time: float | None = None


ConcurrentlyListener = Callable[
    [list[MessageExt], ConsumeConcurrentlyContext],
    Union[ConsumeConcurrentlyStatus, Awaitable[ConsumeConcurrentlyStatus | None], None],  # noqa: UP007
]
OrderlyListener = Callable[
    [list[MessageExt], ConsumeOrderlyContext],
    Union[ConsumeOrderlyStatus, Awaitable[ConsumeOrderlyStatus | None], None],  # noqa: UP007
]
