"""A pull answer's records → message objects in one call: the compiled twin if built, else the pure one.

``decode_messages(buf, cls, broker_name, extra_props, inflate) -> list`` (specified in ``_pullcodec_py``).
``ROCKETQ_NO_EXTENSIONS=1`` forces the pure twin, as for the store's ``appendcodec``.
"""

from __future__ import annotations

from rocketq.common.native import choose
from rocketq.protocol import _pullcodec_py as pure

impl, compiled = choose(pure, "rocketq.protocol._pullcodec_c")

#: "c" or "python": which twin decodes pull answers
IMPLEMENTATION = "python" if impl is pure else "c"

decode_messages = impl.decode_messages
