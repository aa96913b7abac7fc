"""Messages → one SEND_BATCH_MESSAGE body in one call: the compiled twin if built, else the pure one.

``encode_batch(msgs, max_size, id_prefix, id_counter, check) -> (body, sizes)`` (specified in ``_batchcodec_py``).
``ROCKETQ_NO_EXTENSIONS=1`` forces the pure twin, as for the store's ``appendcodec``.
"""

from __future__ import annotations

from rocketq.client import _batchcodec_py as pure
from rocketq.common.native import choose

impl, compiled = choose(pure, "rocketq.client._batchcodec_c")

#: "c" or "python": which twin encodes batches
IMPLEMENTATION = "python" if impl is pure else "c"

encode_batch = impl.encode_batch
