"""The semantic ranges the broker checks before it stores a client's number or name (messaging/bounds.py)."""

from __future__ import annotations

from typing import Any

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.broker.messaging.bounds import (
    GROUP_INT_FIELDS,
    check_body_ints,
    commit_error,
    group_error,
    offset_error,
    queue_count_error,
    queue_id_error,
)
from rocketq.errors import ProtocolError


def test_the_default_max_topic_queue_nums() -> None:
    assert BrokerConfig().maxTopicQueueNums == 1024
    assert BrokerConfig.load(None, ["maxTopicQueueNums=4", "defaultTopicQueueNums=4"], env={}).maxTopicQueueNums == 4


@pytest.mark.parametrize(("value", "ok"), [(0, False), (1, True), (1024, True), (1025, False), (-5, False)])
def test_queue_count(value: int, ok: bool) -> None:
    error = queue_count_error("readQueueNums", value, 1024)
    assert (error is None) == ok
    if not ok:
        assert error is not None and error.startswith("readQueueNums") and "maxTopicQueueNums" in error


def test_a_retry_queue_count_may_be_zero() -> None:
    assert queue_count_error("retryQueueNums", 0, 1024, low=0) is None
    assert queue_count_error("retryQueueNums", -1, 1024, low=0) is not None


@pytest.mark.parametrize(("value", "ok"), [(-1, False), (0, True), (1023, True), (1024, False)])
def test_queue_id(value: int, ok: bool) -> None:
    assert (queue_id_error("queueId", value, 1024) is None) == ok


def test_offset_and_group() -> None:
    assert offset_error("commitOffset", 0) is None and offset_error("commitOffset", 2**63 - 1) is None
    assert "commitOffset" in (offset_error("commitOffset", -1) or "")
    assert group_error("consumerGroup", "g@x%y") is None  # the Java broker does not check the characters
    assert group_error("consumerGroup", "g" * 255) is None
    for bad in ("", "  ", "g" * 256):
        assert "consumerGroup" in (group_error("consumerGroup", bad) or ""), bad


@pytest.mark.parametrize(
    ("args", "field"),
    [(("g", "T", 0, -1), "commitOffset"), (("g", "T", 1024, 0), "queueId"), (("g", "T", -1, 0), "queueId"),
     (("g", "T@x", 0, 0), "topic"), (("", "T", 0, 0), "consumerGroup"), (("g", "T" * 128, 0, 0), "topic")],
)  # fmt: skip
def test_commit_error_names_the_field(args: tuple[str, str, int, int], field: str) -> None:
    assert field in (commit_error(1024, *args) or "")
    assert commit_error(1024, "g", "T", 1023, 0) is None


@pytest.mark.parametrize(
    ("obj", "field"),
    [({"brokerId": 2**63}, "brokerId"), ({"brokerId": -(2**63) - 1}, "brokerId"),
     ({"retryMaxTimes": 2**31}, "retryMaxTimes"), ({"retryQueueNums": "x"}, "retryQueueNums"),
     ({"retryQueueNums": [1]}, "retryQueueNums"), ({"retryQueueNums": True}, "retryQueueNums"),
     ({"whichBrokerWhenConsumeSlowly": float("inf")}, "whichBrokerWhenConsumeSlowly"),
     ({"retryMaxTimes": "1e3"}, "retryMaxTimes")],
)  # fmt: skip
def test_body_numbers_have_their_java_width(obj: dict[str, Any], field: str) -> None:
    with pytest.raises(ProtocolError, match=f"'{field}'"):
        check_body_ints(obj, GROUP_INT_FIELDS, "SubscriptionGroupConfig")


def test_body_numbers_fastjson_takes() -> None:
    check_body_ints({"brokerId": 2**63 - 1, "retryQueueNums": "3", "retryMaxTimes": 2.5, "groupName": "x"},
                    GROUP_INT_FIELDS, "SubscriptionGroupConfig")  # fmt: skip
