"""A plain send's request and answer in one call each: the compiled twin if built, else the pure one.

All four are specified in ``rocketq.client._sendext_py`` (the pure twin): ``v2_ext``, the extFields that
``build_send_request`` writes for every send that is not to a retry topic; ``v2_head``, the encoded head of a
single plain send (``build_send_head``); ``send_answer``, the usual answer's ``SendResult``
(``MQClientAPI.process_send_response``); ``batch_results``, each message's result from an auto-batch's answer
(``split_batch_result``). ``ROCKETQ_NO_EXTENSIONS=1`` forces the pure twin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rocketq.client import _sendext_py as pure
from rocketq.client.message import SendResult, SendStatus
from rocketq.common.native import choose
from rocketq.protocol.bodies import MessageQueue

impl, compiled = choose(pure, "rocketq.client._sendext_c")

#: "c" or "python": which twin builds a send's extFields
IMPLEMENTATION = "python" if impl is pure else "c"

v2_ext = impl.v2_ext
v2_head = impl.v2_head
send_answer: Callable[[Mapping[str, str], SendStatus, str, MessageQueue], SendResult | None] = impl.send_answer
batch_results: Callable[[SendResult, int], list[SendResult] | None] = impl.batch_results

__all__ = ["IMPLEMENTATION", "batch_results", "send_answer", "v2_ext", "v2_head"]
