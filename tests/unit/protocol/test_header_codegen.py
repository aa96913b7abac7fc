"""The generated header codecs against their generic twin, for every header class, on arbitrary extFields.

``Header.from_ext``/``to_ext`` are straight-line code generated per class (a profile-driven change: the generic
loop cost 3-5 µs per send header); ``generic_from_ext``/``generic_to_ext`` are the reference.
"""

from __future__ import annotations

import importlib
import os
from collections import UserDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.errors import ProtocolError
from rocketq.protocol import header_codec
from rocketq.protocol.headers import (
    _V1_TO_V2,
    _V2_KEYS,
    Header,
    HeaderError,
    PullMessageRequestHeader,
    SendMessageRequestHeader,
    compile_from_ext,
    send_header_from_v2,
    send_header_to_v2,
)

importlib.import_module("rocketq.protocol.namesrv_headers")  # its header classes are covered too


def _all_headers() -> list[type[Header]]:
    # dataclass(slots=True) replaces each class; the pre-slots original may linger in __subclasses__, so take the
    # class its module exports under that name.
    seen: dict[str, type[Header]] = {}
    todo = list(Header.__subclasses__())
    while todo:
        cls = todo.pop()
        exported = getattr(importlib.import_module(cls.__module__), cls.__qualname__, None)
        if isinstance(exported, type) and issubclass(exported, Header):
            seen[f"{cls.__module__}.{cls.__qualname__}"] = exported
        todo.extend(cls.__subclasses__())
    return [seen[k] for k in sorted(seen)]


HEADERS = _all_headers()
SAMPLES = ["", "0", "1", "-7", "12345678901", " 3 ", "1.5", "inf", "nan", "true", "TRUE", "false", "x", "é",
           "2147483647", "2147483648", "-2147483648", "-2147483649", "9223372036854775807", "9223372036854775808",
           "-9223372036854775808", "-9223372036854775809", "1" * 60,
           # the compiled reader's own decimal path takes -?[0-9]{1,18}; the rest goes the way int() goes
           "007", "-0", "-", "+5", "1_000", "\u0663", "999999999999999999", "-999999999999999999",
           "1000000000000000000"]  # fmt: skip
VALUES = st.sampled_from(SAMPLES) | st.text(max_size=8) | st.from_regex(r"-?[0-9]{1,20}", fullmatch=True)


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except ProtocolError as exc:  # HeaderError, or a class's own validation
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("cls", HEADERS, ids=lambda c: f"{c.__module__.rsplit('.', 1)[-1]}.{c.__qualname__}")
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_generated_codecs_match_the_generic_ones(cls: type[Header], data: st.DataObject) -> None:
    keys = [spec.key for spec in cls._field_specs()]
    ext = data.draw(st.dictionaries(st.sampled_from([*keys, "other"]), VALUES))
    generic = _outcome(cls.generic_from_ext, ext)
    assert _outcome(cls.from_ext, ext) == generic
    if generic[0] == "ok":
        header = generic[1]
        assert header.to_ext() == header.generic_to_ext()


# a V1 send header with every field Java's @CFNotNull requires
SEND_V1 = {"producerGroup": "g", "topic": "t", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "queueId": "0",
           "sysFlag": "0", "bornTimestamp": "1", "flag": "0"}  # fmt: skip


def test_codecs_are_installed_on_first_use() -> None:
    SendMessageRequestHeader.from_ext(SEND_V1)
    assert "_codecs_installed" in SendMessageRequestHeader.__dict__
    assert SendMessageRequestHeader.from_ext is not Header.from_ext


@settings(max_examples=200, deadline=None)
@given(ext=st.dictionaries(st.sampled_from(sorted(_V2_KEYS)), VALUES))
def test_v2_send_header_matches_renaming_then_generic(ext: dict[str, str]) -> None:
    renamed = {_V2_KEYS[k]: v for k, v in ext.items()}
    expected = _outcome(SendMessageRequestHeader.generic_from_ext, renamed)
    assert _outcome(send_header_from_v2, ext) == expected
    if expected[0] == "ok":
        assert send_header_to_v2(expected[1]) == {_V1_TO_V2[k]: v for k, v in expected[1].generic_to_ext().items()}


def test_v2_reads_a_v1_name_when_its_letter_is_absent() -> None:
    v2 = {_V1_TO_V2[k]: v for k, v in SEND_V1.items() if k != "topic"}
    h = send_header_from_v2({**v2, "topic": "T", "e": "2"})
    assert (h.producer_group, h.topic, h.queue_id) == ("g", "T", 2)


@pytest.mark.parametrize("read", [SendMessageRequestHeader.from_ext, SendMessageRequestHeader.generic_from_ext])
def test_a_not_null_field_is_required_on_the_wire_and_defaulted_in_process(read: Any) -> None:
    """Java's @CFNotNull fields that Java leaves null when absent (a Java broker fails on them)."""
    for name in ("defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag"):
        with pytest.raises(HeaderError, match=f"'{name}' is missing"):
            read({k: v for k, v in SEND_V1.items() if k != name})
    assert read({**SEND_V1, "properties": "a\x01b"}).properties == "a\x01b"  # optional ones stay optional
    assert SendMessageRequestHeader(producer_group="g", topic="t").queue_id == -1


@pytest.mark.parametrize("raw", ["1.5", "1e3", "x", "nan"])
def test_an_integer_field_takes_integer_text_only(raw: str) -> None:
    """As Java's parseInt/parseLong: no float text truncated to an integer."""
    with pytest.raises(HeaderError, match="'queueId' is not an integer"):
        SendMessageRequestHeader.from_ext({**SEND_V1, "queueId": raw})


READERS = [SendMessageRequestHeader.from_ext, SendMessageRequestHeader.generic_from_ext,
           compile_from_ext(SendMessageRequestHeader, native=False)]  # fmt: skip


@pytest.mark.parametrize("read", READERS)
@pytest.mark.parametrize(
    ("key", "raw", "bits"),
    [("queueId", "2147483648", 32), ("queueId", "-2147483649", 32), ("sysFlag", str(2**70), 32),
     ("bornTimestamp", str(2**63), 64), ("bornTimestamp", str(-(2**63) - 1), 64), ("bornTimestamp", str(2**70), 64)],
)  # fmt: skip
def test_an_integer_field_has_its_java_width(read: Any, key: str, raw: str, bits: int) -> None:
    """Java's Integer fields take 32 bits, its Long fields 64 (parseInt/parseLong refuse the rest): the remark
    names the field and its type."""
    java = "Integer" if bits == 32 else "Long"
    with pytest.raises(HeaderError, match=f"'{key}' is out of range for a {bits}-bit {java}"):
        read({**SEND_V1, key: raw})


@pytest.mark.parametrize("read", READERS)
def test_the_ends_of_each_width_are_taken(read: Any) -> None:
    h = read({**SEND_V1, "queueId": str(2**31 - 1), "sysFlag": str(-(2**31)), "bornTimestamp": str(2**63 - 1)})
    assert (h.queue_id, h.sys_flag, h.born_timestamp) == (2**31 - 1, -(2**31), 2**63 - 1)
    assert read({**SEND_V1, "bornTimestamp": str(-(2**63))}).born_timestamp == -(2**63)


def test_a_remark_keeps_only_the_start_of_a_long_value() -> None:
    with pytest.raises(HeaderError) as info:
        SendMessageRequestHeader.from_ext({**SEND_V1, "queueId": "9" * 100_000})
    assert len(str(info.value)) < 200 and "100000 characters" in str(info.value)


def test_the_compiled_reader_is_built_where_required() -> None:
    """``make test`` sets ROCKETQ_REQUIRE_NATIVE=1: CI must exercise the compiled twin, not silently skip it."""
    if os.environ.get("ROCKETQ_REQUIRE_NATIVE") == "1" and not os.environ.get("ROCKETQ_NO_EXTENSIONS"):
        assert header_codec._headercodec is not None, "rocketq.protocol._headercodec_c was not built (C compiler?)"
        assert not hasattr(PullMessageRequestHeader.from_ext, "__code__")  # the compiled reader, not generated code


@pytest.mark.parametrize("cls", HEADERS, ids=lambda c: f"{c.__module__.rsplit('.', 1)[-1]}.{c.__qualname__}")
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_compiled_and_generated_readers_agree(cls: type[Header], data: st.DataObject) -> None:
    """The two twins of from_ext side by side (the test above compares whichever runs with the generic one)."""
    keys = [spec.key for spec in cls._field_specs()]
    ext = data.draw(st.dictionaries(st.sampled_from([*keys, "other"]), VALUES | st.none()))
    pure = compile_from_ext(cls, native=False)
    assert _outcome(compile_from_ext(cls), ext) == _outcome(pure, ext)


def test_odd_input_reads_as_the_generated_code_reads_it() -> None:
    """Not a dict, or a value that is not a str: the compiled reader hands the whole header to its pure twin."""
    ext = {"consumerGroup": "g", "topic": "t", "queueId": "1", "queueOffset": "5", "maxMsgNums": "32",
           "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0"}  # fmt: skip
    pure = compile_from_ext(PullMessageRequestHeader, native=False)
    for odd in (UserDict(ext), {**ext, "queueId": 7}, {**ext, "queueOffset": "1e3"}, {**ext, "queueId": None}):
        assert _outcome(PullMessageRequestHeader.from_ext, odd) == _outcome(pure, odd)
    with pytest.raises(HeaderError, match="'topic' is missing"):
        PullMessageRequestHeader.from_ext({k: v for k, v in ext.items() if k != "topic"})
    with pytest.raises(HeaderError, match="not an integer"):
        PullMessageRequestHeader.from_ext({**ext, "queueId": "x"})
