"""The broker's side of 5.x controller mode (Java ``ReplicasManager``): who this broker is in its group, and
what role the controller gives it.

Start-up: find the controller that leads (CONTROLLER_GET_METADATA_INFO), get a broker id (the metadata file, or
GET_NEXT_BROKER_ID → temporary file → APPLY_BROKER_ID → final file), register, heartbeat, and take the role the
answer names — electing itself when the group has no master. Then: a heartbeat every
``brokerHeartbeatInterval``, GET_REPLICA_INFO every ``syncBrokerMetadataPeriod`` (NOTIFY_BROKER_ROLE_CHANGED
brings the same news sooner), and on a master the in-sync set upkeep every ``checkSyncStateSetPeriod``.

A new master appends an epoch entry (its epoch, its max offset), takes brokerId 0 and SYNC_MASTER at that epoch.
A new slave asks the master for its epoch entries (GET_BROKER_EPOCH_CACHE on the master's main port), cuts its
own log where the two stop agreeing, and only then lets its HA client follow (with the 4.9 frames, after a
handshake frame that names it). The remoting is only through ``ControllerClient`` and one ``RemotingClient``;
the broker wires the callbacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rocketq.codes import ControllerRequestCode, ResponseCode
from rocketq.errors import RemotingError
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.controller_headers import BrokerHeartbeatRequestHeader
from rocketq.remoting.client import RemotingClient
from rocketq.replication.controller.client import ControllerClient, ControllerError, MasterInfo
from rocketq.replication.controller.epoch import EpochCache, EpochEntry, EpochFile, truncation_offset
from rocketq.replication.service import HAService
from rocketq.store import MessageStore

log = logging.getLogger(__name__)

METADATA_FILE = "brokerIdentity"


def _nothing_visible() -> int:
    return 0


class RoleTarget(Protocol):
    """The broker's role object as this manager sees it (``broker.role.BrokerRoleState``); a change at an epoch
    older than the current one raises ValueError and changes nothing."""

    is_slave: bool
    is_master: bool

    @property
    def epoch(self) -> int: ...

    def to_master(self, epoch: int) -> None: ...

    def to_slave(self, epoch: int, broker_id: int, master_addr: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ReplicasConfig:
    cluster_name: str
    broker_name: str
    broker_addr: str
    controller_addrs: tuple[str, ...]
    store_dir: Path
    heartbeat_interval_ms: int = 1_000
    sync_metadata_period_ms: int = 5_000
    check_sync_state_set_period_ms: int = 5_000
    max_time_slave_not_catchup_ms: int = 15_000
    heartbeat_timeout_ms: int = 10_000
    election_priority: int = 2_147_483_647


class BrokerMetadataFile:
    """``<store>/brokerIdentity`` (the id the controller gave this broker) and its ``-temp`` twin written before
    APPLY_BROKER_ID (with the check code, so a restart in between applies the same id again). JSON text."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / METADATA_FILE
        self.temp = self.path.with_name(METADATA_FILE + "-temp")

    @staticmethod
    def _read(path: Path) -> dict[str, object] | None:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def load(self) -> int | None:
        data = self._read(self.path)
        bid = data.get("brokerId") if data else None
        return bid if isinstance(bid, int) and bid > 0 else None

    def load_temp(self) -> tuple[int, str] | None:
        data = self._read(self.temp)
        if not data:
            return None
        bid, code = data.get("brokerId"), data.get("registerCheckCode")
        return (bid, code) if isinstance(bid, int) and bid > 0 and isinstance(code, str) else None

    def write_temp(self, cluster: str, name: str, broker_id: int, check_code: str) -> None:
        _write(self.temp, {"clusterName": cluster, "brokerName": name, "brokerId": broker_id,
                           "registerCheckCode": check_code})  # fmt: skip

    def promote_temp(self, cluster: str, name: str, broker_id: int) -> None:
        _write(self.path, {"clusterName": cluster, "brokerName": name, "brokerId": broker_id})
        with contextlib.suppress(FileNotFoundError):
            self.temp.unlink()


def _write(path: Path, data: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps(data))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class ReplicasManager:
    def __init__(
        self, config: ReplicasConfig, role: RoleTarget, store: MessageStore, ha: HAService,
        remoting: RemotingClient, *, on_role_decided: Callable[[], None] | None = None,
        sign: Callable[[RemotingCommand], RemotingCommand] | None = None,
    ) -> None:  # fmt: skip
        self.config = config
        self.role = role
        self.store = store
        self.ha = ha
        self.remoting = remoting
        #: called after every role change the controller decided (the broker registers with the name servers)
        self.on_role_decided = on_role_decided
        #: signs requests with the broker's account (a protected controller or master)
        self.sign = sign
        self.metadata = BrokerMetadataFile(config.store_dir)
        self.epoch_file = EpochFile(config.store_dir)
        self.epochs: EpochCache = self.epoch_file.load()
        #: the id the controller gave this broker (never 0; brokerId 0 on the name server means "master")
        self.broker_id: int | None = None
        self.controller: ControllerClient | None = None
        self.master: MasterInfo | None = None
        #: set once the first role is taken
        self.ready = asyncio.Event()
        #: a slave: the master's HA address may be followed (its divergent tail is cut)
        self._truncated_for: tuple[int, str] | None = None
        self._namesrv_ha: tuple[str | None, str | None] = (None, None)  # (master main address, its HA address)
        self._master_epochs: EpochCache | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()
        self._catchup: dict[int, float] = {}  # slave id → last time its ack reached the master's end
        #: joining the in-sync set (Java's per-ack ``maybeExpandInSyncStateSet``): a slave whose ack reached the
        #: master's end as it stood at its previous ack is caught up to within one report; from then on sends
        #: wait for it too (``HAService.candidates``), and once it holds everything acknowledged before that
        #: (the end when it became a candidate) the controller is asked to add it. Under a steady load the
        #: master's end never stops moving, so "ack = the end now" would keep a returning slave out.
        self._seen_top: dict[int, int] = {}  # slave id → the master's end at its previous ack
        self._joining: dict[int, tuple[int, float]] = {}  # candidate → (offset it must reach, since when)
        self._pending: set[str] = set()  # actions asked for "now" and not finished yet

    # ------------------------------------------------------------------------------------- lifecycle

    def start(self) -> None:
        self.ha.controller_mode = True
        self.ha.master.handshake = True
        self.ha.master.on_disconnect = self.on_slave_disconnected
        self.ha.on_slave_ack = self.on_slave_ack
        # until the controller has named the role, the log may hold a tail the group never confirmed (an old
        # master's): nothing is handed to consumers before it is either confirmed (master) or cut (slave)
        self.store.set_visible_limit(_nothing_visible)
        self._tasks.append(asyncio.create_task(self._run(), name="replicas-manager"))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t

    async def _run(self) -> None:
        cfg = self.config
        backoff = max(cfg.heartbeat_interval_ms, 200) / 1000
        while True:  # start-up: retried until a controller answers (the broker serves nothing as a master yet)
            try:
                await self._start_up()
                break
            except (ControllerError, RemotingError, OSError) as exc:
                log.warning("replicas.start_up_failed: %s; retrying", exc)
                await asyncio.sleep(backoff * (1 + random.random()))
        for period, name in ((cfg.heartbeat_interval_ms, "_heartbeat"), (cfg.sync_metadata_period_ms,
                             "sync_replica_info"), (cfg.check_sync_state_set_period_ms, "check_sync_state_set")):
            self._tasks.append(asyncio.create_task(self._every(period, name), name=f"replicas-{name}"))

    async def _every(self, period_ms: int, name: str) -> None:
        while True:
            await asyncio.sleep(period_ms / 1000)
            action = getattr(self, name)  # looked up each time: a test may stand in for one step
            try:
                result = action()
                if asyncio.iscoroutine(result):
                    await result
            except (ControllerError, RemotingError, OSError) as exc:
                log.info("replicas.%s_failed: %s", name.strip("_"), exc)
            except Exception:  # keep the loop alive whatever one pass hit
                log.exception("replicas.task_failed")

    async def _leader(self) -> ControllerClient:
        for addr in self.config.controller_addrs:
            client = ControllerClient(self.remoting, addr, sign=self.sign)
            try:
                leader = await client.leader_address()
            except (ControllerError, RemotingError) as exc:
                log.info("replicas.controller_unavailable addr=%s: %s", addr, exc)
                continue
            if leader:
                return ControllerClient(self.remoting, leader, sign=self.sign) if leader != addr else client
        raise RemotingError(f"no controller leader among {list(self.config.controller_addrs)}")

    async def _start_up(self) -> None:
        cfg = self.config
        self.controller = ctl = await self._leader()
        bid = self.metadata.load()
        if bid is None:
            pending = self.metadata.load_temp()
            if pending is None:
                bid = await ctl.next_broker_id(cfg.cluster_name, cfg.broker_name)
                code = f"{cfg.broker_addr};{int(time.time() * 1000)}"
                self.metadata.write_temp(cfg.cluster_name, cfg.broker_name, bid, code)
            else:
                bid, code = pending
            await ctl.apply_broker_id(cfg.cluster_name, cfg.broker_name, bid, code)
            self.metadata.promote_temp(cfg.cluster_name, cfg.broker_name, bid)
        self.broker_id = bid
        self.ha.self_id = bid
        self.ha.client.broker_id = bid
        info = await ctl.register(cfg.cluster_name, cfg.broker_name, bid, cfg.broker_addr)
        await self._heartbeat()
        log.info("replicas.registered brokerId=%d master=%s epoch=%d", bid, info.master_id, info.master_epoch)
        if info.master_id is None or info.master_address is None:
            info = await ctl.elect(cfg.cluster_name, cfg.broker_name, bid)
        await self.apply(info)
        self.ready.set()

    # ------------------------------------------------------------------------------------- the calls

    async def _heartbeat(self) -> None:
        ctl, bid, cfg = self.controller, self.broker_id, self.config
        if ctl is None or bid is None:
            return
        await ctl.heartbeat(BrokerHeartbeatRequestHeader(
            cluster_name=cfg.cluster_name, broker_addr=cfg.broker_addr, broker_name=cfg.broker_name,
            broker_id=bid, epoch=self.epochs.last_epoch, max_offset=self.store.get_max_phy_offset(),
            confirm_offset=self.ha.confirm_offset(), heartbeat_timeout_mills=cfg.heartbeat_timeout_ms,
            election_priority=cfg.election_priority,
        ))  # fmt: skip

    async def sync_replica_info(self) -> None:
        """GET_REPLICA_INFO: follow a newer master epoch; elect when the group has none."""
        ctl, bid = self.controller, self.broker_id
        if ctl is None or bid is None:
            return
        info = await ctl.replica_info(self.config.broker_name)
        if info.master_id is None or not info.master_address:
            info = await ctl.elect(self.config.cluster_name, self.config.broker_name, bid)
        await self.apply(info)
        if self.role.is_slave:
            self._adopt_master_epochs()
            if self._follow_ready() is None and self.on_role_decided is not None:
                self.on_role_decided()  # the name server has not named the new master's HA address to us yet

    def on_notify(self, info: MasterInfo) -> None:
        """NOTIFY_BROKER_ROLE_CHANGED (from the broker's port): ask the controller at once. The notice itself is
        not acted on — anyone who reaches the port could send one — only the controller's own answer is."""
        log.info("replicas.notified master=%s epoch=%d", info.master_address, info.master_epoch)
        self._soon("sync_replica_info")

    def on_slave_ack(self, slave_id: int, ack: int) -> None:
        """A named slave reported: a caught-up outsider becomes a candidate; a candidate that holds what was
        acknowledged before it became one is put to the controller at once (not at the next period)."""
        info = self.master
        if not self.role.is_master or info is None or slave_id in self.ha.sync_state_set:
            return
        joining = self._joining.get(slave_id)
        if joining is not None:
            if ack >= joining[0]:
                self._soon("check_sync_state_set")
            return
        top = self.store.get_max_phy_offset()
        previous, self._seen_top[slave_id] = self._seen_top.get(slave_id), top
        epoch_start = self.epochs.last.start_offset if self.epochs.last else 0
        if previous is not None and ack >= previous and ack >= epoch_start:
            self._joining[slave_id] = (top, time.monotonic())
            self.ha.candidates = frozenset(self._joining)
            log.info("replicas.slave_catching_up id=%d ack=%d target=%d", slave_id, ack, top)
            if ack >= top:
                self._soon("check_sync_state_set")

    def _forget_candidates(self) -> None:
        self._joining.clear()
        self._seen_top.clear()
        self.ha.candidates = frozenset()

    def on_slave_disconnected(self) -> None:
        """A named slave's HA connection ended: check the in-sync set now, not at the next period (sends wait
        for a member that is gone until it leaves the set)."""
        self._soon("check_sync_state_set")

    def _soon(self, name: str) -> None:
        if name in self._pending or not self._tasks:  # one at a time; nothing before start()
            return
        self._pending.add(name)

        async def once() -> None:
            try:
                await getattr(self, name)()
            except (ControllerError, RemotingError, OSError) as exc:
                log.info("replicas.%s_failed: %s", name, exc)
            except Exception:
                log.exception("replicas.task_failed")
            finally:
                self._pending.discard(name)

        task = asyncio.create_task(once(), name=f"replicas-{name}-now")
        self._tasks.append(task)
        task.add_done_callback(lambda t: self._tasks.remove(t) if t in self._tasks else None)

    # ------------------------------------------------------------------------------------- roles

    async def apply(self, info: MasterInfo) -> None:
        """Take the role ``info`` gives (ignoring anything older than the epoch this broker is at)."""
        async with self._lock:
            bid = self.broker_id
            if bid is None or info.master_id is None or not info.master_address:
                return
            if info.master_epoch < self.role.epoch:
                return
            known = self.master
            if known is not None and (known.master_epoch, known.master_id) == (info.master_epoch, info.master_id):
                if info.master_id == bid:
                    if info.sync_state_set and info.sync_state_set_epoch > self._isr_epoch:
                        self._set_isr(info.sync_state_set, info.sync_state_set_epoch)
                    return
                if self._truncated_for == (info.master_epoch, info.master_address):
                    return  # already following it
            self.master = info
            if info.master_id == bid:
                self._become_master(info)
            else:
                await self._become_slave(info)
        if self.on_role_decided is not None:
            self.on_role_decided()

    def _become_master(self, info: MasterInfo) -> None:
        if self.role.is_slave:
            self.ha.client.update_master_address(None)  # nothing more is applied from the old master
            self.store.drop_replica_tail()
            self._adopt_master_epochs()
        top = self.store.get_max_phy_offset()
        if self.epochs.last_epoch < info.master_epoch:
            self.epochs.append(info.master_epoch, top)
            self.epoch_file.save(self.epochs)
        if self.role.is_slave:
            self.ha.slave_acks.clear()  # acks from an earlier term as master say nothing about the slaves' logs now
        self._set_isr(info.sync_state_set or frozenset({self.broker_id or 0}), info.sync_state_set_epoch)
        self.store.set_visible_limit(self.ha.confirm_offset)  # consumers see what the whole in-sync set holds
        self._catchup.clear()
        self._forget_candidates()
        self._truncated_for = None
        try:
            self.role.to_master(info.master_epoch)
        except ValueError as exc:
            log.warning("replicas.stale_master_change: %s", exc)
            return
        log.info("replicas.became_master brokerId=%s epoch=%d start=%d", self.broker_id, info.master_epoch, top)

    async def _become_slave(self, info: MasterInfo) -> None:
        assert info.master_address is not None
        self.ha.client.update_master_address(None)  # stop following anybody until the tail is cut
        self._truncated_for = None
        try:
            self.role.to_slave(info.master_epoch, self.broker_id or 0, info.master_address)
        except ValueError as exc:
            log.warning("replicas.stale_slave_change: %s", exc)
            return
        self.ha.sync_state_set = frozenset()
        self._forget_candidates()
        self.store.set_visible_limit(_nothing_visible)
        master_epochs, master_max = await self._fetch_epochs(info.master_address)
        self._master_epochs = master_epochs
        local_max = self.store.get_max_phy_offset()
        point = truncation_offset(self.epochs, local_max, master_epochs, master_max)
        if point is None:
            # no shared epoch: nothing of this log is known good; follow from the master's current file as an
            # empty replica would only after an operator wiped the store (Java refuses too)
            log.error("replicas.no_consistent_point local=%s master=%s: not following %s",
                      self.epochs.entries, master_epochs.entries, info.master_address)  # fmt: skip
            return
        if point < local_max:
            self.store.truncate_to(point)
        self.epochs.truncate_suffix(point)
        self._adopt_master_epochs()
        self.epoch_file.save(self.epochs)
        self._truncated_for = (info.master_epoch, info.master_address)
        self.store.set_visible_limit(None)  # what is left is the master's
        log.info("replicas.became_slave brokerId=%s master=%s epoch=%d cut_at=%d (was %d)", self.broker_id,
                 info.master_address, info.master_epoch, point, local_max)  # fmt: skip
        self._follow_ready()

    async def _fetch_epochs(self, master_addr: str) -> tuple[EpochCache, int]:
        cmd = RemotingCommand.request(ControllerRequestCode.GET_BROKER_EPOCH_CACHE, {})
        if self.sign is not None:
            cmd = self.sign(cmd)
        resp = await self.remoting.invoke(master_addr, cmd, timeout=3.0)
        if resp.code != ResponseCode.SUCCESS:
            raise ControllerError(resp.remark, resp.code)
        try:
            body = json.loads(bytes(resp.body or b"{}"))
            entries = [EpochEntry(int(e["epoch"]), int(e["startOffset"])) for e in body.get("epochList") or []]
            return EpochCache(entries), int(body.get("maxOffset", 0))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RemotingError(f"bad GET_BROKER_EPOCH_CACHE answer from {master_addr}: {exc}") from None

    def _adopt_master_epochs(self) -> None:
        """A slave's log is the master's: the master's epochs that start within it are its epochs too."""
        theirs = self._master_epochs
        if theirs is None:
            return
        top = self.store.get_max_phy_offset()
        changed = False
        for e in theirs.entries:
            if e.start_offset <= top and e.epoch > self.epochs.last_epoch:
                changed = self.epochs.append(e.epoch, e.start_offset) or changed
        if changed:
            self.epoch_file.save(self.epochs)

    # --------------------------------------------------------------------- following (slave)

    def on_namesrv_result(self, master_addr: str | None, ha_addr: str | None) -> None:
        """The name server's REGISTER_BROKER answer names the group's master and its HA address."""
        self._namesrv_ha = (master_addr, ha_addr)
        self._follow_ready()

    def _follow_ready(self) -> str | None:
        """Point the HA client at the master once its tail is cut and the name server names the same master."""
        target = self._truncated_for
        addr, ha = self._namesrv_ha
        if not self.role.is_slave or target is None or addr != target[1] or not ha:
            return None
        self.ha.client.update_master_address(ha)
        return ha

    # ------------------------------------------------------------------- the in-sync set (master)

    def _set_isr(self, ids: frozenset[int], epoch: int) -> None:
        self.ha.sync_state_set = ids
        self._isr_epoch = epoch
        self.ha.confirm_changed()

    async def check_sync_state_set(self) -> None:
        """Java ``AutoSwitchHAService.maybeShrinkSyncStateSet`` / ``maybeExpandInSyncStateSet`` together: a
        named slave joins once its ack reaches the confirm offset and the current epoch's start; a member
        leaves when disconnected or not caught up for ``haMaxTimeSlaveNotCatchup``."""
        ctl, bid, info = self.controller, self.broker_id, self.master
        if ctl is None or bid is None or info is None or not self.role.is_master or info.master_id != bid:
            return
        now = time.monotonic()
        top = self.store.get_max_phy_offset()
        connected = {c.slave_id: c.ack_offset for c in self.ha.master.connections if c.slave_id is not None}
        for sid, ack in connected.items():  # caught up: reached what the master held at the last check
            if ack >= self._last_top or sid not in self._catchup:
                self._catchup[sid] = now
        self._last_top = top
        current = set(self.ha.sync_state_set) | {bid}
        wanted = {bid}
        confirm = self.ha.confirm_offset(with_candidates=False)  # what the members hold
        epoch_start = self.epochs.last.start_offset if self.epochs.last else 0
        limit = self.config.max_time_slave_not_catchup_ms / 1000
        for sid in list(self._joining):  # a candidate that left, or did not catch up in time, stops counting
            if sid not in connected or now - self._joining[sid][1] > limit:
                del self._joining[sid]
                self._seen_top.pop(sid, None)
        self.ha.candidates = frozenset(self._joining)
        for sid, ack in connected.items():
            if sid in current:
                if now - self._catchup.get(sid, now) <= limit:
                    wanted.add(sid)
            elif ack >= epoch_start and (ack >= confirm or ack >= self._joining.get(sid, (top + 1, 0.0))[0]):
                wanted.add(sid)
        if wanted == current:
            return
        # while the controller decides, sends wait for both sets (a joining slave counts at once, a leaving one
        # until the controller agreed it left)
        self.ha.sync_state_set = frozenset(current | wanted)
        try:
            new_epoch = await ctl.alter_sync_state_set(self.config.broker_name, bid, info.master_epoch,
                                                       frozenset(wanted), self._isr_epoch)  # fmt: skip
        except BaseException:
            self.ha.sync_state_set = frozenset(current)
            raise
        log.info("replicas.sync_state_set from=%s to=%s epoch=%d", sorted(current), sorted(wanted), new_epoch)
        for sid in wanted:
            self._joining.pop(sid, None)
        self.ha.candidates = frozenset(self._joining)
        self._set_isr(frozenset(wanted), new_epoch)

    _isr_epoch = 0
    _last_top = 0
