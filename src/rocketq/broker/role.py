"""The broker's role as a runtime value: master or slave, with an epoch that only grows.

Java keeps the role in ``MessageStoreConfig.brokerRole`` and flips it with ``changeToMaster`` /
``changeToSlave`` (5.x ``ReplicasManager``), calling ``changeSpecialServiceStatus`` to start or stop the
services only a master runs. Here every reader asks this one object (``is_master``, ``is_slave``,
``waits_for_slave``), and services that depend on the role subscribe with ``on_change`` instead of being
gated once at start-up. ``epoch`` is the 5.x controller's master epoch: a change must carry an epoch at least
the current one, so a stale failover decision can never take effect after a newer one.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


class BrokerRole(enum.Enum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"

    @classmethod
    def parse(cls, text: str) -> BrokerRole:
        try:
            return cls(text)
        except ValueError:
            raise ValueError(f"must be ASYNC_MASTER, SYNC_MASTER or SLAVE, not {text!r}") from None


@dataclass(frozen=True, slots=True)
class RoleSnapshot:
    """One role change as listeners see it."""

    role: BrokerRole
    epoch: int
    broker_id: int
    master_addr: str | None


RoleListener = Callable[[RoleSnapshot, RoleSnapshot], None]  # (before, after)


class StaleEpochError(ValueError):
    """A role change with an epoch older than the current one (a stale failover decision)."""


class BrokerRoleState:
    """The broker's current role; read in one place, changed at run time (failover)."""

    def __init__(self, role: BrokerRole, broker_id: int = 0, epoch: int = 0) -> None:
        self._now = RoleSnapshot(role, epoch, broker_id, None)
        self._listeners: list[RoleListener] = []
        self._derive()

    def _derive(self) -> None:
        # Plain attributes, not properties: the send and pull paths read them per request.
        role = self._now.role
        #: a slave: refuses sends, never commits offsets on pull
        self.is_slave = role is BrokerRole.SLAVE
        self.is_master = not self.is_slave
        #: SYNC_MASTER: a send is answered only once a slave has its bytes
        self.waits_for_slave = role is BrokerRole.SYNC_MASTER

    @property
    def role(self) -> BrokerRole:
        return self._now.role

    @property
    def epoch(self) -> int:
        return self._now.epoch

    @property
    def broker_id(self) -> int:
        return self._now.broker_id

    @property
    def master_addr(self) -> str | None:
        """The master this slave follows (learned from the name server's REGISTER_BROKER answer)."""
        return self._now.master_addr

    def snapshot(self) -> RoleSnapshot:
        return self._now

    def on_change(self, listener: RoleListener) -> None:
        self._listeners.append(listener)

    def change(
        self, role: BrokerRole, *, epoch: int | None = None, broker_id: int | None = None,
        master_addr: str | None = None,
    ) -> RoleSnapshot:  # fmt: skip
        """Switch to ``role`` at ``epoch`` (default: the current one) and tell every listener.

        Raises ``StaleEpochError`` when ``epoch`` is older than the current epoch; nothing changes then.
        """
        before = self._now
        new_epoch = before.epoch if epoch is None else epoch
        if new_epoch < before.epoch:
            raise StaleEpochError(f"role change to {role.value} at epoch {new_epoch} < current epoch {before.epoch}")
        after = RoleSnapshot(
            role, new_epoch, before.broker_id if broker_id is None else broker_id,
            master_addr if role is BrokerRole.SLAVE else None,
        )  # fmt: skip
        if after == before:
            return after
        self._now = after
        self._derive()
        log.info("role.changed from=%s to=%s epoch=%s master=%s", before.role.value, role.value, new_epoch,
                 after.master_addr)  # fmt: skip
        for listener in list(self._listeners):
            try:
                listener(before, after)
            except Exception:  # one failing service must not leave the others in the old role
                log.exception("role.listener_failed to=%s", role.value)
        return after

    def to_master(self, epoch: int) -> None:
        """5.x controller mode: elected at ``epoch`` — SYNC_MASTER, brokerId 0 (``StaleEpochError`` if stale)."""
        self.change(BrokerRole.SYNC_MASTER, epoch=epoch, broker_id=0)

    def to_slave(self, epoch: int, broker_id: int, master_addr: str) -> None:
        """5.x controller mode: a slave of ``master_addr`` at ``epoch``, with the controller's broker id."""
        self.change(BrokerRole.SLAVE, epoch=epoch, broker_id=broker_id, master_addr=master_addr)

    def learn_master(self, master_addr: str | None) -> None:
        """A slave's master address as the name server answers it (no epoch change)."""
        if self.is_slave and master_addr != self._now.master_addr:
            self.change(BrokerRole.SLAVE, master_addr=master_addr or None)
