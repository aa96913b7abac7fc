"""The controller at work on a loop: its processors on a dispatcher, the dead-broker scan, and the delivery of
role changes to brokers. The name server (``enableControllerInNamesrv``) and ``rocketq controller`` both use
it; only the dispatcher differs."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from rocketq.codes import ControllerRequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.controller_headers import NotifyBrokerRoleChangedRequestHeader
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingDispatcher
from rocketq.remoting.tasks import TaskSet
from rocketq.replication.controller.manager import sync_state_set_body
from rocketq.replication.controller.processors import ControllerProcessor
from rocketq.replication.controller.service import Controller, RoleChange

log = logging.getLogger("rocketq.controller")


class ControllerRuntime:
    def __init__(self, controller: Controller, dispatcher: RemotingDispatcher) -> None:
        self.controller = controller
        self.processor = ControllerProcessor(controller, after_request=self.deliver_notices)
        self.processor.register(dispatcher)
        dispatcher.close_listeners.append(self._on_connection_closed)
        self._client: RemotingClient | None = None
        self._scan_task: asyncio.Task[None] | None = None
        self._sends = TaskSet(log)
        self._closing = False

    def start(self) -> None:
        self._client = RemotingClient(connect_timeout=1.0)
        self._scan_task = asyncio.get_running_loop().create_task(self._scan_loop(), name="controller-scan")

    async def close(self) -> None:
        # From here on a closed connection is our own shutdown, not a broker's death: no more elections.
        self._closing = True
        if self._scan_task is not None:
            self._scan_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scan_task
        await self._sends.aclose(timeout=2.0)
        if self._client is not None:
            await self._client.close()

    async def scan_now(self) -> None:
        """One dead-broker pass (the scan loop calls it)."""
        await self.controller.scan()
        self.deliver_notices()

    def _on_connection_closed(self, conn: Connection) -> None:
        if self._closing or self._sends.closed:
            return
        self._sends.spawn(self._after_close(conn), name="controller-disconnect")

    async def _after_close(self, conn: Connection) -> None:
        try:
            await self.controller.on_channel_closed(conn)
        except Exception:  # a store error: the periodic scan retries the election
            log.exception("controller.disconnect_election_failed remote=%s", conn.remote)
        self.deliver_notices()

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(self.controller.config.scan_not_active_broker_interval)
            try:
                await self.scan_now()
            except Exception:  # keep scanning whatever one pass hit (a store error is logged and retried)
                log.exception("controller.scan_failed")

    def deliver_notices(self) -> None:
        notices, self.controller.notices = self.controller.notices, []
        if self._client is None or self._sends.closed:
            return
        for notice in notices:
            for addr in notice.member_addresses:
                self._sends.spawn(self._notify(addr, notice))

    async def _notify(self, addr: str, notice: RoleChange) -> None:
        assert self._client is not None
        header = NotifyBrokerRoleChangedRequestHeader(
            master_address=notice.master_address,
            master_epoch=notice.master_epoch,
            sync_state_set_epoch=notice.sync_state_set_epoch,
            master_broker_id=notice.master_id,
        )
        cmd = RemotingCommand.request(
            ControllerRequestCode.NOTIFY_BROKER_ROLE_CHANGED,
            header.to_ext(),
            sync_state_set_body(notice.sync_state_set, notice.sync_state_set_epoch),
        )
        try:
            await self._client.invoke_oneway(addr, cmd)
        except Exception as exc:  # a dead member learns from its next GET_REPLICA_INFO
            log.info("controller.notify_failed addr=%s group=%s error=%s", addr, notice.broker_name, exc)
