"""Message-semantics hooks applied to a message before it is stored.

Delayed delivery, transactions and the retry flow belong to the issue on message semantics; until they are
built, a message that asks for one of them is refused with a clear error rather than silently delivered
at the wrong time.
"""

from __future__ import annotations

from rocketq.errors import MessageIllegalError
from rocketq.protocol.message import PROP_DELAY, PROP_TIMER_DELAY_MS, PROP_TIMER_DELAY_SEC, PROP_TIMER_DELIVER_MS
from rocketq.store import StoreMessage


class MessageSemantics:
    def before_put(self, msg: StoreMessage) -> StoreMessage:
        props = msg.properties
        delay = props.get(PROP_DELAY)
        if delay and delay.strip() not in ("", "0"):
            raise MessageIllegalError("delayed messages (DELAY) are not supported by this broker yet")
        if any(k in props for k in (PROP_TIMER_DELIVER_MS, PROP_TIMER_DELAY_SEC, PROP_TIMER_DELAY_MS)):
            raise MessageIllegalError("timed messages are not supported by this broker yet")
        return msg
