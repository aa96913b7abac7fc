"""Gathering an auto-batched send in one call: the compiled fast path if built, else the method it stands in for.

``gather(accumulator, msg, mq, on_success, on_exception, loop, metrics, asynchronous)`` is
``ProduceAccumulator.gather`` (its specification and pure twin). The compiled ``_gather_c`` takes the common
case itself and hands every other one to that method. ``ROCKETQ_NO_EXTENSIONS=1`` forces the method.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rocketq.client._accumulator import ProduceAccumulator
from rocketq.client._async_send import ExceptionCallback, SendCallback, SendFuture
from rocketq.client.message import Message
from rocketq.client.metrics import ClientMetrics
from rocketq.common.native import compiled_to_run
from rocketq.protocol.bodies import MessageQueue

Gather = Callable[
    [ProduceAccumulator, Message, MessageQueue | None, SendCallback | None, ExceptionCallback | None,
     asyncio.AbstractEventLoop, ClientMetrics | None, bool],
    SendFuture | None,
]  # fmt: skip

_compiled = compiled_to_run("rocketq.client._gather_c")

#: "c" or "python": which twin gathers
IMPLEMENTATION = "python" if _compiled is None else "c"

gather: Gather = ProduceAccumulator.gather if _compiled is None else _compiled.gather
