"""The shared topic names and name rules (Java TopicValidator / MixAll), and the sides that read them."""

from __future__ import annotations

import pytest

import rocketq.broker.managers.topic_manager as topic_manager
import rocketq.protocol.topics as topics
from rocketq.client._validators import check_group, check_topic
from rocketq.client.errors import InvalidMessageError
from rocketq.errors import ClientError
from rocketq.protocol.topics import group_name_error, topic_name_error


def test_values_are_javas() -> None:
    assert topics.AUTO_CREATE_TOPIC == "TBW102"
    assert topics.SCHEDULE_TOPIC == "SCHEDULE_TOPIC_XXXX"
    assert topics.TRANS_HALF_TOPIC == "RMQ_SYS_TRANS_HALF_TOPIC"
    assert topics.TRANS_OP_HALF_TOPIC == "RMQ_SYS_TRANS_OP_HALF_TOPIC"
    assert topics.TRANS_CHECK_MAX_TIME_TOPIC == "TRANS_CHECK_MAX_TIME_TOPIC"
    assert topics.retry_topic("g") == "%RETRY%g"
    assert topics.dlq_topic("g") == "%DLQ%g"
    assert topics.reply_topic("DefaultCluster") == "DefaultCluster_REPLY_TOPIC"
    java_not_allowed = {
        "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT",
    }  # fmt: skip
    assert java_not_allowed == topics.NOT_ALLOWED_SEND_TOPICS


def test_exports() -> None:
    for name in topics.__all__:
        assert hasattr(topics, name), name


def test_broker_reexports_the_same_objects() -> None:
    for name in topic_manager.__all__:
        if hasattr(topics, name):
            assert getattr(topic_manager, name) is getattr(topics, name), name
    assert topic_manager.MAX_TOPIC_LENGTH == topics.TOPIC_MAX_LENGTH == 127


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("Good_topic-1|%", None),
        ("", "the specified topic is blank"),
        ("a" * 127, None),
        ("a" * 128, "the specified topic is longer than topic max length 127"),
        ("bad topic", "the specified topic [bad topic] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
        # the broker's rule: spaces only are not "blank" (the client says so before asking this)
        ("  ", "the specified topic [  ] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
    ],
)
def test_topic_name_error(name: str, error: str | None) -> None:
    assert topic_name_error(name) == error


def test_client_topic_check_calls_spaces_blank() -> None:
    with pytest.raises(InvalidMessageError) as info:
        check_topic("  ")
    assert str(info.value) == "the specified topic is blank"
    with pytest.raises(InvalidMessageError, match="illegal characters"):
        check_topic("a b")


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("group-1_x|%", None),
        ("", "the specified group is blank"),
        (" ", "the specified group is blank"),
        ("g" * 255, None),
        ("g" * 256, "the specified group is longer than group max length 255"),
        ("a.b", "the specified group [a.b] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
    ],
)
def test_group_name_error_and_client_check(name: str, error: str | None) -> None:
    assert group_name_error(name) == error
    if error is None:
        check_group(name)
    else:
        with pytest.raises(ClientError) as info:
            check_group(name)
        assert str(info.value) == error
