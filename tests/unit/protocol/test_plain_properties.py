"""``plain_properties``: both twins against the rule it stands for (decode, encode back, compare)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import message
from rocketq.protocol.message import PlainProperties, decode_properties, encode_properties

Twin = Callable[[str, tuple[str, ...], bytes], "PlainProperties | None"]
TWINS: list[Twin] = [message._plain_properties_py]
if message._headercodec is not None:
    TWINS.append(message._headercodec.plain_properties)
TWIN_IDS = ["python", "c"][: len(TWINS)]

EXCLUDED = ("DELAY", "TRAN_MSG", "CLUSTER")
SUFFIX = b"CLUSTER\x01DefaultCluster\x02"

# texts built from the pieces that matter to the rule, so odd shapes (repeats, dropped pieces, Java's form,
# excluded names, non-ASCII) come up often
_PIECES = st.sampled_from(
    ["\x01", "\x02", "a", "b", "é", "中", "TAGS", "UNIQ_KEY", "KEYS", "WAIT", "DELAY", "CLUSTER", " "]
)
_TEXTS = st.lists(_PIECES, max_size=14).map("".join)
_MAPS = st.dictionaries(
    st.sampled_from(["TAGS", "UNIQ_KEY", "KEYS", "WAIT", "DELAY", "é", "x"]),
    st.text(alphabet="ab é\x01", min_size=1, max_size=5),
    max_size=5,
)


def _expected(text: str) -> PlainProperties | None:
    props = decode_properties(text)
    encoded = encode_properties(props)
    if encoded not in (text, text + "\x02") or any(name in props for name in EXCLUDED):
        return None
    stored = encode_properties({k: v for k, v in props.items() if k != "WAIT"})  # Java does not store WAIT
    return stored.encode() + SUFFIX, props.get("TAGS"), props.get("UNIQ_KEY"), props.get("KEYS")


@pytest.mark.parametrize("twin", TWINS, ids=TWIN_IDS)
@given(text=st.one_of(_TEXTS, _MAPS.map(encode_properties), _MAPS.map(lambda m: encode_properties(m)[:-1])))
def test_plain_properties_follows_its_rule(twin: Twin, text: str) -> None:
    assert twin(text, EXCLUDED, SUFFIX) == _expected(text)


@pytest.mark.parametrize("twin", TWINS, ids=TWIN_IDS)
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", (SUFFIX, None, None, None)),
        ("UNIQ_KEY\x01U1\x02TAGS\x01a", (b"UNIQ_KEY\x01U1\x02TAGS\x01a\x02" + SUFFIX, "a", "U1", None)),  # Java's form
        ("KEYS\x01k1 k2\x02", (b"KEYS\x01k1 k2\x02" + SUFFIX, None, None, "k1 k2")),
        ("TAGS\x01a\x02TAGS\x01b\x02", None),  # a repeated name
        ("TAGS\x01a\x02DELAY\x013\x02", None),  # an excluded name
        ("TAGS\x01\x02", None),  # a dropped piece (empty value)
        ("WAIT\x01true\x02TAGS\x01a", (b"TAGS\x01a\x02" + SUFFIX, "a", None, None)),  # WAIT is not stored
        ("TAGS\x01a\x02WAIT\x01false", (b"TAGS\x01a\x02" + SUFFIX, "a", None, None)),  # nor at the end
        ("WAIT\x01true", (SUFFIX, None, None, None)),
        ("\ud800\x01x", None),  # a lone surrogate cannot be stored as it came
    ],
)
def test_plain_properties_examples(twin: Twin, text: str, expected: PlainProperties | None) -> None:
    assert twin(text, EXCLUDED, SUFFIX) == expected


@pytest.mark.parametrize("twin", TWINS, ids=TWIN_IDS)
@pytest.mark.parametrize("count", [63, 64, 65, 300])
def test_many_pieces(twin: Twin, count: int) -> None:
    text = "".join(f"k{i}\x01v{i}\x02" for i in range(count))
    assert twin(text, EXCLUDED, b"") == (text.encode(), None, None, None)
    assert twin(text + "k0\x01again", EXCLUDED, b"") is None  # the repeat comes last
