"""GET_BROKER_HA_STATUS (907, Java 5.x): the broker's replication state as ``HARuntimeInfo`` JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rocketq.broker.context import BrokerContext
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.bodies import dumps
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.connection import Connection


class HAStatusProcessor:
    def __init__(self, ctx: BrokerContext, info: Callable[[], dict[str, Any]]) -> None:
        self._ctx = ctx
        self._info = info

    def register(self) -> None:
        self._ctx.gate.register(RequestCode.GET_BROKER_HA_STATUS, self.ha_status)

    def ha_status(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, body=dumps(self._info()))
