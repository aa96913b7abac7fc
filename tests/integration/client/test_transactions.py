"""Transactional producer against the embedded broker: commit, rollback, and the broker's state check."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketq.client import (
    ConsumeFromWhere,
    LocalTransactionState,
    Message,
    MessageExt,
    PushConsumer,
    TransactionProducer,
)

FAST_CHECK = {"transactionTimeOut": 200, "transactionCheckInterval": 200}


class Listener:
    def __init__(self, decision: dict[str, LocalTransactionState], check: LocalTransactionState) -> None:
        self.decision = decision
        self.check = check
        self.checked: list[str] = []

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return self.decision[msg.body.decode()]

    async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        self.checked.append(msg.body.decode())
        return self.check


@pytest.mark.parametrize("cluster", [FAST_CHECK], indirect=True)
async def test_commit_rollback_and_check(cluster: Any, fast_config: Any) -> None:
    listener = Listener(
        {"commit": LocalTransactionState.COMMIT_MESSAGE, "rollback": LocalTransactionState.ROLLBACK_MESSAGE,
         "unknown": LocalTransactionState.UNKNOW},
        check=LocalTransactionState.COMMIT_MESSAGE,
    )  # fmt: skip
    got: list[str] = []
    consumer = PushConsumer("cg-tx", config=fast_config(), rebalance_interval=0.5,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    consumer.subscribe("TxTopic", "*")
    consumer.register_message_listener(lambda msgs, ctx: got.extend(m.body.decode() for m in msgs))
    producer = TransactionProducer("tx-pg", listener, config=fast_config())
    async with producer:
        results = {body: await producer.send_message_in_transaction(Message("TxTopic", body.encode()))
                   for body in ("commit", "rollback", "unknown")}  # fmt: skip
        assert {b: r.local_transaction_state for b, r in results.items()} == listener.decision
        async with consumer:
            async with asyncio.timeout(30):
                while sorted(got) != ["commit", "unknown"]:
                    await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
    assert sorted(got) == ["commit", "unknown"]  # "unknown" was committed by the check answer
    assert "unknown" in listener.checked and "rollback" not in got
