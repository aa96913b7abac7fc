"""JSON bodies whose numbers end up stored hold them to their Java field's width (docs/reliability.md)."""

from __future__ import annotations

from typing import Any

import pytest

from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import LockBatchBody, MessageQueue, TopicConfig

TOPIC = {"topicName": "T", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6, "topicSysFlag": 0}


@pytest.mark.parametrize("key", ["readQueueNums", "writeQueueNums", "perm", "topicSysFlag"])
@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**70])
def test_a_topic_config_holds_its_ints_to_32_bits(key: str, value: int) -> None:
    with pytest.raises(ProtocolError, match=key):
        TopicConfig.from_json({**TOPIC, key: value})


def test_a_topic_config_at_the_ends_of_an_int() -> None:
    tc = TopicConfig.from_json({**TOPIC, "readQueueNums": 2**31 - 1, "topicSysFlag": -(2**31)})
    assert (tc.read_queue_nums, tc.topic_sys_flag) == (2**31 - 1, -(2**31))


@pytest.mark.parametrize("queue_id", [2**31, -(2**31) - 1, 2**70])
def test_a_message_queue_id_is_an_int(queue_id: Any) -> None:
    with pytest.raises(ProtocolError, match="queueId"):
        MessageQueue.from_json({"topic": "T", "brokerName": "b", "queueId": queue_id})
    body = b'{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":%d}]}' % queue_id
    with pytest.raises(ProtocolError, match="queueId"):
        LockBatchBody.decode(body)


def test_an_error_keeps_only_the_start_of_a_huge_body() -> None:
    with pytest.raises(ProtocolError) as info:
        TopicConfig.from_json({**TOPIC, "readQueueNums": "x", "topicName": "T" * 100_000})
    assert len(str(info.value)) < 300
