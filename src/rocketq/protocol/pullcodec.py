"""A pull answer's records → message objects in one call: the compiled twin if built, else the pure one.

``decode_messages(buf, cls, broker_name, extra_props, inflate) -> list`` (specified in ``_pullcodec_py``).
``ROCKETQ_NO_EXTENSIONS=1`` forces the pure twin, as for the store's ``appendcodec``.
"""

from __future__ import annotations

import os
from types import ModuleType

from rocketq.protocol import _pullcodec_py as pure

compiled: ModuleType | None
try:
    from rocketq.protocol import _pullcodec_c as compiled  # type: ignore[attr-defined, no-redef]
except ImportError:  # no compiler at install time: the pure twin does the same work, slower
    compiled = None

impl: ModuleType = pure if compiled is None or os.environ.get("ROCKETQ_NO_EXTENSIONS") else compiled

#: "c" or "python": which twin decodes pull answers
IMPLEMENTATION = "python" if impl is pure else "c"

decode_messages = impl.decode_messages
