"""Requests the wire fuzzer (rocketq.testing.fuzz) found answered with a server traceback: each is the
client's mistake, answered with an error code and a remark saying what was wrong, and logged without ERROR."""

from __future__ import annotations

import logging

import orjson
import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.testing.wire import Wire


@pytest.mark.parametrize("member", ["retryQueueNums", "retryMaxTimes", "brokerId", "whichBrokerWhenConsumeSlowly"])
@pytest.mark.parametrize("value", [[1, 2], None, "not a number", {"x": 1}])
async def test_a_group_config_member_of_the_wrong_type_is_refused(
    wire: Wire, caplog: pytest.LogCaptureFixture, member: str, value: object
) -> None:
    caplog.set_level(logging.WARNING)
    body = orjson.dumps({"groupName": "gWrongType", member: value})
    resp = await wire.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark is not None and "SubscriptionGroupConfig" in resp.remark
    groups = orjson.loads((await wire.call(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body)
    assert "gWrongType" not in groups["subscriptionGroupTable"]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.parametrize(
    ("code", "body"),
    [
        (RequestCode.HEART_BEAT, {"clientID": "c1", "consumerDataSet": 11685}),
        (RequestCode.LOCK_BATCH_MQ, {"clientId": "c1", "consumerGroup": "g", "mqSet": -1.5}),
        (RequestCode.UNLOCK_BATCH_MQ, {"clientId": "c1", "consumerGroup": "g", "mqSet": "q"}),
    ],
)
async def test_a_body_set_that_is_not_an_array_is_refused(
    wire: Wire, caplog: pytest.LogCaptureFixture, code: int, body: dict[str, object]
) -> None:
    caplog.set_level(logging.WARNING)
    resp = await wire.call(code, body=orjson.dumps(body))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark is not None and "is not a JSON array" in resp.remark
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_lock_request_for_a_queue_id_past_a_java_int_is_refused_and_locking_still_works(
    wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    # the queue id used to go into the lock table, whose file then could not be written: this request and every
    # later lock or unlock failed with a traceback
    caplog.set_level(logging.WARNING)
    bad = b'{"consumerGroup":"gL","clientId":"c1","mqSet":[{"topic":"TL","brokerName":"b","queueId":%d}]}' % 2**70
    resp = await wire.call(RequestCode.LOCK_BATCH_MQ, body=bad)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "out of range for an int" in (resp.remark or "")
    good = {"consumerGroup": "gL", "clientId": "c1", "mqSet": [{"topic": "TL", "brokerName": "b", "queueId": 1}]}
    resp = await wire.call(RequestCode.LOCK_BATCH_MQ, body=orjson.dumps(good))
    assert resp.code == ResponseCode.SUCCESS
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
