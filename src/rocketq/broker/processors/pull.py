"""PULL_MESSAGE (11): the remoting front of ``PullService``, with long polling.

Every answer carries the four header fields as strings (C++ clients need each of them). A pull the service
says to suspend is parked in ``PullHoldService``; when it wakes, the pull runs again (without permission to
park) and its answer leaves through the gate like any other.
"""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.broker.messaging.pull import PullService
from rocketq.broker.services.long_polling import PullHoldService
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketq.remoting.connection import Connection


class PullProcessor:
    def __init__(self, ctx: BrokerContext, service: PullService) -> None:
        self._gate = ctx.gate
        self._service = service
        self.holds = PullHoldService(self.rerun, self._gate.reply)

    def register(self) -> None:
        self._gate.register(RequestCode.PULL_MESSAGE, self.process)

    def process(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        return self._pull(conn, cmd, allow_suspend=True)

    def rerun(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        return self._pull(conn, cmd, allow_suspend=False)

    def _pull(self, conn: Connection, cmd: RemotingCommand, allow_suspend: bool) -> RemotingCommand | None:
        h = PullMessageRequestHeader.from_ext(cmd.ext_fields)  # a HeaderError: the gate answers and logs it
        out = self._service.pull(h, remote=conn.remote, allow_suspend=allow_suspend)
        if out.suspend_seconds > 0:
            self.holds.hold(conn, cmd, h.topic, h.queue_id, h.queue_offset, out.suspend_seconds, out.matches_code)
            return None
        if out.code not in _PULL_STATUS_CODES:  # a refusal carries no pull header, as in Java
            return cmd.response(out.code, out.remark)
        header = PullMessageResponseHeader(
            suggest_which_broker_id=out.suggest_which_broker_id,
            next_begin_offset=out.next_begin_offset,
            min_offset=out.min_offset,
            max_offset=out.max_offset,
        )
        return cmd.response(out.code, out.remark, header.to_ext(), out.body)


_PULL_STATUS_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.PULL_NOT_FOUND,
        ResponseCode.PULL_RETRY_IMMEDIATELY,
        ResponseCode.PULL_OFFSET_MOVED,
    }
)

