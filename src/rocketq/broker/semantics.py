"""Message-semantics hooks applied to a client's message before it is stored.

* transactional half messages (``TRAN_MSG=true``) go to the half topic (``rocketq.broker.transaction``);
* delay levels are rewritten to ``SCHEDULE_TOPIC_XXXX`` by the store itself (as Java's CommitLog does) and
  delivered by ``rocketq.broker.schedule``;
* arbitrary delivery times (RocketMQ 5's TIMER_* properties) are not built yet: such a message is refused
  with a clear error rather than delivered at the wrong time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketq.broker.transaction import is_half
from rocketq.errors import MessageIllegalError
from rocketq.protocol.message import PROP_TIMER_DELAY_MS, PROP_TIMER_DELAY_SEC, PROP_TIMER_DELIVER_MS
from rocketq.store import StoreMessage

if TYPE_CHECKING:
    from rocketq.broker.controller import BrokerController

_TIMER_PROPS = (PROP_TIMER_DELIVER_MS, PROP_TIMER_DELAY_SEC, PROP_TIMER_DELAY_MS)


class MessageSemantics:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def before_put(self, msg: StoreMessage) -> StoreMessage:
        props = msg.properties
        if any(k in props for k in _TIMER_PROPS):
            raise MessageIllegalError("timed messages (TIMER_* properties) are not supported by this broker yet")
        if is_half(props):
            return self.broker.transactions.to_half(msg)
        return msg
