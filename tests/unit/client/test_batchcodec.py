"""The producer's batch encoder: both twins (compiled and pure) against each other and the wire layout."""

from __future__ import annotations

import itertools
import os
import string
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client import _batchcodec_py, batchcodec
from rocketq.client._uniq_id import UniqIdGenerator
from rocketq.client._validators import check_message, encode_batch_item
from rocketq.client.errors import InvalidMessageError
from rocketq.client.message import Message
from rocketq.protocol.message import decode_batch

TWINS: list[ModuleType] = [_batchcodec_py]
if batchcodec.compiled is not None:
    TWINS.append(batchcodec.compiled)


def _twin_id(m: ModuleType) -> str:
    return m.__name__.rsplit("_", 1)[-1]


def test_the_compiled_twin_is_built_where_required() -> None:
    """``make test`` sets ROCKETQ_REQUIRE_NATIVE=1: CI must exercise the compiled twin, not silently skip it."""
    if os.environ.get("ROCKETQ_REQUIRE_NATIVE") == "1":
        assert batchcodec.compiled is not None, "rocketq.client._batchcodec_c was not built (C compiler?)"


def _ids() -> tuple[str, Any]:
    """An id source whose counter passes 16 bits in the first message: only its low 16 bits are written."""
    return "ID", itertools.count(0xFFFE)


TEXT = st.text(alphabet=string.ascii_letters + "é中 ", min_size=1, max_size=10)
PROPS = st.dictionaries(TEXT, TEXT | st.none(), max_size=4)


@st.composite
def message_lists(draw: st.DrawFn) -> list[Message]:
    topic = draw(st.sampled_from(["TopicA", "TopicB", "%RETRY%g", "bad topic!"]))
    msgs = []
    for _ in range(draw(st.integers(1, 5))):
        m = Message(draw(st.sampled_from([topic, topic, topic, "TopicB"])), draw(st.binary(min_size=0, max_size=40)),
                    flag=draw(st.integers(-(2**31), 2**31 - 1)),
                    wait_store_msg_ok=draw(st.sampled_from([True, True, True, False])))  # fmt: skip
        m.properties.update(draw(PROPS))
        if draw(st.integers(0, 5)) == 0:
            m.properties["UNIQ_KEY"] = "preset"
        if draw(st.integers(0, 8)) == 0:
            m.properties["DELAY"] = draw(st.sampled_from(["0", "3", "", " 2"]))
        msgs.append(m)
    return msgs


def _run(twin: ModuleType, msgs: list[Message], max_size: int) -> Any:
    try:
        body, sizes = twin.encode_batch(msgs, max_size, *_ids(), check_message)
    except (InvalidMessageError, ValueError) as exc:
        outcome: Any = (type(exc), str(exc))
    else:
        outcome = (body, sizes)
    return outcome, [dict(m.properties) for m in msgs]


@pytest.mark.skipif(len(TWINS) < 2, reason="the compiled twin is not built here (ROCKETQ_REQUIRE_NATIVE guards CI)")
@given(message_lists(), st.sampled_from([20, 4 * 1024 * 1024]))
def test_twins_agree(msgs: list[Message], max_size: int) -> None:
    copies = [[_copy(m) for m in msgs] for _ in TWINS]
    results = [_run(twin, c, max_size) for twin, c in zip(TWINS, copies, strict=True)]
    assert results[0] == results[1]


def _copy(m: Message) -> Message:
    c = Message(m.topic, m.body, flag=m.flag)
    c.properties = dict(m.properties)
    return c


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
def test_layout_is_java_encode_message(twin: ModuleType) -> None:
    a = Message("T", b"hello", tags="TagA", keys=["k1", "k2"], flag=7)
    b = Message("T", b"x")
    b.properties["UNIQ_KEY"] = "U2"
    body, sizes = twin.encode_batch([a, b], 1000, "U1", itertools.count(0xABC), check_message)
    assert a.properties["UNIQ_KEY"] == "U10ABC"
    expected = encode_batch_item(7, b"hello", a.properties) + encode_batch_item(0, b"x", b.properties)
    assert body == expected
    assert sizes == [len(encode_batch_item(7, b"hello", a.properties)), len(encode_batch_item(0, b"x", b.properties))]
    items = decode_batch(body)
    assert [i.body for i in items] == [b"hello", b"x"] and items[0].properties["TAGS"] == "TagA"


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
def test_java_batch_rules(twin: ModuleType) -> None:
    def fails(msgs: list[Message], text: str, max_size: int = 1000) -> None:
        with pytest.raises(InvalidMessageError, match=text):
            twin.encode_batch(msgs, max_size, "U", itertools.count(), check_message)

    fails([Message("T", b"a"), Message("T", b"b", delay_level=3)], "delay level")
    fails([Message("%RETRY%g", b"a")], "retry group topic")
    fails([Message("T", b"a"), Message("U", b"b")], "topic of the messages")
    fails([Message("T", b"a"), Message("T", b"b", wait_store_msg_ok=False)], "wait_store_msg_ok")
    fails([Message("T", b"a"), Message("T", b"b" * 11)], "body size over max value, MAX: 10", max_size=10)
    fails([Message("bad topic", b"a")], "illegal characters")
    empty = Message("T", b"b")
    empty.body = b""
    fails([Message("T", b"a"), empty], "length is zero")
    big = Message("T", b"a")
    big.properties["p"] = "v" * 40000
    fails([big], "properties are 40027 bytes encoded, over the 32767 limit")
    ok = Message("T", b"a", delay_level=0)
    assert twin.encode_batch([ok], 1000, "U", itertools.count(), check_message)[1]


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
def test_ids_are_the_generators_own(twin: ModuleType) -> None:
    """Ids made from ``UniqIdGenerator.id_source`` are the ones its ``create`` makes in that millisecond, and the
    two share one counter (no id is made twice)."""
    gen = UniqIdGenerator("10.1.2.3", pid=7, loader_hash=9, clock=lambda: 1_700_000_000_000)
    before = gen.create()
    msgs = [Message("T", b"a"), Message("T", b"b")]
    twin.encode_batch(msgs, 1000, *gen.id_source(), check_message)
    after = gen.create()
    ids = [before, *(m.properties["UNIQ_KEY"] for m in msgs), after]
    assert [i[-4:] for i in ids] == ["0000", "0002", "0003", "0004"]  # 0001: the id id_source cut its text from
    assert {i[:-4] for i in ids} == {before[:-4]}


class _Fields:
    """A message whose fields are not slots: the compiled twin reads them through getattr."""

    def __init__(self, topic: str, body: bytes) -> None:
        self.topic, self.body, self.flag, self.properties = topic, body, 3, {"WAIT": "true"}


class _Shadowed(Message):
    """A Message subclass whose topic is a property, not the slot."""

    __slots__ = ()

    @property  # type: ignore[override]
    def topic(self) -> str:
        return "Shadow"

    @topic.setter
    def topic(self, value: str) -> None:
        pass


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
def test_messages_of_other_types(twin: ModuleType) -> None:
    plain, odd = Message("T", b"a"), _Fields("T", b"b")
    body, _ = twin.encode_batch([plain, odd, Message("T", b"c")], 1000, "U", itertools.count(), check_message)
    assert [i.body for i in decode_batch(body)] == [b"a", b"b", b"c"]
    assert decode_batch(body)[1].flag == 3
    with pytest.raises(InvalidMessageError, match="topic of the messages"):
        twin.encode_batch([plain, _Shadowed("T", b"d")], 1000, "U", itertools.count(), check_message)
    unset = Message.__new__(Message)
    with pytest.raises(AttributeError):
        twin.encode_batch([plain, unset], 1000, "U", itertools.count(), check_message)
