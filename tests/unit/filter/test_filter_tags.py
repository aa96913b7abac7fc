"""Tag hash codes and TAG subscription expressions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.filter import SUB_ALL, TagExpression, java_string_hash, tags_code


def reference_hash(s: str) -> int:
    """Independent reference: Java's String.hashCode over the UTF-16BE code units."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[i : i + 2], "big")) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("*", 42),
        ("TagA", 2598919),  # 84 -> 84*31+97 -> *31+103 -> *31+65
        ("hello", 99162322),
        ("Aa", 2112),  # the classic collision pair
        ("BB", 2112),
        ("polygenelubricants", -(1 << 31)),  # famous Integer.MIN_VALUE hash
        ("\U0001f600", 0xD83D * 31 + 0xDE00),  # non-BMP: two surrogate units
        ("\ud83d", 0xD83D),  # a lone surrogate counts as itself
    ],
)
def test_java_string_hash_known_values(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_java_string_hash_wraps_to_signed_int32() -> None:
    for s in ("x" * 100, "TagA" * 50, "\uffff" * 10, "\U0010ffff" * 7):
        h = java_string_hash(s)
        assert -(1 << 31) <= h < (1 << 31)


@given(st.text(alphabet=st.characters(blacklist_categories=()), max_size=60))
def test_java_string_hash_matches_utf16_reference(s: str) -> None:
    assert java_string_hash(s) == reference_hash(s)


def test_tags_code() -> None:
    assert tags_code(None) == 0
    assert tags_code("") == 0
    assert tags_code("TagA") == 2598919
    assert tags_code("polygenelubricants") == -(1 << 31)


@pytest.mark.parametrize("expr", [None, "", "*"])
def test_tag_expression_match_all(expr: str | None) -> None:
    te = TagExpression.parse(expr)
    assert te.matches_all
    assert te.expression == SUB_ALL
    assert te.tags == frozenset() and te.codes == frozenset()
    assert te.matches_code(12345)
    assert te.matches_code(0)
    assert te.matches_tag(None)
    assert te.matches_tag("anything")


def test_tag_expression_parses_alternatives() -> None:
    te = TagExpression.parse(" TagA ||TagB||  || TagC||")
    assert not te.matches_all
    assert te.tags == {"TagA", "TagB", "TagC"}
    assert te.codes == {java_string_hash(t) for t in ("TagA", "TagB", "TagC")}
    assert te.expression == " TagA ||TagB||  || TagC||"
    assert str(te) == te.expression


def test_tag_expression_single_tag() -> None:
    te = TagExpression.parse("TagA")
    assert te.tags == {"TagA"}
    assert te.codes == {2598919}


def test_star_with_blanks_is_a_literal_tag_like_java() -> None:
    # Java compares the whole subscription string with "*"; " * " is the tag "*".
    te = TagExpression.parse(" * ")
    assert not te.matches_all
    assert te.tags == {"*"}
    assert te.matches_tag("*")
    assert not te.matches_tag("TagA")
    te2 = TagExpression.parse("* || TagA")
    assert not te2.matches_all
    assert te2.tags == {"*", "TagA"}


def test_java_trim_semantics() -> None:
    # Java's trim() strips chars <= U+0020 only, not other Unicode blanks.
    te = TagExpression.parse("\tTagA\n||\x00TagB\x1f")
    assert te.tags == {"TagA", "TagB"}
    te2 = TagExpression.parse("\u3000TagA")
    assert te2.tags == {"\u3000TagA"}


def test_matches_code() -> None:
    te = TagExpression.parse("TagA || TagB")
    assert te.matches_code(tags_code("TagA"))
    assert te.matches_code(tags_code("TagB"))
    assert not te.matches_code(tags_code("TagC"))
    assert not te.matches_code(0)
    # a ConsumeQueue entry without a tagsCode matches
    assert te.matches_code(None)


def test_matches_code_uses_low_32_bits() -> None:
    # tagsCode is stored sign-extended in 8 bytes; Java compares tagsCode.intValue().
    te = TagExpression.parse("polygenelubricants")
    code = tags_code("polygenelubricants")
    assert code < 0
    assert te.matches_code(code)
    assert te.matches_code(code & 0xFFFFFFFF)  # read back unsigned
    assert te.matches_code(code + (7 << 32))  # garbage in the high bits is ignored


def test_matches_code_hash_collision_is_a_false_positive_removed_by_tag_check() -> None:
    te = TagExpression.parse("Aa")
    assert te.matches_code(tags_code("BB"))
    assert not te.matches_tag("BB")
    assert te.matches_tag("Aa")


def test_matches_tag_client_side() -> None:
    te = TagExpression.parse("TagA||TagB")
    assert te.matches_tag("TagA")
    assert not te.matches_tag("taga")  # case-sensitive
    assert not te.matches_tag(" TagA")  # exact string
    assert not te.matches_tag(None)  # a message with no tag never passes a tag list
    assert not te.matches_tag("")


def test_degenerate_expression_without_tags() -> None:
    # Java: not SUB_ALL, but empty tag/code sets: the broker matches nothing (except entries without a
    # tagsCode) and the client, seeing an empty tag set, does not re-filter.
    te = TagExpression.parse("||")
    assert not te.matches_all
    assert te.tags == frozenset()
    assert not te.matches_code(tags_code("TagA"))
    assert te.matches_code(None)
    assert te.matches_tag("TagA")


def test_tag_expression_is_frozen_and_hashable() -> None:
    te = TagExpression.parse("TagA")
    with pytest.raises(AttributeError):
        te.matches_all = True  # type: ignore[misc]
    assert hash(te) == hash(TagExpression.parse("TagA"))
    assert te == TagExpression.parse("TagA")
