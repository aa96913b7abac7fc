"""A run of plain messages into the commit log, many at a call: the compiled twin if built, else the pure one.

``write_plain_run`` is specified in ``rocketq.store._plainrun_py`` (the pure twin); ``Appender.put_plain_messages``
calls it. ``ROCKETQ_NO_EXTENSIONS=1`` forces the pure twin.
"""

from __future__ import annotations

from rocketq.common.native import choose
from rocketq.store import _plainrun_py as pure

impl, compiled = choose(pure, "rocketq.store._plainrun_c")

#: "c" or "python": which twin the store runs
IMPLEMENTATION = "python" if impl is pure else "c"

write_plain_run = impl.write_plain_run
