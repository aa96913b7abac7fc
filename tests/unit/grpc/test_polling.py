"""ReceiveMessage's long-polling time (Java's ReceiveMessageActivity rule) and receipt-handle parsing."""

from __future__ import annotations

from typing import Any, cast

import pytest

from rocketq.broker.pop.types import ReceiptHandle
from rocketq.grpc.consumer import ConsumerService, handle_text, parse_handle
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.status import Code, GrpcRefusal

NONE = cast(Any, None)


def req(poll_ms: int | None) -> svc.ReceiveMessageRequest:
    r = svc.ReceiveMessageRequest()
    if poll_ms is not None:
        r.long_polling_timeout.FromMilliseconds(poll_ms)
    return r


@pytest.mark.parametrize(
    ("poll", "left", "expected"),
    [
        (5_000, 8_000, 5_000),  # simple consumer: await 5 s, deadline 8 s
        (1_000, 8_000, 5_000),  # below the floor
        (60_000, 90_000, 20_000),  # above the ceiling
        (None, 23_000, 20_000),  # no time given: deadline − request timeout / 2, clamped
        (None, 12_000, 10_500),
        (20_000, 12_000, 11_900),  # cut to the deadline, answered 100 ms before it
    ],
)
def test_polling_time(poll: int | None, left: int, expected: int) -> None:
    consumer = ConsumerService(NONE, NONE, NONE)
    assert consumer.polling_ms(req(poll), left, 3_000, "5.1.2") == expected


def test_too_little_time_left() -> None:
    consumer = ConsumerService(NONE, NONE, NONE)
    with pytest.raises(GrpcRefusal) as info:
        consumer.polling_ms(req(5_000), 3_000, 3_000, "5.1.2")
    assert info.value.code == Code.ILLEGAL_POLLING_TIME
    with pytest.raises(GrpcRefusal) as info:
        consumer.polling_ms(req(5_000), 3_000, 3_000, "5.0.2")
    assert info.value.code == Code.BAD_REQUEST


def test_receipt_handles() -> None:
    handle = ReceiptHandle(10, 1_700_000_000_000, 30_000, 3, False, "broker-a", 2, 11)
    text = handle_text(handle, 123456)
    assert text == "10 1700000000000 30000 3 0 broker-a 2 11 123456"
    assert parse_handle(text) == (handle, 123456)
    assert parse_handle(handle.text()) == (handle, None)
    with pytest.raises(GrpcRefusal) as info:
        parse_handle("1 2 3")
    assert info.value.code == Code.INVALID_RECEIPT_HANDLE
