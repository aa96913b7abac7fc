"""Held pulls (RocketMQ's PullRequestHoldService), callback-based: no task per parked request.

A pull that finds nothing new is parked under (topic, queueId) with a timer. ``notify_arrival`` (called when
the store dispatches a message) wakes the parked pulls whose offset is now behind the queue's max offset and
whose tag filter matches the new message; the timer wakes it when the suspend timeout passes. A woken pull is
re-run once without permission to park again, and its answer leaves through the gate's exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from rocketq.codes import ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.connection import Connection

log = logging.getLogger(__name__)

Rerun = Callable[[Connection, RemotingCommand], RemotingCommand | None]
#: the gate's exit (``RemotingDispatcher.reply``): a woken pull's answer leaves the way every answer does
Reply = Callable[[Connection, RemotingCommand, RemotingCommand | None], None]
CodeFilter = Callable[[int], bool]


@dataclass(slots=True, eq=False)
class HeldPull:
    conn: Connection
    cmd: RemotingCommand
    offset: int
    matches_code: CodeFilter | None
    timer: asyncio.TimerHandle | None = None
    done: bool = False


class PullHoldService:
    def __init__(self, rerun: Rerun, reply: Reply) -> None:
        self._rerun = rerun
        self._reply = reply
        self._held: dict[tuple[str, int], list[HeldPull]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        #: controller mode: whether a message at (topic, queue id, offset) may be handed out yet (it is held by
        #: the whole in-sync set); an arrival that is not wakes nobody, ``recheck`` wakes them once it is
        self.ready: Callable[[str, int, int], bool] | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def on_arrival(
        self, topic: str, queue_id: int, next_offset: int, tags_code: int | None, store_ts: int, props: object
    ) -> None:
        """The store's arrival listener (any thread): wake the pulls parked on this queue, on the loop."""
        if threading.get_ident() == self._loop_thread:
            if self._held:
                self.notify_arrival(topic, queue_id, next_offset, tags_code)
        elif self._loop is not None:
            self._loop.call_soon_threadsafe(self.notify_arrival, topic, queue_id, next_offset, tags_code)

    def on_arrivals(self, arrivals: list[tuple[str, int, int, int]]) -> None:
        """``on_arrival`` for a run's arrivals, (topic, queue_id, next_offset, tags_code) each: one hop to the loop."""
        if threading.get_ident() == self._loop_thread:
            if self._held:
                self._notify_many(arrivals)
        elif self._loop is not None:
            self._loop.call_soon_threadsafe(self._notify_many, arrivals)

    def _notify_many(self, arrivals: list[tuple[str, int, int, int]]) -> None:
        for topic, queue_id, next_offset, tags_code in arrivals:
            self.notify_arrival(topic, queue_id, next_offset, tags_code)

    def call_on_loop(self, fn: Callable[[str], None], arg: str) -> None:
        """Run ``fn(arg)`` on the broker's loop, now when called on it (the arrival listener's other waiters)."""
        if threading.get_ident() == self._loop_thread:
            fn(arg)
        elif self._loop is not None:
            self._loop.call_soon_threadsafe(fn, arg)

    def hold(
        self,
        conn: Connection,
        cmd: RemotingCommand,
        topic: str,
        queue_id: int,
        offset: int,
        timeout: float,
        matches_code: CodeFilter | None,
    ) -> None:
        key = (topic, queue_id)
        held = HeldPull(conn, cmd, offset, matches_code)
        held.timer = asyncio.get_running_loop().call_later(timeout, self._wake, key, held)
        self._held.setdefault(key, []).append(held)

    def notify_arrival(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None) -> None:
        key = (topic, queue_id)
        waiting = self._held.get(key)
        if not waiting:
            return
        for held in list(waiting):
            if held.offset >= max_offset:
                continue
            if held.matches_code is not None and tags_code is not None and not held.matches_code(tags_code):
                continue
            if self.ready is not None and not self.ready(topic, queue_id, held.offset):
                continue
            self._wake(key, held)

    def recheck(self) -> None:
        """The visible end moved (the confirm offset advanced): wake the held pulls that now find a message."""
        ready = self.ready
        if ready is None or not self._held:
            return
        for key, waiting in list(self._held.items()):
            for held in list(waiting):
                if ready(key[0], key[1], held.offset):
                    self._wake(key, held)

    def _wake(self, key: tuple[str, int], held: HeldPull) -> None:
        if held.done:
            return
        held.done = True
        if held.timer is not None:
            held.timer.cancel()
        waiting = self._held.get(key)
        if waiting is not None:
            with contextlib.suppress(ValueError):
                waiting.remove(held)
            if not waiting:
                del self._held[key]
        if held.conn.closed:
            return
        try:
            resp = self._rerun(held.conn, held.cmd)
        except Exception as exc:  # as the dispatcher answers a failing processor: SYSTEM_ERROR, never silence
            log.exception("pull.rerun_failed remote=%s", held.conn.remote)
            resp = held.cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        self._reply(held.conn, held.cmd, resp)

    def held_count(self) -> int:
        return sum(len(v) for v in self._held.values())

    def close(self) -> None:
        for waiting in self._held.values():
            for held in waiting:
                held.done = True
                if held.timer is not None:
                    held.timer.cancel()
        self._held.clear()
