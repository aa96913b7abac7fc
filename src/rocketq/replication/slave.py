"""The slave's side of the HA socket (Java's ``HAService.HAClient``).

Connect to the master's HA address, report the own max offset, append every frame at its offset, report
again after each append that grew the log, and send the same report as a keep-alive when idle. A frame whose
offset is not the own end closes the connection (Java does the same; an empty slave takes any offset). After
any failure it waits ``reconnect_interval_ms`` and connects again, resuming from its own max offset.

Deliberately different from Java: the first report goes out at once after connecting (Java waits one
heartbeat interval, 5 s, before replication starts), and a master silent for ``housekeeping_interval_ms``
closes the connection (Java's slave times out on its own last write only).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from rocketq.replication.config import HAConfig
from rocketq.replication.frames import TransferReader, encode_handshake, encode_report
from rocketq.store import MessageStore
from rocketq.store.replica import ReplicaOffsetError

log = logging.getLogger(__name__)

_CONNECT_TIMEOUT = 5.0  # Java's blocking connect timeout


class FrameOffsetError(ValueError):
    """The master sent bytes for an offset that is not this slave's end."""


def split_addr(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host, int(port)


class HAClient:
    def __init__(self, store: MessageStore, config: HAConfig) -> None:
        self.store = store
        self.config = config
        self._master: str | None = None
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: the last offset reported to the master
        self.reported = -1
        self.connected = False
        #: connections made (tests and status read it)
        self.connects = 0
        #: controller mode: this slave's broker id, sent in a handshake frame before the first report
        self.broker_id: int | None = None

    @property
    def master_address(self) -> str | None:
        return self._master

    def update_master_address(self, addr: str | None) -> None:
        """Java's ``updateHaMasterAddress``: a new address drops the current connection."""
        addr = addr or None
        if addr != self._master:
            log.info("ha.slave.master_address old=%s new=%s", self._master, addr)
            self._master = addr
            self._changed.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="ha-client")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def _run(self) -> None:
        pause = self.config.reconnect_interval_ms / 1000
        while True:
            self._changed.clear()
            addr = self._master
            if addr is not None:
                follow = asyncio.create_task(self._follow(addr))
                changed = asyncio.create_task(self._changed.wait())
                try:
                    await asyncio.wait((follow, changed), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for t in (follow, changed):
                        t.cancel()
                    for t in (follow, changed):
                        with contextlib.suppress(BaseException):
                            await t
                self.connected = False
                if self._changed.is_set():
                    continue  # a new master: connect to it now
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), pause)

    async def _follow(self, addr: str) -> None:
        host, port = split_addr(addr)
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), _CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            log.info("ha.slave.connect_failed master=%s: %s", addr, exc)
            return
        self.connected = True
        self.connects += 1
        log.info("ha.slave.connected master=%s from=%d", addr, self.store.get_max_phy_offset())
        try:
            await self._stream(addr, reader, writer)
        except (OSError, ValueError, TimeoutError) as exc:
            log.warning("ha.slave.disconnected master=%s: %s", addr, exc)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _stream(self, addr: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        cfg = self.config
        loop = asyncio.get_running_loop()
        heartbeat = cfg.heartbeat_interval_ms / 1000
        housekeeping = cfg.housekeeping_interval_ms / 1000
        frames = TransferReader(max_body=max(cfg.transfer_batch_size, 1) * 64)
        store = self.store
        last_report = 0.0

        async def report() -> None:
            nonlocal last_report
            self.reported = store.get_max_phy_offset()
            writer.write(encode_report(self.reported))
            await writer.drain()
            last_report = loop.time()

        last_read = loop.time()
        if self.broker_id is not None:
            writer.write(encode_handshake(self.broker_id))
        await report()
        while True:
            wait = max(0.001, min(heartbeat - (loop.time() - last_report), housekeeping - (loop.time() - last_read)))
            try:
                data = await asyncio.wait_for(reader.read(256 * 1024), wait)
            except TimeoutError:
                data = None
            now = loop.time()
            if data is None:
                if now - last_read >= housekeeping:
                    raise TimeoutError(f"master silent for {housekeeping:.1f}s")
                await report()  # keep-alive
                continue
            if not data:
                raise ConnectionResetError("master closed the connection")
            last_read = now
            if self._master != addr:  # told to follow another master, or none (promoted): apply nothing more
                raise ConnectionAbortedError(f"no longer following {addr}")
            for frame in frames.feed(data):
                own = store.get_max_phy_offset()
                if own != 0 and own != frame.offset:
                    raise FrameOffsetError(f"master sent offset {frame.offset}, this slave ends at {own}")
                if frame.body:
                    try:
                        store.append_replica(frame.offset, frame.body)
                    except ReplicaOffsetError as exc:
                        raise FrameOffsetError(str(exc)) from None
            if store.get_max_phy_offset() > self.reported:
                await report()
