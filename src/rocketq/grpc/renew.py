"""Auto-renew for push consumers (``auto_renew=true``; rocketmq-5x-grpc.md §5.7, simplified).

The endpoint remembers each message it handed to a push consumer with the newest receipt handle. A loop
renews every handle due within ``ahead_ms`` with a change of invisible time (1 min, 3, 5, 10, 30, 60 …),
for at most ``max_renew_ms`` after the delivery; then it leaves the message to expire (the broker redelivers
it). Ack, change and forward take the newest handle (``release``); a client that goes away has its messages
made visible again after ``clear_ms``. Java's proxy tracks the same per channel and group; it also caps failed
renewals at 3 — here a failed renewal simply drops the message from the table.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from rocketq.broker.pop.service import PopService
from rocketq.broker.pop.types import ReceiptHandle
from rocketq.codes import ResponseCode

log = logging.getLogger(__name__)

RENEW_DELAYS_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)


@dataclass(slots=True)
class _Tracked:
    client_id: str
    original: str
    latest: str
    consumed_at: int
    renewals: int = 0


def _parse(text: str) -> tuple[ReceiptHandle, str]:
    parts = text.split(" ")
    return ReceiptHandle.parse(" ".join(parts[:8])), " ".join(parts[8:])


class Renewals:
    def __init__(self, pop: PopService, *, ahead_ms: int = 10_000, max_renew_ms: int = 3 * 3600 * 1000,
                 clear_ms: int = 1_000) -> None:  # fmt: skip
        self._pop = pop
        self.ahead_ms = ahead_ms
        self.max_renew_ms = max_renew_ms
        self.clear_ms = clear_ms
        #: (group, topic, message id) → what the endpoint holds for it
        self._table: dict[tuple[str, str, str], _Tracked] = {}

    def __len__(self) -> int:
        return len(self._table)

    def track(self, client_id: str, group: str, topic: str, message_id: str, handle: str) -> None:
        self._table[(group, topic, message_id)] = _Tracked(client_id, handle, handle, int(time.time() * 1000))

    def release(self, group: str, topic: str, message_id: str, handle: str) -> str | None:
        """Stop renewing; the newest handle when ``handle`` is one this message was given, else None."""
        key = (group, topic, message_id)
        tracked = self._table.get(key)
        if tracked is None or handle not in (tracked.original, tracked.latest):
            return None
        del self._table[key]
        return tracked.latest

    def _change(self, group: str, topic: str, tracked: _Tracked, invisible_ms: int) -> str | None:
        try:
            handle, tail = _parse(tracked.latest)
        except ValueError:
            return None
        outcome = self._pop.change_invisible(group, topic, handle, invisible_ms)
        if outcome.code != ResponseCode.SUCCESS or outcome.handle is None:
            log.info("grpc.renew_failed group=%s topic=%s code=%s", group, topic, outcome.code)
            return None
        return f"{outcome.handle.text()} {tail}".rstrip()

    def renew_due(self, now_ms: int | None = None) -> int:
        """One pass: renew what expires within ``ahead_ms``; returns how many were renewed."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        renewed = 0
        for key, tracked in list(self._table.items()):
            try:
                handle, _ = _parse(tracked.latest)
            except ValueError:
                del self._table[key]
                continue
            if handle.expires_at - now > self.ahead_ms:
                continue
            if now - tracked.consumed_at >= self.max_renew_ms:
                del self._table[key]  # renewed long enough: it expires and the broker delivers it again
                continue
            delay = RENEW_DELAYS_MS[min(tracked.renewals, len(RENEW_DELAYS_MS) - 1)]
            latest = self._change(key[0], key[1], tracked, delay)
            if latest is None:
                del self._table[key]
                continue
            tracked.latest = latest
            tracked.renewals += 1
            renewed += 1
        return renewed

    def client_gone(self, client_id: str) -> None:
        """The client ended: its messages become visible again soon (Java: 1 s)."""
        for key, tracked in list(self._table.items()):
            if tracked.client_id == client_id:
                del self._table[key]
                self._change(key[0], key[1], tracked, self.clear_ms)
