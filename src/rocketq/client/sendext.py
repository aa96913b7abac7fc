"""A plain V2 send's extFields in one call: the compiled twin if built, else the pure one.

``v2_ext`` is specified in ``rocketq.client._sendext_py`` (the pure twin); ``build_send_request`` calls it for
every send that is not to a retry topic. ``ROCKETQ_NO_EXTENSIONS=1`` forces the pure twin.
"""

from __future__ import annotations

from rocketq.client import _sendext_py as pure
from rocketq.common.native import choose

impl, compiled = choose(pure, "rocketq.client._sendext_c")

#: "c" or "python": which twin builds a send's extFields
IMPLEMENTATION = "python" if impl is pure else "c"

v2_ext = impl.v2_ext
v2_head = impl.v2_head

__all__ = ["IMPLEMENTATION", "v2_ext", "v2_head"]
