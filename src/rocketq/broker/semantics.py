"""Message-semantics hooks applied to a message before it is stored.

Delay levels are rewritten to ``SCHEDULE_TOPIC_XXXX`` by the store itself (as Java's CommitLog does) and
delivered by ``rocketq.broker.schedule``. Arbitrary delivery times (RocketMQ 5's TIMER_* properties) are not
built yet: such a message is refused with a clear error rather than delivered at the wrong time.
"""

from __future__ import annotations

from rocketq.errors import MessageIllegalError
from rocketq.protocol.message import PROP_TIMER_DELAY_MS, PROP_TIMER_DELAY_SEC, PROP_TIMER_DELIVER_MS
from rocketq.store import StoreMessage

_TIMER_PROPS = (PROP_TIMER_DELIVER_MS, PROP_TIMER_DELAY_SEC, PROP_TIMER_DELAY_MS)


class MessageSemantics:
    def before_put(self, msg: StoreMessage) -> StoreMessage:
        if any(k in msg.properties for k in _TIMER_PROPS):
            raise MessageIllegalError("timed messages (TIMER_* properties) are not supported by this broker yet")
        return msg
