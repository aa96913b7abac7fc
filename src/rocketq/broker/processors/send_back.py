"""CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to consume.

RocketMQ 4.9's asyncConsumerSendMsgBack (``rocketq.broker.messaging.send.send_back``): the original is
looked up by commit-log offset and re-stored under ``%RETRY%{group}`` with the delay level 3 + reconsume
times (or the level asked for), so it comes back after 10 s, 30 s, 1 m, ...; past ``maxReconsumeTimes`` (the
group's retryMaxTimes, 16) or for a negative delay level it goes to ``%DLQ%{group}`` instead.
"""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.broker.messaging.semantics import MessageSemantics
from rocketq.broker.messaging.send import send_back
from rocketq.codes import RequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader
from rocketq.remoting.connection import Connection


class SendBackProcessor:
    def __init__(self, ctx: BrokerContext, semantics: MessageSemantics) -> None:
        self._ctx = ctx
        self._semantics = semantics

    def register(self) -> None:
        self._ctx.gate.register(RequestCode.CONSUMER_SEND_MSG_BACK, self.process)

    def process(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = ConsumerSendMsgBackRequestHeader.from_ext(cmd.ext_fields)
        code, remark = send_back(self._ctx, self._semantics, h, client_version=conn.version)
        return cmd.response(code, remark)
