"""The V2 extFields builder's twins: the compiled one gives exactly the pure one's dict (the spec), key order
included, for any values a send can carry, and the unusual ones (non-ASCII text, a str subclass, a mapping that is
not a dict, numbers that are not plain ints) through the pure code."""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client import _sendext_py as pure
from rocketq.client import sendext
from rocketq.client.message import SendResult, SendStatus
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.command import decode_frame

TWINS = [pure.v2_ext] + ([sendext.compiled.v2_ext] if sendext.compiled is not None else [])
compiled_only = pytest.mark.skipif(
    sendext.compiled is None, reason="the compiled twin is not built here (ROCKETQ_REQUIRE_NATIVE guards CI)"
)
USUAL = ("pg", "T", "TBW102", 4, 1, 0, 1765000000000, 0, {"WAIT": "true", "UNIQ_KEY": "AC1100010000"}, "false",
         "broker-a")  # fmt: skip


def test_the_compiled_twin_is_built_under_make_test() -> None:
    """``make test`` sets ROCKETQ_REQUIRE_NATIVE=1: CI must exercise the compiled twin, not silently skip it."""
    if os.environ.get("ROCKETQ_REQUIRE_NATIVE") == "1" and not os.environ.get("ROCKETQ_NO_EXTENSIONS"):
        assert sendext.IMPLEMENTATION == "c"


@pytest.mark.parametrize("build", TWINS)
def test_a_usual_send(build: Any) -> None:
    ext = build(*USUAL)
    assert list(ext.items()) == [
        ("a", "pg"), ("b", "T"), ("c", "TBW102"), ("d", "4"), ("e", "1"), ("f", "0"), ("g", "1765000000000"),
        ("h", "0"), ("i", "WAIT\x01true\x02UNIQ_KEY\x01AC1100010000"), ("j", "0"), ("k", "false"), ("m", "false"),
        ("n", "broker-a"),
    ]  # fmt: skip


@pytest.mark.parametrize("build", TWINS)
def test_none_values_are_left_out_and_no_properties_is_empty(build: Any) -> None:
    args = list(USUAL)
    args[8] = {"A": None, "B": "b", "C": None}
    assert build(*args)["i"] == "B\x01b"
    args[8] = {"A": None}
    assert build(*args)["i"] == ""
    args[8] = {}
    assert build(*args)["i"] == ""


class _Text(str):
    def __format__(self, spec: str) -> str:
        return "formatted"


class _Number(int):
    def __str__(self) -> str:
        return "seven"


@compiled_only
@pytest.mark.parametrize("props", [
    {"K": "é"}, {"ключ": "v"}, {"K": _Text("x")}, OrderedDict(K="v", L="w"), {"K": "v\ud800"},
])  # fmt: skip
def test_unusual_properties_go_the_pure_way(props: dict[str, str]) -> None:
    args = list(USUAL)
    args[8] = props
    assert sendext.compiled.v2_ext(*args) == pure.v2_ext(*args)


@compiled_only
@pytest.mark.parametrize("number", [True, _Number(7), -5, 2**70, -(2**63), 1023, 1024, 10**18])
def test_numbers_read_as_str_reads_them(number: int) -> None:
    for place in (3, 4, 5, 6, 7):
        args = list(USUAL)
        args[place] = number
        assert sendext.compiled.v2_ext(*args) == pure.v2_ext(*args)


@compiled_only
def test_a_property_that_raises_fails_as_the_pure_twin_does() -> None:
    class Boom(str):
        def __format__(self, spec: str) -> str:
            raise ValueError("boom")

    args = list(USUAL)
    args[8] = {"K": Boom("x")}
    with pytest.raises(ValueError, match="boom"):
        sendext.compiled.v2_ext(*args)
    with pytest.raises(TypeError):
        sendext.compiled.v2_ext(*USUAL[:10])


class _Refusing(int):
    def __str__(self) -> str:
        raise ValueError("no text")


@pytest.mark.parametrize("build", TWINS)
def test_the_first_failing_number_is_the_error_raised(build: Any) -> None:
    """As the pure twin: the numbers in field order, the first error raised, nothing after it converted."""
    args = list(USUAL)
    args[3], args[4], args[8] = _Refusing(4), 2**70, {"K": _Text("x")}
    with pytest.raises(ValueError, match="no text"):
        build(*args)
    args[3] = 4
    assert build(*args)["e"] == str(2**70)


_text = st.text(max_size=12)
_number = st.integers(min_value=-(2**64), max_value=2**64)


@compiled_only
@settings(max_examples=400, deadline=None)
@given(st.tuples(_text, _text, _text, _number, _number, _number, _number, _number,
                 st.dictionaries(_text, st.one_of(st.none(), _text), max_size=6), _text, _text))  # fmt: skip
def test_the_twins_agree(args: tuple[Any, ...]) -> None:
    compiled, spec = sendext.compiled.v2_ext(*args), pure.v2_ext(*args)
    assert list(compiled.items()) == list(spec.items())


# -- v2_head: the whole head of a single plain send ---------------------------------------------------------------

HEAD_TWINS = [pure.v2_head] + ([sendext.compiled.v2_head] if sendext.compiled is not None else [])
USUAL_HEAD = (7, "PYTHON", 403, "pg", "T", "TBW102", 4, 1, 0, 1765000000000, 0,
              {"WAIT": "true", "UNIQ_KEY": "AC1100010000"}, "broker-a", b"body")  # fmt: skip


@pytest.mark.parametrize("build", HEAD_TWINS)
def test_the_head_is_the_frame_of_the_command_it_stands_for(build: Any) -> None:
    head = build(*USUAL_HEAD)
    cmd = decode_frame(head[4:] + b"body")
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.language, cmd.version, cmd.remark, cmd.body) == (
        310, 7, 0, "PYTHON", 403, None, b"body"
    )
    assert cmd.ext_fields == pure.v2_ext("pg", "T", "TBW102", 4, 1, 0, 1765000000000, 0, USUAL_HEAD[11], "false",
                                         "broker-a")  # fmt: skip
    assert int.from_bytes(head[:4], "big") == len(head) - 4 + len(b"body")


def _outcome(fn: Any, args: tuple[Any, ...]) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # the twins must fail alike too
        return type(exc)


@compiled_only
@pytest.mark.parametrize("place, value", [
    (11, {"K": "é", "ключ": "v"}), (11, {"K": _Text("x")}), (11, OrderedDict(K="v")), (11, {"K": "v\ud800"}),
    (11, {"A": None, "q\"\\\n": "\x00\x1f"}), (3, "gr\u00fcppe"), (4, _Text("T")), (1, "v\ud800"), (0, True),
    (0, _Number(7)), (9, 2**70), (9, -(2**63)), (13, bytearray(b"xy")), (13, memoryview(b"xy")), (12, None),
])  # fmt: skip
def test_the_head_twins_agree_on_the_unusual(place: int, value: Any) -> None:
    args = list(USUAL_HEAD)
    args[place] = value
    assert _outcome(sendext.compiled.v2_head, tuple(args)) == _outcome(pure.v2_head, tuple(args))


@compiled_only
@pytest.mark.parametrize("text_len", [100, 560, 600, 640, 1200, 1260, 1300])
def test_the_longest_head_fits_its_buffer(text_len: int) -> None:
    """Every number at its widest (20 characters) and text that escapes to six bytes a character, sized so that
    the head ends near the scratch buffer's power-of-two sizes: the compiled twin writes exactly the pure bytes."""
    wide = -(2**63)
    controls = "\x01" * text_len
    args = (wide, controls, wide, controls, controls, controls, wide, wide, wide, wide, wide,
            {controls: controls}, controls, b"b")  # fmt: skip
    assert sendext.compiled.v2_head(*args) == pure.v2_head(*args)


@compiled_only
@settings(max_examples=400, deadline=None)
@given(st.tuples(st.integers(0, 2**31 - 1), _text, _number, _text, _text, _text, _number, _number, _number, _number,
                 _number, st.dictionaries(_text, st.one_of(st.none(), _text), max_size=6), _text,
                 st.binary(max_size=40)))  # fmt: skip
def test_the_head_twins_agree(args: tuple[Any, ...]) -> None:
    assert _outcome(sendext.compiled.v2_head, args) == _outcome(pure.v2_head, args)


# -- send_answer: the usual answer's SendResult --------------------------------------------------------------------

ANSWER_TWINS = [pure.send_answer] + ([sendext.compiled.send_answer] if sendext.compiled is not None else [])
_MQ = MessageQueue("T", "broker-a", 3)
_ANSWER = {"msgId": "7F0000010000A9F0000000000001E240", "queueId": "3", "queueOffset": "999",
           "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}  # fmt: skip


@pytest.mark.parametrize("read", ANSWER_TWINS)
def test_the_usual_answer_is_its_result(read: Any) -> None:
    assert read(_ANSWER, SendStatus.SEND_OK, "U1", _MQ) == SendResult(
        SendStatus.SEND_OK, "U1", _ANSWER["msgId"], _MQ, 999, None, "DefaultRegion", True
    )
    tx = dict(_ANSWER, transactionId="TX", MSG_REGION="", TRACE_ON="false")
    assert read(tx, SendStatus.FLUSH_DISK_TIMEOUT, "U2", _MQ) == SendResult(
        SendStatus.FLUSH_DISK_TIMEOUT, "U2", _ANSWER["msgId"], _MQ, 999, "TX", "DefaultRegion", False
    )
    bare = {k: _ANSWER[k] for k in ("msgId", "queueId", "queueOffset")}
    assert read(bare, SendStatus.SEND_OK, "U3", _MQ).region_id == "DefaultRegion"


@pytest.mark.parametrize("read", ANSWER_TWINS)
@pytest.mark.parametrize("change", [
    {"queueId": "4"}, {"queueId": " 3"}, {"queueId": "+3"}, {"queueId": "3_0"}, {"queueId": "٣"},
    {"queueOffset": "1" * 19}, {"queueOffset": ""}, {"queueOffset": "-"}, {"msgId": None}, {"MSG_REGION": 5},
    {"TRACE_ON": _Text("false")}, {"queueOffset": _Text("9")},
])  # fmt: skip
def test_an_unusual_answer_is_left_to_the_general_reader(read: Any, change: dict[str, Any]) -> None:
    ext = {k: v for k, v in {**_ANSWER, **change}.items() if v is not None}
    assert read(ext, SendStatus.SEND_OK, "U", _MQ) is None


@compiled_only
def test_a_mapping_that_is_not_a_dict_is_read_by_the_pure_twin() -> None:
    ext = OrderedDict(_ANSWER)
    assert sendext.compiled.send_answer(ext, SendStatus.SEND_OK, "U", _MQ) == pure.send_answer(
        ext, SendStatus.SEND_OK, "U", _MQ
    )


_field = st.one_of(st.none(), st.text(max_size=6), st.from_regex(r"-?[0-9]{1,20}", fullmatch=True))


@compiled_only
@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(["msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON", "transactionId"]),
                       _field), st.integers(-2, 5))  # fmt: skip
def test_the_answer_twins_agree(ext: dict[str, Any], queue_id: int) -> None:
    ext = {k: v for k, v in ext.items() if v is not None}
    mq = MessageQueue("T", "broker-a", queue_id)
    assert sendext.compiled.send_answer(ext, SendStatus.SEND_OK, "U", mq) == pure.send_answer(
        ext, SendStatus.SEND_OK, "U", mq
    )


# -- batch_results: an auto-batch's answer, message by message -----------------------------------------------------

BATCH_TWINS = [pure.batch_results] + ([sendext.compiled.batch_results] if sendext.compiled is not None else [])


@pytest.mark.parametrize("split", BATCH_TWINS)
def test_a_batch_answer_gives_each_message_its_ids_and_offset(split: Any) -> None:
    answer = SendResult(SendStatus.FLUSH_DISK_TIMEOUT, "U0,U1,U2", "O0,O1,O2", _MQ, 40, "TX", "R", False)
    assert split(answer, 3) == [
        SendResult(SendStatus.FLUSH_DISK_TIMEOUT, f"U{i}", f"O{i}", _MQ, 40 + i, "TX", "R", False) for i in range(3)
    ]
    assert split(answer, 2) is None and split(answer, 4) is None
    uneven = SendResult(SendStatus.SEND_OK, "U0,U1", "O0,O1,O2", _MQ, 40)
    assert split(uneven, 2) is None


@compiled_only
@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="0123456789ABCDEF,", max_size=8), min_size=1, max_size=6),
       st.lists(st.text(alphabet="0123456789ABCDEF,", max_size=8), min_size=1, max_size=6),
       st.integers(-(2**63), 2**63 - 1), st.integers(0, 8))  # fmt: skip
def test_the_batch_twins_agree(ids: list[str], offsets: list[str], first: int, count: int) -> None:
    answer = SendResult(SendStatus.SEND_OK, ",".join(ids), ",".join(offsets), _MQ, first)
    assert sendext.compiled.batch_results(answer, count) == pure.batch_results(answer, count)
