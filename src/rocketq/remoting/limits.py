"""What one server lets its clients hold: connections, partially received frames, unsent answers.

``ServerLimits`` is given to a ``RemotingServer`` (the broker fills it from ``serverMaxConnections`` …, the
name server from its own config). The server enforces it:

* **connections** — beyond ``max_connections`` a new connection is closed as soon as it is accepted;
* **partial frames** — the bytes every connection holds of a frame not yet complete are counted on the server
  (``RemotingServer.partial_bytes``). When a read pushes that count over ``max_partial_frame_bytes``, the
  connections whose partial frame has waited longest are closed until the count is under the cap again (see
  ``RemotingServer.shed_partial_frames`` for why the oldest, not the one that read last);
* **unsent answers** — a connection whose unsent answers exceed ``write_high_water`` stops being read (its
  requests wait in the kernel) until they drain under ``write_low_water``; answers that still pile up beyond
  ``max_write_buffer`` (requests already read, long-polled pulls answering) close it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from rocketq.common.ratelog import RateLimitedLog
from rocketq.remoting.connection import Connection

log = logging.getLogger("rocketq.remoting.limits")

MiB = 1024 * 1024

DEFAULT_MAX_CONNECTIONS = 10_000
DEFAULT_MAX_PARTIAL_FRAME_BYTES = 128 * MiB
DEFAULT_WRITE_HIGH_WATER = 4 * MiB
DEFAULT_WRITE_LOW_WATER = 1 * MiB
DEFAULT_MAX_WRITE_BUFFER = 64 * MiB

#: the configuration key (broker.conf, name server properties) of each ``ServerLimits`` field
LIMIT_KEYS = {
    "max_connections": "serverMaxConnections",
    "max_partial_frame_bytes": "serverMaxPartialFrameBytes",
    "write_high_water": "serverWriteBufferHighWaterMark",
    "write_low_water": "serverWriteBufferLowWaterMark",
    "max_write_buffer": "serverMaxWriteBufferBytes",
}


@dataclass(frozen=True, slots=True)
class ServerLimits:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_partial_frame_bytes: int = DEFAULT_MAX_PARTIAL_FRAME_BYTES
    write_high_water: int = DEFAULT_WRITE_HIGH_WATER
    write_low_water: int = DEFAULT_WRITE_LOW_WATER
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER

    def problems(self, max_frame_size: int) -> list[tuple[str, str]]:
        """(field, what is wrong) for every inconsistent setting; empty when the limits can work together."""
        out: list[tuple[str, str]] = []
        if self.max_connections < 1:
            out.append(("max_connections", "must be at least 1"))
        if self.max_partial_frame_bytes < max_frame_size:
            out.append(("max_partial_frame_bytes", f"must be at least the largest frame ({max_frame_size} bytes)"))
        if self.write_low_water < 0:
            out.append(("write_low_water", "must not be negative"))
        if self.write_high_water <= self.write_low_water:
            out.append(("write_high_water", "must be above the low water mark"))
        if self.max_write_buffer <= self.write_high_water:
            out.append(("max_write_buffer", "must be above the high water mark"))
        return out


class ConnectionLedger:
    """The limits' state shared by the servers of one process role (the broker's main and VIP ports share one):
    the connections open, the bytes they hold of unfinished frames, and what the limits refused."""

    def __init__(self, limits: ServerLimits | None = None, name: str = "remoting") -> None:
        self._limits = limits if limits is not None else ServerLimits()
        #: the cap read on every read that leaves an unfinished frame: a plain attribute, not a property
        self.max_partial_bytes = self._limits.max_partial_frame_bytes
        self.name = name
        self.connections: set[Connection] = set()
        self.partial_bytes = 0
        #: refusals, one line per (kind, peer host) and interval
        self.refusals = RateLimitedLog(log)
        self.refused_connections = 0
        self.closed_partial_frames = 0
        self.reader_pauses = 0
        self.closed_slow_readers = 0

    @property
    def limits(self) -> ServerLimits:
        return self._limits

    @limits.setter
    def limits(self, limits: ServerLimits) -> None:
        """New limits apply at once; the write-buffer marks to connections accepted from now on."""
        self._limits = limits
        self.max_partial_bytes = limits.max_partial_frame_bytes

    def admit(self, conn: Connection) -> bool:
        """Count a new connection in, or refuse it (False) when ``max_connections`` are open."""
        if len(self.connections) >= self.limits.max_connections:
            self.refused_connections += 1
            self.refusals.warning(
                ("max-connections", conn.remote_host[0]),
                "connection.refused server=%s remote=%s reason=%d connections open (serverMaxConnections)",
                self.name, conn.remote, len(self.connections),
            )  # fmt: skip
            return False
        self.connections.add(conn)
        return True

    def shed_partial_frames(self, current: Connection) -> bool:
        """Bring ``partial_bytes`` back under the cap by closing the connections whose unfinished frame has
        waited longest; True if ``current`` was one of them.

        Oldest first, not "whoever read last": memory held by a frame that does not finish is what a slow or
        hostile peer costs, while a healthy client's frame completes within moments of its first bytes. Closing
        the reader that tipped the count would let peers that stalled earlier keep the whole budget and refuse
        every large request after them. Rare (only over the cap), so the scan over the holders is fine here.
        """
        cap = self.limits.max_partial_frame_bytes
        now = time.monotonic()
        holders = sorted((c for c in self.connections if c.partial_held), key=lambda c: c.partial_since)
        closed_current = False
        for victim in holders:
            if self.partial_bytes <= cap:
                break
            held, waited = victim.partial_held, now - victim.partial_since
            self.refusals.warning(
                ("partial-frames", victim.remote_host[0]),
                "connection.closed server=%s remote=%s reason=held %d bytes of an unfinished frame for %.1fs while "
                "unfinished frames of all connections passed %d bytes (serverMaxPartialFrameBytes)",
                self.name, victim.remote, held, waited, cap,
            )  # fmt: skip
            self.closed_partial_frames += 1
            victim.refuse("partial frames over the cap")
            closed_current = closed_current or victim is current
        return closed_current
