"""``<root>/checkpoint``: how far each part of the store is known to be durable (RocketMQ's ``StoreCheckpoint``).

A 4096-byte mapped file, big-endian::

    off  size  field
      0     8  physicMsgTimestamp   store time of the last commit-log message flushed (ms)
      8     8  logicsMsgTimestamp   store time of the last message whose consume-queue unit was flushed
     16     8  indexMsgTimestamp    store time of the last message whose index entries were flushed
     24  4072  unused (zero)

After a crash, recovery re-validates the commit log from the last file whose first message is older than
``min(...) - 3 s`` and re-dispatches from there.
"""

from __future__ import annotations

import os
import struct
from typing import Final

from rocketq.store.mapped_file import MappedFile

CHECKPOINT_FILE_SIZE: Final = 4096
_LAYOUT: Final = struct.Struct(">qqq")


class StoreCheckpoint:
    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._mf = MappedFile(path, CHECKPOINT_FILE_SIZE, file_from_offset=0)
        physic, logics, index = _LAYOUT.unpack_from(self._mf.mm, 0)
        self.physic_msg_timestamp: int = physic
        self.logics_msg_timestamp: int = logics
        self.index_msg_timestamp: int = index

    def min_timestamp(self) -> int:
        """Oldest of the commit-log and consume-queue marks, minus 3 s of slack (never negative)."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)

    def min_timestamp_index(self) -> int:
        return min(self.min_timestamp(), self.index_msg_timestamp)

    def flush(self) -> None:
        _LAYOUT.pack_into(
            self._mf.mm, 0, self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp
        )
        self._mf.sync()

    def close(self) -> None:
        self._mf.close()
