"""The message store: commit log, consume queues, index, flush, recovery and retention (RocketMQ's ``store``).

Synchronous and thread-based; the broker (asyncio) composes it. Start with ``MessageStore`` and
``StoreConfig``; see ``rocketq.store.message_store`` for the put/flush protocol.
"""

from rocketq.protocol.topics import SCHEDULE_TOPIC
from rocketq.store.cleanup import CleanupReport
from rocketq.store.config import Clock, DiskUsage, FlushDiskType, StoreConfig
from rocketq.store.errors import StoreError, StoreLockedError, StoreNotAvailableError
from rocketq.store.ha import NoReplication, ReplicationHook
from rocketq.store.mapped_file import SelectMappedBufferResult
from rocketq.store.message import StoreBatch, StoreMessage
from rocketq.store.message_store import ArrivalListener, MessageStore
from rocketq.store.results import (
    AppendResult,
    FlushCallback,
    GetMessageResult,
    GetMessageStatus,
    MessageFilter,
    PutMessageResult,
    PutMessageStatus,
)
from rocketq.store.stats import StoreStats, TopicStats

__all__ = [
    "SCHEDULE_TOPIC",
    "AppendResult",
    "ArrivalListener",
    "CleanupReport",
    "Clock",
    "DiskUsage",
    "FlushCallback",
    "FlushDiskType",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageFilter",
    "MessageStore",
    "NoReplication",
    "PutMessageResult",
    "PutMessageStatus",
    "ReplicationHook",
    "SelectMappedBufferResult",
    "StoreBatch",
    "StoreConfig",
    "StoreError",
    "StoreLockedError",
    "StoreMessage",
    "StoreNotAvailableError",
    "StoreStats",
    "TopicStats",
]
