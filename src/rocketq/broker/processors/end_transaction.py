"""END_TRANSACTION (37): the remoting front of ``TransactionService.end_transaction``."""

from __future__ import annotations

from rocketq.broker.services.transaction import TransactionService
from rocketq.codes import RequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import EndTransactionRequestHeader
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingDispatcher


class EndTransactionProcessor:
    def __init__(self, gate: RemotingDispatcher, transactions: TransactionService) -> None:
        self._gate = gate
        self._transactions = transactions

    def register(self) -> None:
        self._gate.register(RequestCode.END_TRANSACTION, self.process)

    def process(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        answer = self._transactions.end_transaction(EndTransactionRequestHeader.from_ext(cmd.ext_fields))
        if answer is None:
            return None
        code, remark = answer
        return cmd.response(code, remark)
