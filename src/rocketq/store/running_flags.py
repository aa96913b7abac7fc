"""Store health bits (RocketMQ's ``RunningFlags``): any of them set refuses writes; reads go on."""

from __future__ import annotations

import threading
from typing import Final

NOT_READABLE: Final = 1
NOT_WRITEABLE: Final = 1 << 1
WRITE_LOGICS_QUEUE_ERROR: Final = 1 << 2
WRITE_INDEX_FILE_ERROR: Final = 1 << 3
DISK_FULL: Final = 1 << 4

#: any of these refuses writes
BLOCKS_WRITES: Final = NOT_WRITEABLE | WRITE_LOGICS_QUEUE_ERROR | WRITE_INDEX_FILE_ERROR | DISK_FULL


class RunningFlags:
    def __init__(self) -> None:
        #: the flags set; read without the lock (the append path tests ``bits & BLOCKS_WRITES`` per put),
        #: changed only by ``set``/``clear``
        self.bits = 0
        self._lock = threading.Lock()

    def is_writeable(self) -> bool:
        return not self.bits & BLOCKS_WRITES

    def is_readable(self) -> bool:
        return not self.bits & NOT_READABLE

    def is_disk_full(self) -> bool:
        return bool(self.bits & DISK_FULL)

    def set(self, bit: int) -> bool:
        """Set ``bit``; True if it was clear before."""
        with self._lock:
            was = self.bits & bit
            self.bits |= bit
        return not was

    def clear(self, bit: int) -> bool:
        """Clear ``bit``; True if it was set before."""
        with self._lock:
            was = self.bits & bit
            self.bits &= ~bit
        return bool(was)
