"""Message property views, fastjson parsing, subscriptions, and decoding of received messages."""

from __future__ import annotations

import datetime as dt
import zlib

import pytest

from rocketq.client._instance import encode_running_info, parse_reset_offset_body
from rocketq.client.message import Message, MessageExt
from rocketq.client.subscription import (
    MessageSelector,
    build_subscription_data,
    parse_consume_timestamp,
    restore_retry_topic,
)
from rocketq.common.hashing import java_string_hash
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.message import MessageRecord


def test_message_properties_like_java() -> None:
    m = Message("T", "body", tags="TagA", keys=["k1", "k2"], delay_level=3, deliver_time_ms=1234)
    assert m.body == b"body"
    assert m.properties == {"TAGS": "TagA", "KEYS": "k1 k2", "DELAY": "3", "TIMER_DELIVER_MS": "1234", "WAIT": "true"}
    assert m.keys == ["k1", "k2"] and m.tags == "TagA" and m.delay_level == 3 and m.deliver_time_ms == 1234
    m.tags = None
    m.delay_level = 0
    assert "TAGS" not in m.properties and "DELAY" not in m.properties
    m.put_user_property("color", "red")
    with pytest.raises(ValueError):
        m.put_user_property("UNIQ_KEY", "x")
    assert Message("T", b"x", wait_store_msg_ok=False).properties["WAIT"] == "false"


def test_message_ext_from_record() -> None:
    body = b"q" * 5000
    rec = MessageRecord(
        topic="%RETRY%g", body=zlib.compress(body), queue_id=2, queue_offset=9, commit_log_offset=4096,
        sys_flag=0x301, store_host=("10.0.0.1", 10911), reconsume_times=1,
        properties={"UNIQ_KEY": "ABC", "RETRY_TOPIC": "T", "TAGS": "A"},
    )  # fmt: skip
    m = MessageExt.from_record(rec, "broker-a")
    assert m.body == body
    assert m.msg_id == "ABC"
    assert m.offset_msg_id == "0A00000100002A9F0000000000001000"
    assert m.message_queue == MessageQueue("%RETRY%g", "broker-a", 2)
    restore_retry_topic([m], "%RETRY%g")
    assert m.topic == "T"
    restore_retry_topic([m], "%RETRY%g")  # idempotent
    assert m.topic == "T"


def test_reset_offset_bodies_both_dialects() -> None:
    java = b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:12}}'
    forc = b'{"offsetTable":[{"brokerName":"b","offset":12,"queueId":0,"topic":"T"}]}'
    assert parse_reset_offset_body(java) == parse_reset_offset_body(forc) == {MessageQueue("T", "b", 0): 12}


def test_running_info_uses_object_keys() -> None:
    body = encode_running_info({"properties": {"a": "b"}, "mqTable": {MessageQueue("T", "b", 0): {"x": 1}}})
    parsed = fastjson.loads(body)
    assert parsed["properties"] == {"a": "b"}
    assert [fastjson.mq_from_key(k) for k in parsed["mqTable"]] == [MessageQueue("T", "b", 0)]


def test_subscription_data_like_filter_api() -> None:
    sub = build_subscription_data("T", " TagA ||TagB|| ||TagA", sub_version=5)
    assert sub.tags_set == ["TagA", "TagB"]
    assert sub.code_set == [java_string_hash("TagA"), java_string_hash("TagB")]
    assert sub.sub_string == " TagA ||TagB|| ||TagA" and sub.sub_version == 5 and sub.expression_type == "TAG"
    assert build_subscription_data("T", "").sub_string == "*"
    assert build_subscription_data("T", None).tags_set == []
    sql = build_subscription_data("T", MessageSelector.by_sql("a > 1"))
    assert (sql.expression_type, sql.sub_string, sql.tags_set) == ("SQL92", "a > 1", [])
    with pytest.raises(ValueError):
        MessageSelector.by_sql(" ")


def test_consume_timestamp_formats() -> None:
    ms = int(dt.datetime(2024, 1, 2, 3, 4, 5).timestamp() * 1000)
    assert parse_consume_timestamp("20240102030405") == ms
    assert parse_consume_timestamp(ms) == ms
    assert parse_consume_timestamp(ms / 1000) == ms
    assert parse_consume_timestamp(dt.datetime(2024, 1, 2, 3, 4, 5)) == ms
