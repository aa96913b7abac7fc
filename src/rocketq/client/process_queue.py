"""Per-queue consumption state (Java ``ProcessQueue``): the pulled-but-unconsumed messages and flow-control counts.

Pure bookkeeping with an injectable clock; no I/O. Concurrent consumption removes messages in any order and
commits the smallest offset still cached (so a slow message holds the committed offset back — the reason for
``consume_concurrently_max_span``). Orderly consumption takes messages in offset order into a "consuming"
set and commits or rolls them back as a whole.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable, Iterable

from rocketq.client.message import MessageExt

__all__ = ["ProcessQueue"]

#: Java ``rocketmq.client.rebalance.lockMaxLiveTime`` (client lease of a broker lock), seconds.
REBALANCE_LOCK_MAX_LIVE_TIME = 30.0
#: Java ``rocketmq.client.rebalance.lockInterval``, seconds.
REBALANCE_LOCK_INTERVAL = 20.0
#: Java ``rocketmq.client.pull.pullMaxIdleTime``, seconds.
PULL_MAX_IDLE_TIME = 120.0


class ProcessQueue:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._msgs: dict[int, MessageExt] = {}
        self._keys: list[int] = []  # sorted offsets of _msgs
        self._consuming: dict[int, MessageExt] = {}  # orderly: taken, not yet committed
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0
        self.dropped = False
        self.locked = False
        self.consuming = False
        self.msg_acc_cnt = 0
        self.try_unlock_times = 0
        # Java consumeLock: held while an orderly listener runs, so a rebalance does not unlock mid-batch.
        self.consume_lock = asyncio.Lock()
        now = clock()
        self.last_pull_timestamp = now
        self.last_consume_timestamp = now
        self.last_lock_timestamp = now

    # -- state checks -------------------------------------------------------------------------------------

    def is_lock_expired(self, max_live: float = REBALANCE_LOCK_MAX_LIVE_TIME) -> bool:
        return self._clock() - self.last_lock_timestamp > max_live

    def is_pull_expired(self, max_idle: float = PULL_MAX_IDLE_TIME) -> bool:
        return self._clock() - self.last_pull_timestamp > max_idle

    @property
    def max_span(self) -> int:
        """Distance between the first and the last cached offset (0 when empty)."""
        return self._keys[-1] - self._keys[0] if self._keys else 0

    @property
    def first_offset(self) -> int | None:
        return self._keys[0] if self._keys else None

    def has_temp_message(self) -> bool:
        return bool(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    # -- mutation -----------------------------------------------------------------------------------------

    def _insert(self, msg: MessageExt) -> bool:
        off = msg.queue_offset
        if off in self._msgs:
            self._msgs[off] = msg
            return False
        self._msgs[off] = msg
        if not self._keys or off > self._keys[-1]:
            self._keys.append(off)
        else:
            bisect.insort(self._keys, off)
        return True

    def put_messages(self, msgs: Iterable[MessageExt]) -> bool:
        """Cache pulled messages; True when the caller should start a consume task (orderly dispatch)."""
        last: MessageExt | None = None
        for msg in msgs:
            last = msg
            if self._insert(msg):
                self.msg_count += 1
                self.msg_size += len(msg.body)
                self.queue_offset_max = msg.queue_offset
        dispatch = False
        if self._keys and not self.consuming:
            dispatch = True
            self.consuming = True
        if last is not None and last.max_offset is not None:
            acc = last.max_offset - last.queue_offset
            if acc > 0:
                self.msg_acc_cnt = acc
        return dispatch

    def remove_messages(self, msgs: Iterable[MessageExt]) -> int:
        """Drop consumed messages; returns the offset to commit (first cached, or max+1 when empty), -1 if none."""
        self.last_consume_timestamp = self._clock()
        if not self._keys:
            return -1
        result = self.queue_offset_max + 1
        removed = 0
        for msg in msgs:
            prev = self._msgs.pop(msg.queue_offset, None)
            if prev is not None:
                idx = bisect.bisect_left(self._keys, msg.queue_offset)
                del self._keys[idx]
                removed += 1
                self.msg_size -= len(msg.body)
        self.msg_count -= removed
        if self.msg_count == 0:
            self.msg_size = 0
        if self._keys:
            result = self._keys[0]
        return result

    # -- orderly ------------------------------------------------------------------------------------------

    def take_messages(self, batch_size: int) -> list[MessageExt]:
        """Move up to ``batch_size`` first messages into the consuming set; clears ``consuming`` when empty."""
        self.last_consume_timestamp = self._clock()
        out: list[MessageExt] = []
        while self._keys and len(out) < batch_size:
            off = self._keys.pop(0)
            msg = self._msgs.pop(off)
            self._consuming[off] = msg
            out.append(msg)
        if not out:
            self.consuming = False
        return out

    def commit(self) -> int:
        """Forget the consuming set; the next offset to consume (last taken + 1), or -1 if nothing was taken."""
        if not self._consuming:
            return -1
        last = max(self._consuming)
        self.msg_count -= len(self._consuming)
        if self.msg_count == 0:
            self.msg_size = 0
        else:
            self.msg_size -= sum(len(m.body) for m in self._consuming.values())
        self._consuming.clear()
        return last + 1

    def rollback(self) -> None:
        """Put the whole consuming set back to be consumed again."""
        for msg in self._consuming.values():
            self._insert(msg)
        self._consuming.clear()

    def make_message_to_consume_again(self, msgs: Iterable[MessageExt]) -> None:
        for msg in msgs:
            self._consuming.pop(msg.queue_offset, None)
            self._insert(msg)

    def clear(self) -> None:
        self._msgs.clear()
        self._keys.clear()
        self._consuming.clear()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0

    def messages(self) -> list[MessageExt]:
        return [self._msgs[k] for k in self._keys]

    def _epoch_ms(self, moment: float) -> int:
        """A time kept on the (monotonic) clock as Java's epoch milliseconds, which mqadmin prints as a date."""
        return int((time.time() - (self._clock() - moment)) * 1000)

    def info(self) -> dict[str, object]:
        """Java ``ProcessQueueInfo`` (for GET_CONSUMER_RUNNING_INFO)."""
        return {
            "cachedMsgCount": self.msg_count,
            "cachedMsgMaxOffset": self._keys[-1] if self._keys else 0,
            "cachedMsgMinOffset": self._keys[0] if self._keys else 0,
            "cachedMsgSizeInMiB": self.msg_size // (1024 * 1024),
            "commitOffset": 0,
            "droped": self.dropped,
            "lastConsumeTimestamp": self._epoch_ms(self.last_consume_timestamp),
            "lastLockTimestamp": self._epoch_ms(self.last_lock_timestamp),
            "lastPullTimestamp": self._epoch_ms(self.last_pull_timestamp),
            "locked": self.locked,
            "transactionMsgCount": len(self._consuming),
            "transactionMsgMaxOffset": max(self._consuming) if self._consuming else 0,
            "transactionMsgMinOffset": min(self._consuming) if self._consuming else 0,
            "tryUnlockTimes": self.try_unlock_times,
        }
