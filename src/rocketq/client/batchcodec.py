"""Messages → one SEND_BATCH_MESSAGE body in one call: the compiled twin if built, else the pure one.

``encode_batch(msgs, max_size, id_create, check) -> (body, sizes)`` (specified in ``_batchcodec_py``).
``ROCKETQ_NO_EXTENSIONS=1`` forces the pure twin, as for the store's ``appendcodec``.
"""

from __future__ import annotations

import os
from types import ModuleType

from rocketq.client import _batchcodec_py as pure

compiled: ModuleType | None
try:
    from rocketq.client import _batchcodec_c as compiled  # type: ignore[attr-defined, no-redef]
except ImportError:  # no compiler at install time: the pure twin does the same work, slower
    compiled = None

impl: ModuleType = pure if compiled is None or os.environ.get("ROCKETQ_NO_EXTENSIONS") else compiled

#: "c" or "python": which twin encodes batches
IMPLEMENTATION = "python" if impl is pure else "c"

encode_batch = impl.encode_batch
