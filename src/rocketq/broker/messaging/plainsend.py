"""A SEND_MESSAGE_V2 request straight to a plain run's message: the compiled twin if built, else the pure one.

``plain_send_v2``, ``plain_sends_v2``, ``plain_answers`` and ``plain_message`` are specified in
``rocketq.broker.messaging._plainsend_py`` (the pure twin); the send queue (``SendProcessor``) calls the first
three and ``SendService.prepare_plain`` calls ``plain_message``. ``ROCKETQ_NO_EXTENSIONS=1`` forces the pure twin.
"""

from __future__ import annotations

from rocketq.broker.messaging import _plainsend_py as pure
from rocketq.common.native import choose

impl, compiled = choose(pure, "rocketq.broker.messaging._plainsend_c")

#: "c" or "python": which twin reads plain sends
IMPLEMENTATION = "python" if impl is pure else "c"

PlainRules = pure.PlainRules
plain_message = pure.plain_message
plain_send_v2 = impl.plain_send_v2
plain_sends_v2 = impl.plain_sends_v2
plain_answers = impl.plain_answers

__all__ = ["IMPLEMENTATION", "PlainRules", "plain_answers", "plain_message", "plain_send_v2", "plain_sends_v2"]
