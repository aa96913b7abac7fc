"""The producer's send request and send result, built on the hot path, against the general builders.

``build_send_request`` writes the V2 extFields directly; the oracle here goes through ``SendMessageRequestHeader``
and ``MQClientAPI.send_request`` (``send_header_to_v2``), the typed-header path the client used before, and the
two must give the same frame byte for byte. ``process_send_response`` reads the three usual response fields
directly and falls back to ``SendMessageResponseHeader.from_ext``.
"""

from __future__ import annotations

import dataclasses
import types
import zlib
from typing import Any

import pytest

from rocketq.client import Message, Producer, SendResult, SendStatus
from rocketq.client._api import MQClientAPI
from rocketq.client._send_request import COMPRESSION_ZLIB_FLAG, MessageBatch, SendSettings, build_send_request
from rocketq.client._uniq_id import UniqIdGenerator
from rocketq.client._util import now_ms
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.command import FLAG_RESPONSE, RemotingCommand, encode
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.protocol.message import SYSFLAG_COMPRESSED, SYSFLAG_TX_PREPARED

_API = MQClientAPI(None, [])  # type: ignore[arg-type]  # never sends: only builds requests
_ID_GEN = UniqIdGenerator("10.0.0.7")


def _producer(**kw: Any) -> Producer:
    p = Producer("pg", **kw)
    p._instance = types.SimpleNamespace(api=_API)  # type: ignore[assignment]
    p._running = True
    p._id_gen = _ID_GEN
    return p


def _fast(msg: Message, mq: MessageQueue, p: SendSettings) -> tuple[RemotingCommand, str]:
    return build_send_request(msg, mq, p, _ID_GEN, _API.language)


def _reference(msg: Message, mq: MessageQueue, p: SendSettings) -> tuple[RemotingCommand, str]:
    """The oracle: the request through the typed header (Java ``sendKernelImpl`` step by step)."""
    is_batch = isinstance(msg, MessageBatch)
    if not is_batch and "UNIQ_KEY" not in msg.properties:
        msg.properties["UNIQ_KEY"] = _ID_GEN.create()
    body = msg.body
    sys_flag = 0
    if not is_batch and len(body) >= p.compress_msg_body_over_howmuch:
        body = zlib.compress(body, p.compress_level)
        sys_flag |= SYSFLAG_COMPRESSED | COMPRESSION_ZLIB_FLAG
    if msg.properties.get("TRAN_MSG", "").lower() == "true":
        sys_flag |= SYSFLAG_TX_PREPARED
    fields: dict[str, Any] = {
        "producer_group": p.group,
        "topic": msg.topic,
        "default_topic": p.create_topic_key,
        "default_topic_queue_nums": p.default_topic_queue_nums,
        "queue_id": mq.queue_id,
        "sys_flag": sys_flag,
        "born_timestamp": now_ms(),
        "flag": msg.flag,
        "properties": "\x02".join(f"{k}\x01{v}" for k, v in msg.properties.items()),
        "reconsume_times": 0,
        "unit_mode": False,
        "batch": is_batch,
    }
    if msg.topic.startswith("%RETRY%"):
        reconsume = msg.properties.pop("RECONSUME_TIME", None)
        if reconsume is not None:
            fields["reconsume_times"] = int(reconsume)
        max_reconsume = msg.properties.pop("MAX_RECONSUME_TIMES", None)
        if max_reconsume is not None:
            fields["max_reconsume_times"] = int(max_reconsume)
    cmd = _API.send_request(SendMessageRequestHeader(**fields), mq.broker_name, body)
    if isinstance(msg, MessageBatch):
        return cmd, ",".join([m.uniq_key or "" for m in msg.messages])
    return cmd, msg.uniq_key or ""


def _same_request(a: RemotingCommand, b: RemotingCommand) -> None:
    ga, gb = dict(a.ext_fields), dict(b.ext_fields)
    assert abs(int(ga.pop("g")) - int(gb.pop("g"))) < 5_000  # born timestamp: read separately
    assert list(ga.items()) == list(gb.items())  # same keys, values and order
    assert (a.code, a.flag, a.language, a.version, a.remark, bytes(a.body), a.serialize_type) == (
        b.code, b.flag, b.language, b.version, b.remark, bytes(b.body), b.serialize_type,
    )  # fmt: skip
    a.ext_fields["g"] = b.ext_fields["g"] = "0"
    assert encode(a) == encode(b)


def _messages() -> list[Message]:
    tx = Message("T", b"half")
    tx.properties["TRAN_MSG"] = "TRUE"
    preset = Message("T", b"x", keys="k")
    preset.properties["UNIQ_KEY"] = "PRESET"
    return [
        Message("T", b"hello", tags="TagA", keys="k1 k2", flag=7),
        Message("T", b"y" * 5000),  # compressed
        Message("T", b"y" * 5000, wait_store_msg_ok=False, properties={"color": "red"}),
        tx,
        preset,
        Message("T%x", b"z", delay_level=3),
        # retry topics: the reconsume counts go into the header (and leave the properties after their text)
        Message("%RETRY%cg", b"again", properties={"RECONSUME_TIME": "3", "MAX_RECONSUME_TIMES": "16"}),
        Message("%RETRY%cg", b"again", properties={"RECONSUME_TIME": "07"}),
        Message("%RETRY%cg", b"again", properties={"MAX_RECONSUME_TIMES": "2", "ORIGIN_MESSAGE_ID": "X"}),
        Message("%RETRY%cg", b"y" * 5000),
    ]


@pytest.mark.parametrize("index", range(len(_messages())))
def test_fast_request_matches_the_header_path(index: int) -> None:
    p = _producer(default_topic_queue_nums=8, create_topic_key="MyDefault")
    mq = MessageQueue("T", "broker-a", 3)
    fast_msg, ref_msg = _messages()[index], _messages()[index]
    fast, fast_id = _fast(fast_msg, mq, p)
    if "UNIQ_KEY" not in ref_msg.properties:  # the same id on both sides
        ref_msg.properties["UNIQ_KEY"] = fast_msg.properties["UNIQ_KEY"]
    ref, ref_id = _reference(ref_msg, mq, p)
    _same_request(fast, ref)
    assert fast_id == ref_id == fast_msg.properties["UNIQ_KEY"]
    assert fast_msg.properties == ref_msg.properties


def test_fast_request_of_a_batch_matches_the_header_path() -> None:
    p = _producer()
    mq = MessageQueue("T", "broker-b", 0)
    msgs = [Message("T", b"a"), Message("T", b"b")]
    for i, m in enumerate(msgs):
        m.properties["UNIQ_KEY"] = f"ID{i}"
    batch = MessageBatch("T", msgs, b"encoded-batch-body" * 400)
    batch.properties = {"WAIT": "true"}
    fast, fast_id = _fast(batch, mq, p)
    ref, ref_id = _reference(batch, mq, p)
    _same_request(fast, ref)
    assert fast_id == ref_id == "ID0,ID1"
    assert fast.ext_fields["m"] == "true" and fast.code == 320


def test_retry_topic_carries_reconsume_counts() -> None:
    p = _producer()
    m = Message("%RETRY%cg", b"again", properties={"RECONSUME_TIME": "3", "MAX_RECONSUME_TIMES": "16"})
    cmd, _ = _fast(m, MessageQueue("%RETRY%cg", "broker-a", 0), p)
    assert cmd.ext_fields["j"] == "3" and cmd.ext_fields["l"] == "16"
    assert "RECONSUME_TIME" not in m.properties and "MAX_RECONSUME_TIMES" not in m.properties
    assert "RECONSUME_TIME\x013" in cmd.ext_fields["i"]  # the text was written before they left


@pytest.mark.parametrize("props", [{"RECONSUME_TIME": "x", "MAX_RECONSUME_TIMES": "2"}, {"MAX_RECONSUME_TIMES": "y"}])
def test_a_bad_reconsume_count_fails_like_the_header_path(props: dict[str, str]) -> None:
    p = _producer()
    mq = MessageQueue("%RETRY%cg", "broker-a", 0)
    fast_msg, ref_msg = Message("%RETRY%cg", b"x", properties=props), Message("%RETRY%cg", b"x", properties=props)
    with pytest.raises(ValueError):
        _fast(fast_msg, mq, p)
    ref_msg.properties["UNIQ_KEY"] = fast_msg.properties["UNIQ_KEY"]
    with pytest.raises(ValueError):
        _reference(ref_msg, mq, p)
    assert fast_msg.properties == ref_msg.properties  # left as the header path leaves them


def _response(ext: dict[str, str], code: int = ResponseCode.SUCCESS) -> RemotingCommand:
    return RemotingCommand(code, 1, FLAG_RESPONSE, "JAVA", 409, None, ext, b"")


_MQ = MessageQueue("T", "broker-a", 3)


def _reference_result(ext: dict[str, str], status: SendStatus = SendStatus.SEND_OK) -> SendResult:
    return SendResult(
        status=status,
        msg_id="UID",
        offset_msg_id=ext["msgId"],
        message_queue=MessageQueue("T", "broker-a", int(ext["queueId"])),
        queue_offset=int(ext["queueOffset"]),
        transaction_id=ext.get("transactionId"),
        region_id=ext.get("MSG_REGION") or "DefaultRegion",
        trace_on=ext.get("TRACE_ON") != "false",
    )


@pytest.mark.parametrize(
    "ext",
    [
        {"msgId": "OFF", "queueId": "3", "queueOffset": "12", "MSG_REGION": "R1", "TRACE_ON": "true"},
        {"msgId": "OFF", "queueId": "1", "queueOffset": "0"},  # another queue than asked, no region
        {"msgId": "", "queueId": "3", "queueOffset": "5", "transactionId": "TX", "TRACE_ON": "false"},
        {"msgId": "OFF", "queueId": "3", "queueOffset": "7", "MSG_REGION": ""},
    ],
)
def test_send_result_from_a_response(ext: dict[str, str]) -> None:
    got = MQClientAPI.process_send_response(_response(ext), "addr", _MQ, "UID")
    want = _reference_result(ext)
    assert got == want and repr(got) == repr(want) and hash(got.message_queue) == hash(want.message_queue)
    assert dataclasses.replace(got, msg_id="x").msg_id == "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.msg_id = "y"  # type: ignore[misc]


def test_send_result_status_of_a_flush_timeout() -> None:
    ext = {"msgId": "OFF", "queueId": "3", "queueOffset": "1"}
    got = MQClientAPI.process_send_response(_response(ext, ResponseCode.FLUSH_DISK_TIMEOUT), "addr", _MQ, "UID")
    assert got == _reference_result(ext, SendStatus.FLUSH_DISK_TIMEOUT)


@pytest.mark.parametrize(
    "ext",
    [
        {"queueId": "3", "queueOffset": "1"},
        {"msgId": "OFF", "queueId": "", "queueOffset": "1"},
        {"msgId": "OFF", "queueId": "3"},
        {"msgId": "OFF", "queueId": "x", "queueOffset": "1"},
    ],
)
def test_bad_send_response_header_is_a_system_error(ext: dict[str, str]) -> None:
    with pytest.raises(BrokerError) as info:
        MQClientAPI.process_send_response(_response(ext), "addr", _MQ, "UID")
    assert info.value.code == ResponseCode.SYSTEM_ERROR
    assert "bad send response header" in str(info.value)


def test_a_float_queue_offset_is_read_like_the_header_codec() -> None:
    ext = {"msgId": "OFF", "queueId": "3", "queueOffset": "12.0"}  # int() refuses it; the codec's _int decides
    from rocketq.protocol.headers import SendMessageResponseHeader

    try:
        rh = SendMessageResponseHeader.from_ext(ext)
    except Exception:
        with pytest.raises(BrokerError):
            MQClientAPI.process_send_response(_response(ext), "addr", _MQ, "UID")
        return
    got = MQClientAPI.process_send_response(_response(ext), "addr", _MQ, "UID")
    assert got.queue_offset == rh.queue_offset


def test_error_codes_raise_the_broker_error() -> None:
    with pytest.raises(BrokerError) as info:
        MQClientAPI.process_send_response(_response({}, ResponseCode.SERVICE_NOT_AVAILABLE), "addr", _MQ, "UID")
    assert info.value.code == ResponseCode.SERVICE_NOT_AVAILABLE


def _reference_batches(msgs: list[Message], max_size: int) -> list[bytes]:
    from rocketq.client._validators import encode_batch_item, split_batch

    encoded = [encode_batch_item(m.flag, m.body, m.properties) for m in msgs]
    return [b"".join(encoded[i] for i in group) for group in split_batch(encoded, max_size)]


async def test_send_batch_bodies_match_the_item_encoder() -> None:
    p = _producer(max_message_size=3000)
    sent: list[MessageBatch] = []

    async def fake_send_default(batch: Message, timeout: float) -> Any:
        assert isinstance(batch, MessageBatch)
        sent.append(batch)
        return len(sent)

    p._send_default = fake_send_default  # type: ignore[method-assign]
    msgs = [Message("T", bytes([i]) * (100 * i + 1), flag=i, keys=f"k{i}" if i % 2 else None) for i in range(12)]
    msgs[3].properties["UNIQ_KEY"] = "PRESET"
    assert await p.send_batch(msgs) == list(range(1, len(sent) + 1))
    assert len(sent) > 1  # split at the size limit
    assert [b.body for b in sent] == _reference_batches(msgs, 3000)
    assert [m for b in sent for m in b.messages] == msgs
    assert all(b.topic == "T" and b.properties == {"WAIT": "true"} for b in sent)
    assert msgs[3].uniq_key == "PRESET" and len({m.uniq_key for m in msgs}) == 12


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (Message("T", b"x", delay_level=2), "delay level"),
        (Message("%RETRY%g", b"x"), "retry group"),
        (Message("U", b"x"), "topic of the messages"),
        (Message("T", b"x", wait_store_msg_ok=False), "wait_store_msg_ok"),
        (Message("T", b"x" * 3001), "over max"),
    ],
)
async def test_send_batch_refuses_like_java(bad: Message, match: str) -> None:
    from rocketq.client.errors import InvalidMessageError

    p = _producer(max_message_size=3000)
    with pytest.raises(InvalidMessageError, match=match):
        await p.send_batch([Message("T", b"a"), bad])
    with pytest.raises(InvalidMessageError, match="empty"):
        await p.send_batch([])
