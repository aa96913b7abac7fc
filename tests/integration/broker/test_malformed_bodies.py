"""Malformed request bodies at a real broker: SYSTEM_ERROR naming what is wrong, one warning line, no
traceback — and the broker goes on serving (these bodies made the decoders raise TypeError / ValueError)."""

from __future__ import annotations

import logging

import pytest

from rocketq.codes import RequestCode, ResponseCode
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire

CASES = [
    (RequestCode.HEART_BEAT, b'{"clientID":"c","producerDataSet":1}', "producerDataSet is not a JSON array"),
    (RequestCode.HEART_BEAT, b'{"clientID":"c","consumerDataSet":true}', "consumerDataSet is not a JSON array"),
    (RequestCode.HEART_BEAT, b'{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":5}]}',
     "subscriptionDataSet is not a JSON array"),
    (RequestCode.LOCK_BATCH_MQ, b'{"consumerGroup":"g","clientId":"c","mqSet":1}', "mqSet is not a JSON array"),
    (RequestCode.UNLOCK_BATCH_MQ, b'{"consumerGroup":"g","clientId":"c","mqSet":2.5}', "mqSet is not a JSON array"),
    (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, b'{"groupName":"g","retryQueueNums":"x"}',
     "SubscriptionGroupConfig field 'retryQueueNums' is not a number"),
    (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, b'{"groupName":"g","retryMaxTimes":[]}',
     "SubscriptionGroupConfig field 'retryMaxTimes' is not a number"),
]  # fmt: skip


@pytest.mark.parametrize(("code", "body", "reason"), CASES)
async def test_a_malformed_body_is_refused_in_one_line(
    wire: Wire, cluster: EmbeddedCluster, caplog: pytest.LogCaptureFixture, code: int, body: bytes, reason: str
) -> None:
    caplog.set_level(logging.WARNING)
    resp = await wire.call(code, {}, body=body)
    assert resp.code == ResponseCode.SYSTEM_ERROR and reason in (resp.remark or ""), resp.remark
    assert [r for r in caplog.records if r.exc_info] == []  # no traceback anywhere
    lines = [r.getMessage() for r in caplog.records if "request.malformed" in r.getMessage()]
    assert len(lines) == 1 and f"code={code}" in lines[0] and reason in lines[0]
    assert "g" not in cluster.broker.groups.table or code != RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
    assert (await wire.send("TAfterMalformed", b"still served")).code == ResponseCode.SUCCESS
