"""Java value semantics behind the SQL92 filter (valueOf parsing, compareTo, promotion)."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.filter._errors import FilterEvaluationError
from rocketq.filter._java import (
    JavaLong,
    boolean_value_of,
    double_compare,
    double_value_of,
    integer_value_of,
    java_compare,
    java_negate,
    long_value_of,
    string_compare,
    type_name,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("-0", 0),
        ("+7", 7),
        ("007", 7),
        ("2147483647", 2**31 - 1),
        ("-2147483648", -(2**31)),
        ("\u0663\u0664", 34),
        ("\uff11\uff12", 12),
        ("0" * 5000 + "5", 5),
        ("-" + "0" * 5000 + "5", -5),
    ],
)
def test_integer_value_of_accepts(text: str, value: int) -> None:
    assert integer_value_of(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        "+",
        "-",
        " 1",
        "1 ",
        "1.0",
        "1e3",
        "0x10",
        "1_000",
        "2147483648",
        "-2147483649",
        "١" * 30,
        "9" * 5000,
        "--1",
        "+-1",
        "\u216b",
    ],
)
def test_integer_value_of_rejects(text: str) -> None:
    with pytest.raises(FilterEvaluationError, match="Integer"):
        integer_value_of(text)


def test_long_value_of() -> None:
    assert long_value_of("9223372036854775807") == 2**63 - 1
    assert long_value_of("-9223372036854775808") == -(2**63)
    assert type(long_value_of("1")) is JavaLong
    with pytest.raises(FilterEvaluationError, match="Long"):
        long_value_of("9223372036854775808")
    with pytest.raises(FilterEvaluationError):
        long_value_of("1L")


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_integer_and_long_parsing_match_range(n: int) -> None:
    s = str(n)
    if -(2**31) <= n < 2**31:
        assert integer_value_of(s) == n
    else:
        with pytest.raises(FilterEvaluationError):
            integer_value_of(s)
    if -(2**63) <= n < 2**63:
        assert long_value_of(s) == n
    else:
        with pytest.raises(FilterEvaluationError):
            long_value_of(s)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1.0),
        ("1.", 1.0),
        (".5", 0.5),
        ("-.5e1", -5.0),
        ("1.e2", 100.0),
        ("+1E-2", 0.01),
        ("1f", 1.0),
        ("1.5D", 1.5),
        ("  2.5\t\n", 2.5),
        ("\x00 3 \x1f", 3.0),
        ("Infinity", math.inf),
        ("-Infinity", -math.inf),
        ("+Infinity", math.inf),
        ("1e400", math.inf),
        ("0x1p3", 8.0),
        ("0X1.8P1", 3.0),
        ("-0x.8p1d", -1.0),
        ("0x1p99999", math.inf),
        ("-0x1p99999", -math.inf),
    ],
)
def test_double_value_of_accepts(text: str, value: float) -> None:
    assert double_value_of(text) == value


def test_double_value_of_nan_and_negative_zero() -> None:
    assert math.isnan(double_value_of("NaN"))
    assert math.isnan(double_value_of("-NaN"))
    assert math.copysign(1.0, double_value_of("-0")) == -1.0


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        ".",
        "e3",
        "1e",
        "1e+",
        "inf",
        "nan",
        "infinity",
        "NAN",
        "1_0",
        "1,5",
        "0x1",
        "0x1.8",
        "1.5ff",
        "Infinityd",
        "1 2",
        "\u00a01",
        "\u0661",
        "--1",
        "0x",
    ],
)
def test_double_value_of_rejects(text: str) -> None:
    with pytest.raises(FilterEvaluationError, match="Double"):
        double_value_of(text)


@given(st.floats(allow_nan=False))
def test_double_value_of_round_trips_python_repr(x: float) -> None:
    text = repr(x).replace("inf", "Infinity")
    assert double_compare(double_value_of(text), x) == 0


def test_boolean_value_of() -> None:
    assert boolean_value_of("true") and boolean_value_of("TRUE") and boolean_value_of("tRuE")
    for s in ("", "false", "yes", "1", " true", "true ", "truth"):
        assert boolean_value_of(s) is False


def test_double_compare_total_order() -> None:
    ordered = [-math.inf, -1.0, -0.0, 0.0, 1e-300, 1.0, math.inf, math.nan]
    for i, a in enumerate(ordered):
        for j, b in enumerate(ordered):
            expected = (i > j) - (i < j)
            assert double_compare(a, b) == expected, (a, b)


def test_string_compare_uses_utf16_units() -> None:
    assert string_compare("a", "b") == -1
    assert string_compare("b", "a") == 1
    assert string_compare("", "") == 0
    assert string_compare("a", "ab") == -1
    # U+FF61 > U+1F600 in UTF-16 (0xFF61 > 0xD83D) although not in code points
    assert string_compare("\uff61", "\U0001f600") == 1
    assert "\uff61" < "\U0001f600"


@pytest.mark.parametrize(
    ("lv", "rv", "expected"),
    [
        (1, JavaLong(1), 0),
        (JavaLong(2), 1, 1),
        (1, 1.5, -1),
        (1.5, 1, 1),
        (JavaLong(3), 3.0, 0),
        ("5", 5, 0),
        (5, "6", -1),
        ("5", JavaLong(4), 1),
        ("2.5", 2.5, 0),
        (2.5, "3", -1),
        ("true", True, 0),
        ("nope", True, -1),
        ("nope", False, 0),
        (True, False, 1),
        (False, True, -1),
        (True, 1, -1),
        (1, True, -1),
        (1.0, False, -1),
        ("b", "a", 1),
    ],
)
def test_java_compare(lv: object, rv: object, expected: int) -> None:
    assert java_compare(lv, rv) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("lv", "rv"),
    [(True, "true"), (False, "x"), ("x", 1), (1, "x"), ("1.5", 1), ("3000000000", 1), ("x", 1.0)],
)
def test_java_compare_raises(lv: object, rv: object) -> None:
    with pytest.raises(FilterEvaluationError):
        java_compare(lv, rv)  # type: ignore[arg-type]


def test_java_negate_and_type_names() -> None:
    assert java_negate(5) == -5 and type(java_negate(5)) is int
    neg = java_negate(JavaLong(5))
    assert neg == -5 and type(neg) is JavaLong
    assert math.copysign(1.0, java_negate(0.0)) == -1.0  # type: ignore[arg-type]
    assert java_negate("5") is None
    assert java_negate(True) is None
    assert java_negate(None) is None
    assert [type_name(v) for v in (None, True, 1, JavaLong(1), 1.0, "s")] == [
        "null",
        "Boolean",
        "Integer",
        "Long",
        "Double",
        "String",
    ]
    assert repr(JavaLong(3)) == "3L"


_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?)",
    re.ASCII,
)


def reference_double(s: str) -> float | None:
    """Double.valueOf per its Javadoc grammar (None: NumberFormatException)."""
    t = s.strip("".join(map(chr, range(0x21))))
    if not _JAVA_DOUBLE.fullmatch(t):
        return None
    if t[-1] in "fFdD" and "N" not in t and "y" not in t:
        t = t[:-1]
    if "x" in t.lower():
        try:
            return float.fromhex(t)
        except OverflowError:
            return -math.inf if t.startswith("-") else math.inf
    return float(t)


number_text = st.text(alphabet="0123456789.eE+-_ \t\x00xXpPfFdDaNInity\u0663\u00a0", max_size=12)


@given(st.one_of(number_text, st.floats().map(repr), st.integers().map(str)))
def test_double_value_of_matches_reference_grammar(s: str) -> None:
    expected = reference_double(s)
    if expected is None:
        with pytest.raises(FilterEvaluationError):
            double_value_of(s)
    else:
        got = double_value_of(s)
        assert double_compare(got, expected) == 0, (s, got, expected)


@given(st.one_of(number_text, st.integers(-(2**65), 2**65).map(str)))
def test_integer_value_of_matches_reference_grammar(s: str) -> None:
    m = re.fullmatch(r"[+-]?\d+", s)  # Unicode decimal digits, like Character.digit(c, 10)
    expected = int(s) if m and -(2**31) <= int(s) < 2**31 else None
    if expected is None:
        with pytest.raises(FilterEvaluationError):
            integer_value_of(s)
    else:
        assert integer_value_of(s) == expected
