"""Message-semantics hooks applied to a message before it is stored.

Delay levels are rewritten to the schedule topic here (Java does it inside CommitLog; our store stays
unaware of semantics). Arbitrary delivery times (RocketMQ 5's TIMER_* properties) and transactions are not
built yet: such a message is refused with a clear error rather than delivered at the wrong time.
"""

from __future__ import annotations

from rocketq.broker.schedule import to_schedule_topic
from rocketq.errors import MessageIllegalError
from rocketq.protocol.message import PROP_TIMER_DELAY_MS, PROP_TIMER_DELAY_SEC, PROP_TIMER_DELIVER_MS
from rocketq.store import StoreMessage


class MessageSemantics:
    def __init__(self, max_delay_level: int) -> None:
        self.max_delay_level = max_delay_level

    def before_put(self, msg: StoreMessage) -> StoreMessage:
        props = msg.properties
        if any(k in props for k in (PROP_TIMER_DELIVER_MS, PROP_TIMER_DELAY_SEC, PROP_TIMER_DELAY_MS)):
            raise MessageIllegalError("timed messages (TIMER_* properties) are not supported by this broker yet")
        return to_schedule_topic(msg, self.max_delay_level)
