"""Request bodies whose members have the wrong JSON type are the client's mistake: a ProtocolError (which the
gate answers with SYSTEM_ERROR and its reason), never a TypeError and its traceback (found by the wire fuzzer)."""

from __future__ import annotations

import orjson
import pytest

from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import HeartbeatData, LockBatchBody


@pytest.mark.parametrize(
    "doc",
    [
        {"clientID": "c", "consumerDataSet": 11685},
        {"clientID": "c", "producerDataSet": "FzGroup"},
        {"clientID": "c", "consumerDataSet": [{"groupName": "g", "subscriptionDataSet": {"topic": "T"}}]},
    ],
)
def test_heartbeat_with_a_set_of_the_wrong_type_is_a_protocol_error(doc: dict[str, object]) -> None:
    with pytest.raises(ProtocolError, match="is not a JSON array"):
        HeartbeatData.decode(orjson.dumps(doc))


def test_lock_batch_with_mq_set_of_the_wrong_type_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="mqSet is not a JSON array"):
        LockBatchBody.decode(orjson.dumps({"consumerGroup": "g", "clientId": "c", "mqSet": 7}))


def test_absent_or_null_sets_are_still_empty() -> None:
    hb = HeartbeatData.decode(orjson.dumps({"clientID": "c", "consumerDataSet": None}))
    assert hb.consumers == [] and hb.producer_groups == []


@pytest.mark.parametrize("queue_id", [2**31, -(2**31) - 1, 2**70])
def test_a_lock_batch_queue_id_outside_a_java_int_is_a_protocol_error(queue_id: int) -> None:
    # it used to be kept in the lock table, whose file then could not be written (and the request failed)
    mq = {"topic": "T", "brokerName": "b", "queueId": queue_id}
    body = orjson.dumps({"consumerGroup": "g", "clientId": "c", "mqSet": [mq]}) if queue_id < 2**64 else (
        b'{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":%d}]}' % queue_id
    )
    with pytest.raises(ProtocolError, match="out of range for an int"):
        LockBatchBody.decode(body)
