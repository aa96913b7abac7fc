"""The logged-in browser sessions: a random id (the cookie) → the account and its own AdminClient."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from rocketq.client import AdminClient

COOKIE = "rocketq_console"
#: sessions kept at most (the oldest is logged out first) and how long an unused one lives
MAX_SESSIONS = 64
IDLE_SECONDS = 8 * 3600


@dataclass
class Session:
    user: str
    admin: AdminClient
    used: float


class Sessions:
    def __init__(self) -> None:
        self._by_id: dict[str, Session] = {}

    async def open(self, user: str, admin: AdminClient) -> str:
        while len(self._by_id) >= MAX_SESSIONS:
            oldest = min(self._by_id, key=lambda sid: self._by_id[sid].used)
            await self.close(oldest)
        sid = secrets.token_urlsafe(32)
        self._by_id[sid] = Session(user, admin, time.monotonic())
        return sid

    async def find(self, sid: str | None) -> Session | None:
        session = self._by_id.get(sid or "")
        if session is None or sid is None:
            return None
        now = time.monotonic()
        if now - session.used > IDLE_SECONDS:
            await self.close(sid)
            return None
        session.used = now
        return session

    async def close(self, sid: str) -> None:
        session = self._by_id.pop(sid, None)
        if session is not None:
            await session.admin.close()

    async def close_all(self) -> None:
        for sid in list(self._by_id):
            await self.close(sid)
