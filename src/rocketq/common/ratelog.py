"""A warning that a peer can trigger at will, logged at most once per key per interval.

A refused connection, an evicted partial frame or a malformed request is worth one line — but a client that
repeats it a million times must not write a million lines. ``RateLimitedLog.warning(key, ...)`` logs the first
occurrence of ``key`` (e.g. ``("max-connections", peer_host)``), then stays quiet for that key for ``interval``
seconds, counting what it swallowed; the next line for the key says how many were suppressed.

Memory and volume stay bounded whatever the peers do: at most ``max_keys`` keys are remembered (the oldest is
forgotten first, its suppressed count with it), and at most ``max_lines`` lines per interval are written over
all keys (a peer rotating its address gets no more lines than that; the overflow is counted and reported by
the next line that is written).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable


class RateLimitedLog:
    __slots__ = ("_logger", "_overflow", "_seen", "_window_lines", "_window_start", "interval", "max_keys",
                 "max_lines", "suppressed_total")  # fmt: skip

    def __init__(
        self, logger: logging.Logger, interval: float = 60.0, max_keys: int = 1024, max_lines: int = 100
    ) -> None:
        self._logger = logger
        self.interval = interval
        self.max_keys = max_keys
        self.max_lines = max_lines
        #: key → [monotonic time of its last line, occurrences suppressed since]; insertion order = age
        self._seen: dict[Hashable, list[float]] = {}
        self._window_start = 0.0
        self._window_lines = 0
        self._overflow = 0  # suppressed by the global line budget, not yet reported
        #: every occurrence not written, over all keys (for tests and status)
        self.suppressed_total = 0

    def warning(self, key: Hashable, msg: str, *args: object) -> bool:
        """Log ``msg % args`` unless ``key`` was logged less than ``interval`` ago; True if it was written."""
        now = time.monotonic()
        seen = self._seen
        entry = seen.get(key)
        if entry is not None and now - entry[0] < self.interval:
            entry[1] += 1
            self.suppressed_total += 1
            return False
        if now - self._window_start >= self.interval:
            self._window_start = now
            self._window_lines = 0
        if self._window_lines >= self.max_lines:
            self._overflow += 1
            self.suppressed_total += 1
            return False
        self._window_lines += 1
        suppressed = int(entry[1]) if entry is not None else 0
        if entry is not None:
            del seen[key]  # re-inserted below: the dict stays ordered by the time of each key's last line
        elif len(seen) >= self.max_keys:
            del seen[next(iter(seen))]
        seen[key] = [now, 0]
        extra = []
        if suppressed:
            extra.append(f"{suppressed} more like it suppressed")
        if self._overflow:
            extra.append(f"{self._overflow} other lines suppressed by the rate limit")
            self._overflow = 0
        if extra:
            self._logger.warning(msg + " (" + "; ".join(extra) + ")", *args)
        else:
            self._logger.warning(msg, *args)
        return True
