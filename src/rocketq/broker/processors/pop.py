"""The remoting front of POP: Java 5.x's POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME
(and rocketq's POP_INFLIGHT_STATS), header in, ``PopService`` call, answer out through the gate."""

from __future__ import annotations

import orjson

from rocketq.broker.context import BrokerContext
from rocketq.broker.pop.service import PopService
from rocketq.codes import ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.pop_admin import POP_INFLIGHT_STATS
from rocketq.remoting.connection import Connection


class PopProcessors:
    def __init__(self, ctx: BrokerContext, pop: PopService) -> None:
        self._ctx = ctx
        self._pop = pop

    def register(self) -> None:
        self._ctx.gate.register(POP_INFLIGHT_STATS, self.inflight)

    def inflight(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        group = (cmd.ext_fields or {}).get("consumerGroup") or None
        rows = [{"topic": c.topic, "group": c.group, "inflight": c.inflight, "invisible": c.invisible,
                 "ready": c.ready} for c in self._pop.inflight(group)]  # fmt: skip
        return cmd.response(ResponseCode.SUCCESS, body=orjson.dumps(rows))
