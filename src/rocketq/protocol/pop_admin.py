"""rocketq's own admin request for POP groups: what each group has in flight on a broker.

Java's brokers have no such request (mqadmin's consumerProgress "#Inflight" is pull offset − consumer offset,
always 0 for a POP group, whose offset moves at pop time); rocketq's CLI and console use this one.
Request: ext ``consumerGroup`` (optional: every group). Answer body: JSON list of
``{"topic", "group", "inflight", "invisible", "ready"}``.
"""

from __future__ import annotations

from typing import Final

#: rocketq-private request codes live at 9000+ (protocol/sink.py)
POP_INFLIGHT_STATS: Final = 9010
