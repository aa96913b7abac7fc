"""A broker's replication: the master side (listening, the slaves' acks, SYNC_MASTER's waits) and the slave
side (following a master), switched with the broker's role. It is the store's ``ReplicationHook``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from rocketq.replication.config import HAConfig
from rocketq.replication.master import HAMaster, PeerFilter
from rocketq.replication.slave import HAClient
from rocketq.replication.waiters import ReplicaWaiters
from rocketq.store import MessageStore
from rocketq.store.results import FlushCallback

log = logging.getLogger(__name__)


class HAService:
    def __init__(self, store: MessageStore, config: HAConfig, admit: PeerFilter | None = None) -> None:
        self.store = store
        self.config = config
        self.master = HAMaster(store, config, self._on_ack, admit)
        self.client = HAClient(store, config)
        self._waiters: ReplicaWaiters | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: the highest offset any slave reported (Java's push2SlaveMaxOffset: a maximum, never lowered)
        self.push2slave_max = 0
        #: controller mode (``ReplicasManager`` sets these): sends wait for the whole in-sync set, whose slowest
        #: ack is the confirm offset
        self.controller_mode = False
        #: allAckInSyncStateSet: the confirm offset is the in-sync set's slowest ack (else the store's end)
        self.all_ack = True
        self.self_id = 0
        self.sync_state_set: frozenset[int] = frozenset()
        #: called on the loop after the confirm offset may have moved (the broker wakes held pulls)
        self.on_confirm: Callable[[], None] | None = None
        self._last_confirm = -1
        #: each named slave's latest ack (kept after it disconnects: it still bounds the confirm offset)
        self.slave_acks: dict[int, int] = {}
        #: slaves about to join the in-sync set: sends already wait for them (see ``ReplicasManager``)
        self.candidates: frozenset[int] = frozenset()
        #: controller mode: called with (slave id, its ack) on every named slave's report
        self.on_slave_ack: Callable[[int, int], None] | None = None

    async def start(self, host: str, port: int) -> int:
        """Listen on the HA port (every broker does, as in Java) and start the client (idle without a master)."""
        self._loop = asyncio.get_running_loop()
        self._waiters = ReplicaWaiters(self._loop, self.config.slave_timeout_ms / 1000)
        port = await self.master.start(host, port)
        self.store.set_replication_hook(self)
        self.client.start()
        return port

    async def stop(self) -> None:
        await self.client.stop()
        await self.master.stop()
        if self._waiters is not None:
            self._waiters.close()

    def _on_ack(self, offset: int) -> None:
        if self.controller_mode:
            for conn in self.master.connections:
                if conn.slave_id is not None and conn.ack_offset >= 0:
                    self.slave_acks[conn.slave_id] = conn.ack_offset
                    if self.on_slave_ack is not None:
                        self.on_slave_ack(conn.slave_id, conn.ack_offset)
            self.push2slave_max = max(self.push2slave_max, offset)
            self.confirm_changed()
            return
        if offset > self.push2slave_max:
            self.push2slave_max = offset
            if self._waiters is not None:
                self._waiters.ack(offset)

    def is_in_sync(self, master_max: int, ack_offset: int) -> bool:
        """A connected slave counts as in sync when it acked and lags by less than ``haSlaveFallbehindMax``
        (Java 5's DefaultHAService: ``haMaxGapNotInSync``, the same 256 MiB by default)."""
        return ack_offset >= 0 and master_max - ack_offset < self.config.slave_fallbehind_max
    def confirm_offset(self, *, with_candidates: bool = True) -> int:
        """Controller mode: what every member of the in-sync set holds (the store's end when the set is this
        master alone). Outside controller mode: the store's end."""
        top = self.store.get_max_phy_offset()
        if not self.controller_mode or not self.all_ack:
            return top
        # (a union only while a slave is joining: this runs for every pull in controller mode)
        ids = self.sync_state_set | self.candidates if with_candidates and self.candidates else self.sync_state_set
        others = [self.slave_acks.get(i, 0) for i in ids if i != self.self_id]
        return min([top, *others])

    def confirm_changed(self) -> None:
        """The in-sync set or an ack moved: answer the sends the confirm offset now covers."""
        confirm = self.confirm_offset()
        if confirm == self._last_confirm:
            return  # an ack from a slave outside the set, or one that moved nothing
        self._last_confirm = confirm
        if self._waiters is not None:
            self._waiters.ack(confirm)
        if self.on_confirm is not None:
            self.on_confirm()

    # ------------------------------------------------------------------ ReplicationHook (SYNC_MASTER)

    def is_replica_ok(self, offset: int) -> bool:
        """Java's ``isSlaveOK``: a slave is connected and lags by less than ``haSlaveFallbehindMax``.
        Controller mode: always (the in-sync set decides, a set of this master alone answers at once)."""
        if self.controller_mode:
            return True
        return (
            self.master.connection_count > 0
            and offset - self.push2slave_max < self.config.slave_fallbehind_max
        )

    def add_replication_waiter(self, offset: int, callback: FlushCallback) -> None:
        waiters, loop = self._waiters, self._loop
        if waiters is None or loop is None:
            callback(False)
            return
        if self.controller_mode and self.confirm_offset() >= offset:
            callback(True)
            return
        waiters.add(offset, callback)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self.master.wakeup_all()
        else:
            loop.call_soon_threadsafe(self.master.wakeup_all)
