"""The gRPC adapters' pure parts: message conversion, queue hashing, status codes, back-off policies."""

from __future__ import annotations

import gzip
import hashlib
import zlib

import pytest

from rocketq.broker.managers.subscription_manager import RetryPolicy, SubscriptionGroupConfig
from rocketq.codes import ResponseCode
from rocketq.grpc.convert import SendLimits, stored_type, to_message, to_properties
from rocketq.grpc.names import group_of, topic_of, wrap
from rocketq.grpc.producer import consistent_hash, group_queue
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.grpc.status import Code, GrpcRefusal, code_of_remoting, combined
from rocketq.grpc.telemetry import backoff_of
from rocketq.protocol.message import SYSFLAG_COMPRESSED, SYSFLAG_TX_PREPARED, MessageRecord

NOW = 1_700_000_000_000


def msg(**system: object) -> pb.Message:
    sp = pb.SystemProperties(message_id="01ABC", body_encoding=pb.IDENTITY)
    for key, value in system.items():
        if key == "delivery_timestamp":
            sp.delivery_timestamp.FromMilliseconds(int(value))  # type: ignore[call-overload]
        elif key == "keys":
            sp.keys.extend(value)  # type: ignore[call-overload]
        else:
            setattr(sp, key, value)
    return pb.Message(topic=pb.Resource(name="T"), system_properties=sp, body=b"body")


# Guava 32.0.1's Hashing.consistentHash, computed with jshell: (input, buckets) -> bucket
GUAVA = [(0, 16, 0), (1, 16, 6), (-1, 16, 10), (123456789, 16, 7), (-(2**63), 16, 12)]
# (message group, buckets) -> bucket, i.e. consistentHash(group.hashCode(), buckets)
GUAVA_GROUPS = [("order-42", 4, 3), ("order-42", 16, 10), ("order-42", 100, 25), ("a", 100, 29),
                ("group-with-a-long-name-0123456789", 16, 9), ("Ω", 8, 4), ("", 100, 0)]  # fmt: skip


@pytest.mark.parametrize(("value", "buckets", "bucket"), GUAVA)
def test_consistent_hash_is_guavas(value: int, buckets: int, bucket: int) -> None:
    assert consistent_hash(value, buckets) == bucket


@pytest.mark.parametrize(("group", "buckets", "bucket"), GUAVA_GROUPS)
def test_message_group_queue_is_the_proxys(group: str, buckets: int, bucket: int) -> None:
    assert group_queue(group, buckets) == bucket


def test_properties_of_each_message_kind() -> None:
    limits = SendLimits()
    normal = to_properties(msg(tag="A", keys=["k1", "k2"]), "T", "1.2.3.4:5", limits, NOW)
    assert normal.properties["TAGS"] == "A" and normal.properties["KEYS"] == "k1 k2"
    assert normal.properties["UNIQ_KEY"] == "01ABC" and normal.properties["PGROUP"] == "T"
    assert normal.properties["__BORNHOST"] == "1.2.3.4:5" and normal.sys_flag == 0 and normal.message_type == pb.NORMAL
    fifo = to_properties(msg(message_group="g"), "T", "", limits, NOW)
    assert fifo.properties["__SHARDINGKEY"] == "g" and fifo.message_type == pb.FIFO
    delay = to_properties(msg(delivery_timestamp=NOW + 5000), "T", "", limits, NOW)
    assert delay.properties["TIMER_DELIVER_MS"] == str(NOW + 5000) and delay.message_type == pb.DELAY
    python_512 = msg()  # Python client 5.1.2 puts the user's millisecond time into ``seconds``
    python_512.system_properties.delivery_timestamp.seconds = NOW + 5000
    assert to_properties(python_512, "T", "", limits, NOW).properties["TIMER_DELIVER_MS"] == str(NOW + 5000)
    tx = msg(message_type=pb.TRANSACTION)
    tx.system_properties.orphaned_transaction_recovery_duration.FromSeconds(30)
    conv = to_properties(tx, "T", "", limits, NOW)
    assert conv.properties["TRAN_MSG"] == "true" and conv.properties["CHECK_IMMUNITY_TIME_IN_SECONDS"] == "30"
    assert conv.sys_flag & SYSFLAG_TX_PREPARED
    gz = to_properties(msg(body_encoding=pb.GZIP), "T", "", limits, NOW)
    assert gz.sys_flag & SYSFLAG_COMPRESSED


@pytest.mark.parametrize(
    ("system", "code"),
    [
        ({"tag": " "}, Code.ILLEGAL_MESSAGE_TAG),
        ({"tag": "a\x01"}, Code.ILLEGAL_MESSAGE_TAG),
        ({"keys": [" "]}, Code.ILLEGAL_MESSAGE_KEY),
        ({"message_id": ""}, Code.ILLEGAL_MESSAGE_ID),
        ({"message_group": "x" * 64}, Code.ILLEGAL_MESSAGE_GROUP),
        ({"delivery_timestamp": NOW + 86_400_001}, Code.ILLEGAL_DELIVERY_TIME),
    ],
)
def test_refusals_carry_the_proxys_codes(system: dict[str, object], code: int) -> None:
    with pytest.raises(GrpcRefusal) as info:
        to_properties(msg(**system), "T", "", SendLimits(), NOW)
    assert info.value.code == code


def test_property_limits() -> None:
    m = msg()
    for i in range(129):
        m.user_properties[f"k{i}"] = "v"
    with pytest.raises(GrpcRefusal) as info:
        to_properties(m, "T", "", SendLimits(), NOW)
    assert info.value.code == Code.MESSAGE_PROPERTIES_TOO_LARGE
    m = msg()
    m.user_properties["k"] = "v" * (16 * 1024)
    with pytest.raises(GrpcRefusal) as info:
        to_properties(m, "T", "", SendLimits(), NOW)
    assert info.value.code == Code.MESSAGE_PROPERTIES_TOO_LARGE


def test_delivered_message() -> None:
    rec = MessageRecord(topic="%RETRY%g_T", body=b"payload", queue_id=1, queue_offset=7, born_timestamp=NOW,
                        born_host=("10.0.0.1", 4000), store_timestamp=NOW + 1, store_host=("10.0.0.2", 10911),
                        reconsume_times=2, properties={"UNIQ_KEY": "01ID", "TAGS": "A", "KEYS": "a b", "color": "red",
                                                       "PGROUP": "T", "TIMER_DELIVER_MS": str(NOW + 9),
                                                       "__SHARDINGKEY": "g1", "CLUSTER": "c"})  # fmt: skip
    m = to_message(rec, "ns%T", namespace="ns", receipt_handle="h")
    sp = m.system_properties
    assert (m.topic.resource_namespace, m.topic.name) == ("ns", "T")
    assert dict(m.user_properties) == {"color": "red"}
    assert sp.body_digest.checksum == hashlib.md5(b"payload").hexdigest().upper()
    assert sp.delivery_attempt == 3 and sp.message_id == "01ID" and sp.tag == "A" and list(sp.keys) == ["a", "b"]
    assert sp.message_type == pb.DELAY and sp.delivery_timestamp.ToMilliseconds() == NOW + 9
    assert sp.message_group == "g1" and sp.born_host == "10.0.0.1:4000" and sp.store_host == "10.0.0.2:10911"
    assert sp.queue_id == 1 and sp.queue_offset == 7 and sp.receipt_handle == "h"
    assert stored_type({"TRAN_MSG": "true"}) == pb.TRANSACTION and stored_type({"__SHARDINGKEY": "x"}) == pb.FIFO
    assert stored_type({}) == pb.NORMAL


def test_names() -> None:
    assert wrap(pb.Resource(resource_namespace="ns", name="T")) == "ns%T"
    assert topic_of(pb.Resource(name="T")) == "T"
    for bad in ("", "a b", "rmq_sys_x", "SCHEDULE_TOPIC_XXXX", "x" * 128):
        with pytest.raises(GrpcRefusal) as info:
            topic_of(pb.Resource(name=bad))
        assert info.value.code == Code.ILLEGAL_TOPIC
    with pytest.raises(GrpcRefusal) as info:
        group_of(pb.Resource(name="CID_RMQ_SYS_TRANS"))
    assert info.value.code == Code.ILLEGAL_CONSUMER_GROUP


def test_codes() -> None:
    assert code_of_remoting(ResponseCode.SUCCESS) == Code.OK
    assert code_of_remoting(ResponseCode.SYSTEM_BUSY) == Code.TOO_MANY_REQUESTS
    assert code_of_remoting(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST) == Code.CONSUMER_GROUP_NOT_FOUND
    assert code_of_remoting(12345) == Code.INTERNAL_SERVER_ERROR
    assert combined([Code.OK, Code.OK]).code == Code.OK
    assert combined([Code.OK, Code.INVALID_RECEIPT_HANDLE]).code == Code.MULTIPLE_RESULTS


def test_backoff_of_a_group() -> None:
    default = backoff_of(SubscriptionGroupConfig("g"))
    assert default.max_attempts == 17 and len(default.customized_backoff.next) == 18
    exp = backoff_of(SubscriptionGroupConfig("g", retry_max_times=3, group_retry_policy=RetryPolicy(
        "EXPONENTIAL", initial_ms=2000, max_ms=60_000, multiplier=3)))  # fmt: skip
    assert exp.max_attempts == 4
    assert exp.exponential_backoff.initial.ToMilliseconds() == 2000
    assert exp.exponential_backoff.max.ToMilliseconds() == 60_000 and exp.exponential_backoff.multiplier == 3


def test_compressed_bodies_are_delivered_inflated() -> None:
    for packed in (zlib.compress(b"plain text" * 10), gzip.compress(b"plain text" * 10)):
        m = to_message(MessageRecord(topic="T", body=packed, sys_flag=SYSFLAG_COMPRESSED), "T")
        assert m.body == b"plain text" * 10 and m.system_properties.body_encoding == pb.IDENTITY
        assert m.system_properties.body_digest.checksum == hashlib.md5(m.body).hexdigest().upper()
    odd = to_message(MessageRecord(topic="T", body=b"\x04\x22M\x18lz4", sys_flag=SYSFLAG_COMPRESSED), "T")
    assert odd.body == b"\x04\x22M\x18lz4" and odd.system_properties.body_encoding == pb.GZIP
