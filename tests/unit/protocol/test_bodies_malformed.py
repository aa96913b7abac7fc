"""Body decoders refuse a body of the wrong shape with ProtocolError only (the gate's "client mistake"), and keep
reading an absent, null or empty array as no elements."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import HeartbeatData, LockBatchBody, decode_consumer_id_list, decode_lock_ok

Decoder = Callable[[bytes], Any]


@pytest.mark.parametrize(
    ("decode", "body"),
    [
        (HeartbeatData.decode, b'{"clientID":"c","producerDataSet":1}'),
        (HeartbeatData.decode, b'{"clientID":"c","producerDataSet":true}'),
        (HeartbeatData.decode, b'{"clientID":"c","consumerDataSet":3}'),
        (HeartbeatData.decode, b'{"clientID":"c","consumerDataSet":{"groupName":"g"}}'),
        (HeartbeatData.decode, b'{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":9}]}'),
        (LockBatchBody.decode, b'{"mqSet":1}'),
        (LockBatchBody.decode, b'{"mqSet":"queue"}'),
        (decode_lock_ok, b'{"lockOKMQSet":1}'),
        (decode_consumer_id_list, b'{"consumerIdList":5}'),
    ],
)
def test_a_field_that_is_not_an_array_is_a_protocol_error(decode: Decoder, body: bytes) -> None:
    with pytest.raises(ProtocolError, match="is not a JSON array"):
        decode(body)


@pytest.mark.parametrize("empty", [b"null", b"[]", b'""', b"0", b"false"])
def test_an_empty_array_field_reads_as_none(empty: bytes) -> None:
    hb = HeartbeatData.decode(b'{"clientID":"c","producerDataSet":%s,"consumerDataSet":%s}' % (empty, empty))
    assert (hb.client_id, hb.producer_groups, hb.consumers) == ("c", [], [])
    assert LockBatchBody.decode(b'{"consumerGroup":"g","mqSet":%s}' % empty).mq_set == []
