"""The client's POP handle rebuild (Java ``MQClientAPIImpl.processPopResponse`` + ``ExtraInfoUtil``)."""

from __future__ import annotations

import pytest

from rocketq.client._pop_handle import (
    PROP_FIRST_POP_TIME,
    PROP_POP_CK,
    PopHandle,
    attach_handles,
    build_extra_info,
    parse_offset_info,
    real_topic,
    retry_mark,
)
from rocketq.client.message import MessageExt
from rocketq.protocol.headers import PopMessageResponseHeader


def _msg(topic: str, queue_id: int, offset: int, props: dict[str, str] | None = None) -> MessageExt:
    m = MessageExt(topic, b"x", props)
    m.queue_id, m.queue_offset = queue_id, offset
    return m


def test_retry_marks_and_real_topics() -> None:
    assert [retry_mark(t) for t in ("T", "%RETRY%g_T", "%RETRY%g+T")] == ["0", "1", "2"]
    assert real_topic("0", "T", "g") == "T"
    assert real_topic("1", "T", "g") == "%RETRY%g_T"
    assert real_topic("2", "T", "g") == "%RETRY%g+T"
    with pytest.raises(ValueError):
        real_topic("3", "T", "g")


def test_build_and_parse_extra_info() -> None:
    text = build_extra_info(5, 1000, 30000, 3, "%RETRY%g_T", "b1", 0, 7)
    assert text == "5 1000 30000 3 1 b1 0 7"
    h = PopHandle.parse(text)
    assert (h.ck_offset, h.pop_time, h.invisible_ms, h.revive_qid, h.retry, h.broker_name, h.queue_id,
            h.queue_offset) == (5, 1000, 30000, 3, "1", "b1", 0, 7)  # fmt: skip
    assert not h.orderly and PopHandle.parse("7 1 2 999 0 b 1 7").orderly
    for bad in ("1 2 3", "a 1000 30000 3 0 b1 0 7", "5 1000 30000 3 9 b1 0 7", "5 1 2 3 0 b 0 7 8"):
        with pytest.raises(ValueError):
            PopHandle.parse(bad)


def test_parse_offset_info_refuses_what_java_refuses() -> None:
    assert parse_offset_info("0 1 5;1 0 2") == {"0@1": ["5"], "1@0": ["2"]}
    assert parse_offset_info("0 1 5,6,9") == {"0@1": ["5", "6", "9"]}
    assert parse_offset_info(None) == {} and parse_offset_info("") == {}
    with pytest.raises(ValueError):
        parse_offset_info("0 1")
    with pytest.raises(ValueError):
        parse_offset_info("0 1 5;0 1 6")


def test_attach_handles_from_offset_info() -> None:
    """Two queues of the topic and one message of the retry topic: each handle names its own checkpoint start
    and its offset; every topic becomes the requested one; 1ST_POP_TIME is the pop time."""
    header = PopMessageResponseHeader(
        pop_time=1000, invisible_time=30000, revive_qid=2, rest_num=0,
        start_offset_info="0 1 4;0 2 10;1 0 0", msg_offset_info="0 1 4,5;0 2 10;1 0 0",
    )  # fmt: skip
    msgs = [_msg("T", 1, 4), _msg("T", 1, 5), _msg("T", 2, 10), _msg("%RETRY%g_T", 0, 0)]
    msgs[3].reconsume_times = 1
    attach_handles(msgs, header, "T", "b1", order=False)
    assert [m.properties[PROP_POP_CK] for m in msgs] == [
        "4 1000 30000 2 0 b1 1 4", "4 1000 30000 2 0 b1 1 5", "10 1000 30000 2 0 b1 2 10", "0 1000 30000 2 1 b1 0 0",
    ]  # fmt: skip
    assert {m.topic for m in msgs} == {"T"} and {m.broker_name for m in msgs} == {"b1"}
    assert {m.properties[PROP_FIRST_POP_TIME] for m in msgs} == {"1000"}
    assert msgs[3].reconsume_times == 1


def test_attach_handles_keeps_the_brokers_own_handle() -> None:
    """A retried message the broker re-encoded (topic already the origin one) carries POP_CK: kept, and its
    retry mark files it under the retry topic's offsets."""
    header = PopMessageResponseHeader(pop_time=1, invisible_time=2, revive_qid=0, rest_num=0,
                                      start_offset_info="1 0 3", msg_offset_info="1 0 3")  # fmt: skip
    m = _msg("T", 0, 3, {PROP_POP_CK: "3 1 2 0 1 b 0 3", PROP_FIRST_POP_TIME: "77"})
    attach_handles([m], header, "T", "b", order=False)
    assert m.properties[PROP_POP_CK] == "3 1 2 0 1 b 0 3" and m.properties[PROP_FIRST_POP_TIME] == "77"


def test_attach_handles_orderly_counts() -> None:
    """An orderly pop: orderCountInfo's per-offset count (else the queue's) becomes reconsumeTimes."""
    header = PopMessageResponseHeader(
        pop_time=1, invisible_time=2, revive_qid=999, rest_num=0, start_offset_info="0 0 7;0 1 3",
        msg_offset_info="0 0 7,8;0 1 3", order_count_info="0 qo0%7 2;0 qo0%8 0;0 1 4",
    )  # fmt: skip
    msgs = [_msg("T", 0, 7), _msg("T", 0, 8), _msg("T", 1, 3)]
    attach_handles(msgs, header, "T", "b", order=True)
    assert [m.reconsume_times for m in msgs] == [2, 0, 4]
    assert PopHandle.parse(msgs[0].properties[PROP_POP_CK]).orderly


def test_attach_handles_without_offset_info() -> None:
    """An old broker sends no offset info: the first message of each queue is the checkpoint start."""
    header = PopMessageResponseHeader(pop_time=1, invisible_time=2, revive_qid=3, rest_num=0)
    msgs = [_msg("T", 0, 5), _msg("T", 0, 6)]
    attach_handles(msgs, header, "T", "b", order=False)
    assert [m.properties[PROP_POP_CK] for m in msgs] == ["5 1 2 3 0 b 0 5", "5 1 2 3 0 b 0 6"]


def test_attach_handles_refuses_an_answer_without_the_queues_info() -> None:
    header = PopMessageResponseHeader(pop_time=1, invisible_time=2, revive_qid=3, rest_num=0,
                                      start_offset_info="0 1 5", msg_offset_info="0 1 5")  # fmt: skip
    with pytest.raises(ValueError, match="no offset info"):
        attach_handles([_msg("T", 0, 5)], header, "T", "b", order=False)


def test_batch_ack_body_is_javas() -> None:
    """One BatchAck per (retry, queue, checkpoint start, pop time); ``b`` is base64 of BitSet.toByteArray()."""
    import base64
    import json

    from rocketq.client._pop_api import batch_ack_body

    handles = [PopHandle.parse(t) for t in ("4 100 30000 2 0 b1 1 4", "4 100 30000 2 0 b1 1 6",
                                            "4 100 30000 2 0 b1 1 13", "0 100 30000 2 1 b1 0 0")]  # fmt: skip
    doc = json.loads(batch_ack_body("g", "T", handles))
    assert doc["brokerName"] == "b1"
    first, retry = doc["acks"]
    assert {k: first[k] for k in ("c", "t", "r", "so", "q", "rq", "pt", "it")} == {
        "c": "g",
        "t": "T",
        "r": "0",
        "so": 4,
        "q": 1,
        "rq": 2,
        "pt": 100,
        "it": 30000,
    }
    assert base64.b64decode(first["b"]) == bytes([0b101, 0b10])  # offsets 4, 6, 13 → bits 0, 2, 9
    assert (retry["r"], retry["q"], base64.b64decode(retry["b"])) == ("1", 0, b"\x01")
    with pytest.raises(ValueError):
        batch_ack_body("g", "T", [PopHandle.parse("5 1 2 3 0 b 0 4")])
