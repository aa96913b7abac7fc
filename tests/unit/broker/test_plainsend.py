"""The plain-send reader's twins: the compiled one takes the usual V2 request to the same run message as the pure
one (the spec: the header read the general way, then the run rules), and otherwise gives up (None), never a
different message."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.messaging import _plainsend_py as pure
from rocketq.broker.messaging import plainsend
from rocketq.broker.messaging.send import _NOT_IN_A_RUN, _NOT_STORED, _waits_for_store
from rocketq.codes import RequestCode
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE, TopicConfig
from rocketq.protocol.command import FLAG_ONEWAY, SERIALIZE_ROCKETMQ, RemotingCommand
from rocketq.protocol.framecodec import encode_send_reply
from rocketq.protocol.message import SYSFLAG_TX_MASK, encode_properties

HOST = ("10.0.0.9", 50000)
BODY = b"x" * 100
TWINS = [pure.plain_send_v2] + ([plainsend.compiled.plain_send_v2] if plainsend.compiled is not None else [])
compiled_only = pytest.mark.skipif(
    plainsend.compiled is None, reason="the compiled twin is not built here (ROCKETQ_REQUIRE_NATIVE guards CI)"
)


def rules(waits: bool = False, max_body: int = 1024) -> pure.PlainRules:
    table = {"T": TopicConfig("T", 4, 4), "TRead": TopicConfig("TRead", 4, 4, perm=PERM_READ),
             "TWide": TopicConfig("TWide", 2, 8)}  # fmt: skip
    return ({"T", "TRead", "TWide"}, table, max_body, _waits_for_store if waits else None, _NOT_IN_A_RUN,
            b"CLUSTER\x01c\x02", _NOT_STORED, SYSFLAG_TX_MASK, PERM_WRITE)  # fmt: skip


def usual(**changes: Any) -> dict[str, str]:
    """What a client sends (Java's and rocketq's V2 header)."""
    ext = {"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1765000000000", "h": "0",
           "i": encode_properties({"UNIQ_KEY": "AC11000100002A9F0000000000000001", "WAIT": "true", "TAGS": "t"}),
           "j": "0", "k": "false", "l": "16", "m": "false", "n": "broker-a"}  # fmt: skip
    for key, value in changes.items():
        if value is None:
            ext.pop(key, None)
        else:
            ext[key] = value
    return ext


def test_the_compiled_twin_is_built_under_make_test() -> None:
    """``make test`` sets ROCKETQ_REQUIRE_NATIVE=1: CI must exercise the compiled twin, not silently skip it."""
    if os.environ.get("ROCKETQ_REQUIRE_NATIVE") == "1" and not os.environ.get("ROCKETQ_NO_EXTENSIONS"):
        assert plainsend.IMPLEMENTATION == "c"


@pytest.mark.parametrize("read", TWINS)
def test_a_usual_send_becomes_its_run_message(read: Any) -> None:
    message = read(usual(), BODY, HOST, rules())
    assert message == ("T", 1, BODY, b"UNIQ_KEY\x01AC11000100002A9F0000000000000001\x02TAGS\x01t\x02CLUSTER\x01c\x02",
                       0, 0, 1765000000000, HOST, 0, "t", "AC11000100002A9F0000000000000001", None)  # fmt: skip
    assert read(usual(e="7", b="TWide", j="3", h="-5"), BODY, HOST, rules())[1:9:7] == (7, 3)  # queue, reconsume


@pytest.mark.parametrize("read", TWINS)
@pytest.mark.parametrize(
    "ext",
    [
        usual(b="TOther"), usual(b="TRead"), usual(e="4"), usual(e="-1"), usual(m="true"),
        usual(f=str(SYSFLAG_TX_MASK)), usual(i=encode_properties({"DELAY": "3"})),
        usual(i=encode_properties({"CLUSTER": "x"})),
    ],
    ids=["not-a-plain-topic", "read-only", "queue-past-the-end", "queue-negative", "batch", "transaction", "delay",
         "own-cluster"],
)  # fmt: skip
def test_what_a_run_does_not_take_is_refused_by_both(read: Any, ext: dict[str, str]) -> None:
    assert read(ext, BODY, HOST, rules()) is None


@pytest.mark.parametrize("read", TWINS)
def test_size_wait_and_body_type_rules(read: Any) -> None:
    assert read(usual(), BODY, HOST, rules(max_body=99)) is None
    assert read(usual(i=encode_properties({"WAIT": "false"})), BODY, HOST, rules(waits=True)) is None
    assert read(usual(), BODY, HOST, rules(waits=True)) is not None
    assert read(usual(i=None), BODY, HOST, rules())[3] == b"CLUSTER\x01c\x02"  # no properties at all


@compiled_only
@pytest.mark.parametrize(
    "ext",
    [usual(e=None, queueId="1"), usual(e="+1"), usual(e=" 1"), usual(g="1.0"), usual(k="yes"), usual(a=None),
     usual(d=""), usual(j="1_0")],
    ids=["v1-name", "plus", "space", "float", "odd-bool", "no-group", "empty-number", "underscore"],
)  # fmt: skip
def test_the_compiled_twin_gives_up_on_the_unusual(ext: dict[str, str]) -> None:
    """None, so the caller reads the header the general way (which stores the message or answers its error)."""
    assert plainsend.compiled is not None
    assert plainsend.compiled.plain_send_v2(ext, BODY, HOST, rules()) is None
    assert plainsend.compiled.plain_send_v2(usual(), bytearray(BODY), HOST, rules()) is None  # not bytes


_TEXT = st.text(st.sampled_from("0123456789-+ _aftrue"), max_size=6)
_VALUE = st.one_of(_TEXT, st.sampled_from(["0", "1", "3", "true", "false", "-7", ""]))
_EXT = st.fixed_dictionaries({}, optional=dict.fromkeys("abcdefghjklmn", _VALUE))


@compiled_only
@settings(max_examples=400, deadline=None)
@given(changes=_EXT, topic=st.sampled_from(["T", "TWide", "TRead", "TOther"]), waits=st.booleans())
def test_the_compiled_twin_never_gives_a_different_message(changes: dict[str, str], topic: str, waits: bool) -> None:
    assert plainsend.compiled is not None
    ext = {**usual(b=topic), **changes}
    fast = plainsend.compiled.plain_send_v2(ext, BODY, HOST, rules(waits))
    assert fast is None or fast == pure.plain_send_v2(ext, BODY, HOST, rules(waits))


# ------------------------------------------------------------------------------ the send queue's stretches

STRETCH_TWINS = [pure] + ([plainsend.compiled] if plainsend.compiled is not None else [])


def request(ext: dict[str, str], code: int = RequestCode.SEND_MESSAGE_V2, opaque: int = 1) -> RemotingCommand:
    return RemotingCommand(code, opaque, 0, "JAVA", 399, None, ext, BODY)


@pytest.mark.parametrize("twin", STRETCH_TWINS, ids=lambda t: t.__name__)
def test_a_stretch_is_read_up_to_the_first_send_it_does_not_take(twin: Any) -> None:
    """``plain_sends_v2`` appends what ``plain_send_v2`` gives for each and stops at the first it does not take
    (another code, a refusal, a failure to read), returning its index; it goes on from ``start``."""
    cmds = [request(usual(e="0")), request(usual(e="2")), request(usual(b="TRead")), request(usual(e="3")),
            request(usual(), code=RequestCode.SEND_MESSAGE), request(usual(e="1"))]  # fmt: skip
    run: list[Any] = []
    assert twin.plain_sends_v2(cmds, 0, HOST, rules(), run) == 2
    assert run == [pure.plain_send_v2(c.ext_fields, BODY, HOST, rules()) for c in cmds[:2]]
    assert twin.plain_sends_v2(cmds, 2, HOST, rules(), run) == 2  # refused: nothing taken
    assert twin.plain_sends_v2(cmds, 3, HOST, rules(), run) == 4  # then a V1 send
    assert twin.plain_sends_v2(cmds, 5, HOST, rules(), run) == 6 == len(cmds)
    assert [m[1] for m in run] == [0, 2, 3, 1]
    assert twin.plain_sends_v2(cmds, 6, HOST, rules(), run) == 6 and len(run) == 4
    broken = request(usual())
    broken.ext_fields = None  # type: ignore[assignment]  # reading it fails: the caller reads it alone and logs
    assert twin.plain_sends_v2([broken], 0, HOST, rules(), run) == 0 and len(run) == 4


@pytest.mark.parametrize("twin", STRETCH_TWINS, ids=lambda t: t.__name__)
def test_each_send_of_a_stretch_is_checked_against_its_own_topic(twin: Any) -> None:
    """Queue 6 is in TWide (8 write queues), not in T (4): a stretch that goes T, TWide, T stops at the third."""
    cmds = [request(usual(e="1")), request(usual(b="TWide", e="6")), request(usual(e="6"))]
    run: list[Any] = []
    assert twin.plain_sends_v2(cmds, 0, HOST, rules(), run) == 2
    assert [(m[0], m[1]) for m in run] == [("T", 1), ("TWide", 6)]


def stored_run(n: int, conn: object = "c1") -> tuple[list[Any], list[Any], list[Any]]:
    senders = [(conn, request(usual(), opaque=10 + i)) for i in range(n)]
    run = [pure.plain_send_v2(usual(e=str(i % 4)), BODY, HOST, rules()) for i in range(n)]
    results: list[Any] = [(1000 * i, 7 + i, 200) for i in range(n)]
    return senders, run, results


REPLY_ARGS = ("AC110001000000FF", 399, "DefaultRegion", "false")


def reply_of(senders: list[Any], run: list[Any], results: list[Any], i: int) -> bytes:
    phys, offset, _ = results[i]
    return encode_send_reply(senders[i][1].opaque, 399, REPLY_ARGS[0], phys, run[i][1], offset, *REPLY_ARGS[2:])


@pytest.mark.parametrize("twin", STRETCH_TWINS, ids=lambda t: t.__name__)
def test_a_stretch_of_answers_is_each_answer_joined(twin: Any) -> None:
    """``plain_answers`` writes ``encode_send_reply``'s frames one after another for the usual answers from
    ``start`` and stops at another connection, another request code, a oneway send, a failed put or a
    ROCKETMQ-serialized request (a C++ client's is answered in JSON all the same)."""
    senders, run, results = stored_run(9)
    senders[2] = ("c2", senders[2][1])
    senders[3][1].flag = FLAG_ONEWAY
    results[4] = "a failed put"
    senders[5][1].code = RequestCode.SEND_MESSAGE
    senders[7][1].serialize_type = SERIALIZE_ROCKETMQ
    senders[8][1].serialize_type = SERIALIZE_ROCKETMQ
    senders[8][1].language = "CPP"
    joined = lambda a, b: b"".join(reply_of(senders, run, results, i) for i in range(a, b))  # noqa: E731
    assert twin.plain_answers(senders, run, results, 0, *REPLY_ARGS) == (joined(0, 2), 2)
    assert twin.plain_answers(senders, run, results, 2, *REPLY_ARGS) == (joined(2, 3), 3)  # c2
    assert twin.plain_answers(senders, run, results, 3, *REPLY_ARGS) == (b"", 3)  # oneway
    assert twin.plain_answers(senders, run, results, 4, *REPLY_ARGS) == (b"", 4)  # not stored
    assert twin.plain_answers(senders, run, results, 5, *REPLY_ARGS) == (joined(5, 6), 6)  # V1, then V2 again
    assert twin.plain_answers(senders, run, results, 6, *REPLY_ARGS) == (joined(6, 7), 7)
    assert twin.plain_answers(senders, run, results, 7, *REPLY_ARGS) == (b"", 7)  # ROCKETMQ-serialized
    assert twin.plain_answers(senders, run, results, 8, *REPLY_ARGS) == (joined(8, 9), 9)  # ... from C++
    assert twin.plain_answers(senders, run, results, 9, *REPLY_ARGS) == (b"", 9)
    with pytest.raises(ValueError):
        twin.plain_answers(senders, run, results[:-1], 0, *REPLY_ARGS)


@compiled_only
def test_the_compiled_answers_stop_where_the_numbers_are_not_plain() -> None:
    """An offset or opaque beyond 64 bits ends the compiled stretch there (the caller answers it alone,
    through ``encode_send_reply``'s pure fallback); a long run grows the buffer and stays byte-equal."""
    assert plainsend.compiled is not None
    senders, run, results = stored_run(600)
    results[599] = (1 << 70, 1, 200)
    frames, end = plainsend.compiled.plain_answers(senders, run, results, 0, *REPLY_ARGS)
    assert end == 599
    assert frames == pure.plain_answers(senders[:599], run[:599], results[:599], 0, *REPLY_ARGS)[0]
    region = "\u00e9\"\n" * 300  # escaping at its widest
    assert plainsend.compiled.plain_answers(senders, run, results, 0, REPLY_ARGS[0], 399, region, "true") == (
        pure.plain_answers(senders[:599], run[:599], results[:599], 0, REPLY_ARGS[0], 399, region, "true")[0], 599
    )
