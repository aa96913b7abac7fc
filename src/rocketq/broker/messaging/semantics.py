"""Message-semantics hooks applied to a client's message before it is stored.

* transactional half messages (``TRAN_MSG=true``) go to the half topic (``rocketq.broker.services.transaction``);
* delay levels are rewritten to ``SCHEDULE_TOPIC_XXXX`` by the store itself (as Java's CommitLog does) and
  delivered by ``rocketq.broker.services.schedule``;
* arbitrary delivery times (RocketMQ 5's TIMER_* properties) go to the timer topic
  (``rocketq.broker.services.timer``); a timed transactional message is refused, as RocketMQ 5 does.
"""

from __future__ import annotations

from rocketq.broker.services.timer import TIMER_PROPS, TimerService
from rocketq.broker.services.transaction import TransactionService, is_half
from rocketq.errors import MessageIllegalError
from rocketq.protocol.message import PROP_TRAN_MSG
from rocketq.store import StoreMessage

# Properties that make a message more than an ordinary put; most messages have none of them.
_SPECIAL_PROPS = frozenset((PROP_TRAN_MSG, *TIMER_PROPS))
#: the same names as a tuple, for ``rocketq.protocol.message.plain_properties``
SPECIAL_PROPERTIES: tuple[str, ...] = tuple(sorted(_SPECIAL_PROPS))


class MessageSemantics:
    def __init__(self, transactions: TransactionService, timers: TimerService) -> None:
        self._transactions = transactions
        self._timers = timers

    @staticmethod
    def is_plain(properties: dict[str, str]) -> bool:
        """True when ``before_put`` would return the message untouched (no transaction, no delivery time)."""
        return _SPECIAL_PROPS.isdisjoint(properties)

    def before_put(self, msg: StoreMessage) -> StoreMessage:
        props = msg.properties
        if self.is_plain(props):
            return msg
        timed = any(k in props for k in TIMER_PROPS)
        if is_half(props):
            if timed:
                raise MessageIllegalError("a transactional message cannot have a delivery time")
            return self._transactions.to_half(msg)
        if timed:
            return self._timers.to_timer(msg)
        return msg
