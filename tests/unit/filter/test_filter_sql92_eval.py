"""SQL92 filter evaluation: every operator, three-valued logic and RocketMQ 4.9's type coercion.

``ev`` returns the three-valued result (True / False / None for unknown) or ``ERR`` where the Java broker's
evaluation throws (the message then does not match).
"""

from __future__ import annotations

import pytest

from rocketq.filter import FilterEvaluationError, compile_sql92

ERR = "error"
Outcome = bool | None | str


def ev(expr: str, props: dict[str, str] | None = None, **kw: str) -> Outcome:
    f = compile_sql92(expr)
    p = dict(props or {}, **kw)
    try:
        result = f.evaluate(p)
    except FilterEvaluationError:
        assert f.matches(p) is False
        return ERR
    assert f.matches(p) is (result is True)
    return result


def check(expr: str, cases: list[tuple[dict[str, str], Outcome]]) -> None:
    for props, expected in cases:
        assert ev(expr, props) == expected, (expr, props)


# --- equality -------------------------------------------------------------------------------------
def test_equal_string() -> None:
    check("a = 'x'", [({"a": "x"}, True), ({"a": "y"}, False), ({"a": "X"}, False), ({}, None)])
    check("a = ''", [({"a": ""}, True), ({"a": " "}, False), ({}, None)])
    check("a = 'it''s'", [({"a": "it's"}, True)])


def test_equal_null_asymmetry_like_java() -> None:
    # ComparisonExpression.doCreateEqual: null on the left -> unknown, null only on the right -> FALSE
    check("'x' = a", [({"a": "x"}, True), ({"a": "y"}, False), ({}, False)])
    check("NOT ('x' = a)", [({}, True)])
    check("NOT (a = 'x')", [({}, None)])
    check("'x' <> a", [({}, True), ({"a": "x"}, False)])
    check("a <> 'x'", [({}, None), ({"a": "y"}, True), ({"a": "x"}, False)])


def test_equal_two_properties() -> None:
    check(
        "a = b",
        [
            ({}, True),  # both null: Java's `lv == rv`
            ({"a": "1"}, False),
            ({"b": "1"}, None),
            ({"a": "1", "b": "1"}, True),
            ({"a": "1.0", "b": "1"}, False),  # two Strings compare as text
            ({"a": "3.14", "b": "3.14"}, True),
        ],
    )
    check("a <> b", [({"a": "3.14", "b": "3.141"}, True), ({"a": "3.14", "b": "3.14"}, False)])


def test_equal_integer_literal_parses_property_as_java_integer() -> None:
    check(
        "a = 1",
        [
            ({"a": "1"}, True),
            ({"a": "+1"}, True),
            ({"a": "0001"}, True),
            ({"a": "\u0661"}, True),  # ARABIC-INDIC DIGIT ONE: Java's Character.digit accepts it
            ({"a": "2"}, False),
            ({"a": "-1"}, False),
            ({}, None),
            ({"a": "1.0"}, ERR),
            ({"a": "x"}, ERR),
            ({"a": " 1"}, ERR),  # Integer.valueOf does not trim
            ({"a": ""}, ERR),
            ({"a": "1_0"}, ERR),
            ({"a": "3000000000"}, ERR),  # does not fit an Integer
        ],
    )
    check("1 = a", [({"a": "1"}, True), ({"a": "x"}, ERR), ({}, False)])
    check("a <> 1", [({"a": "1"}, False), ({"a": "2"}, True), ({"a": "x"}, ERR), ({}, None)])


def test_equal_long_literal() -> None:
    check("a = 3000000000", [({"a": "3000000000"}, True), ({"a": "1"}, False), ({"a": "1e3"}, ERR)])
    check("a = 2147483648", [({"a": "2147483648"}, True)])
    check("a = 2147483647", [({"a": "2147483647"}, True), ({"a": "2147483648"}, ERR)])
    check(
        "a = 9223372036854775807",
        [({"a": "9223372036854775807"}, True), ({"a": "9223372036854775808"}, ERR)],
    )
    check("a = -2147483648", [({"a": "-2147483648"}, True)])  # a negated Long
    check("a = -5", [({"a": "-5"}, True), ({"a": "5"}, False)])


def test_equal_double_literal_parses_property_as_java_double() -> None:
    check(
        "a = 1.0",
        [
            ({"a": "1"}, True),
            ({"a": "1.0"}, True),
            ({"a": "1e0"}, True),
            ({"a": " 1.0\t"}, True),  # Double.valueOf trims
            ({"a": "1.0f"}, True),
            ({"a": "1d"}, True),
            ({"a": "0x1p0"}, True),  # hex float
            ({"a": "1.5"}, False),
            ({"a": "NaN"}, False),
            ({"a": "x"}, ERR),
            ({"a": "1,0"}, ERR),
            ({"a": "inf"}, ERR),  # Python spelling, not Java's
            ({"a": "1_0"}, ERR),
            ({}, None),
        ],
    )
    check("a = -0.0", [({"a": "-0"}, True), ({"a": "0"}, False), ({"a": "0.0"}, False)])
    check("a = 0.0", [({"a": "0"}, True), ({"a": "-0.0"}, False)])


def test_equal_boolean_literal() -> None:
    check(
        "a = TRUE",
        [
            ({"a": "true"}, True),
            ({"a": "TRUE"}, True),
            ({"a": "True"}, True),
            ({"a": "yes"}, False),
            ({"a": "1"}, False),
            ({"a": " true"}, False),
            ({}, None),
        ],
    )
    check("a = FALSE", [({"a": "false"}, True), ({"a": "whatever"}, True), ({"a": "true"}, False)])
    # From RocketMQ's ExpressionTest.testEvaluate_boolean
    check("a=TRUE OR b=FALSE", [({"a": "true", "b": "false"}, True), ({"a": "false", "b": "true"}, False)])


def test_boolean_constant_on_the_left_of_a_property_throws_like_java() -> None:
    # Java: __compare(Boolean, String) casts the Boolean to String -> ClassCastException.
    check("TRUE = a", [({"a": "true"}, ERR), ({"a": "x"}, ERR), ({}, False)])
    check("FALSE <> a", [({"a": "true"}, ERR), ({}, True)])


def test_equal_constants() -> None:
    assert ev("1 = 1") is True
    assert ev("1 = 2") is False
    assert ev("1 = 1.0") is True  # Integer promoted to Double
    assert ev("3000000000 = 3000000000.0") is True
    assert ev("1 = 1L") is True
    assert ev("'1' = 1") is True  # String parsed as Integer
    assert ev("1 = '1'") is True
    assert ev("'a' = 1") == ERR
    assert ev("'x' = 'x'") is True
    assert ev("TRUE = TRUE") is True
    assert ev("TRUE = FALSE") is False
    assert ev("1 = TRUE") is False  # Integer vs Boolean: Java answers -1
    assert ev("1.5 = TRUE") is False
    assert ev("'true' = TRUE") is True
    assert ev("- 0.0 = 0.0") is False  # Double.compareTo separates the zeros


def test_equal_on_booleans() -> None:
    check("a = 1 = TRUE", [({"a": "1"}, True), ({"a": "2"}, False), ({}, None)])
    check("(a = 1) = (b = 1)", [({"a": "1", "b": "1"}, True), ({"a": "1", "b": "2"}, False)])
    check("a IS NULL = FALSE", [({"a": "x"}, True), ({}, False)])
    check("(a = 1) = b", [({"a": "1", "b": "true"}, ERR)])  # Boolean vs String


def test_equal_negated_non_number_is_null() -> None:
    check("a = -'x'", [({}, True), ({"a": "x"}, False)])
    check("a = -b", [({}, True), ({"a": "1", "b": "1"}, False), ({"b": "1"}, True)])


# --- ordering -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("op", "results"),
    [
        (">", (False, False, True)),
        (">=", (False, True, True)),
        ("<", (True, False, False)),
        ("<=", (True, True, False)),
    ],
)
def test_ordering_operators_integer(op: str, results: tuple[bool, bool, bool]) -> None:
    for value, expected in zip(("4", "5", "6"), results, strict=True):
        assert ev(f"a {op} 5", a=value) is expected
        assert ev(f"a {op} 5.0", a=value) is expected
        assert ev(f"a {op} b", a=value, b="5") is expected
    # mirrored: 5 OP a  ==  a OP' 5
    mirrored = {">": "<", ">=": "<=", "<": ">", "<=": ">="}[op]
    for value in ("4", "5", "6"):
        assert ev(f"5 {op} a", a=value) is ev(f"a {mirrored} 5", a=value)
    assert ev(f"a {op} 5", {}) is None
    assert ev(f"a {op} 5", a="x") == ERR


def test_ordering_integer_literal_coercion() -> None:
    check(
        "a > 5",
        [
            ({"a": "-7"}, False),
            ({"a": "10"}, True),
            ({"a": "5.5"}, ERR),  # Integer.valueOf("5.5") throws
            ({"a": "3000000000"}, ERR),
            ({"a": "1e3"}, ERR),
        ],
    )
    check("a > 2147483648", [({"a": "3000000000"}, True), ({"a": "1"}, False)])  # Long literal
    check("a < -5", [({"a": "-6"}, True), ({"a": "-5"}, False)])
    check("a > - -5", [({"a": "6"}, True), ({"a": "5"}, False)])


def test_ordering_double_literal_coercion() -> None:
    check(
        "a > 5.0",
        [
            ({"a": "5.5"}, True),
            ({"a": "1e1"}, True),
            ({"a": " 6 "}, True),
            ({"a": "NaN"}, True),  # Double.compareTo puts NaN above everything
            ({"a": "Infinity"}, True),
            ({"a": "-Infinity"}, False),
            ({"a": "4.99"}, False),
            ({"a": "five"}, ERR),
        ],
    )
    check("a >= 0.0", [({"a": "0"}, True), ({"a": "-0.0"}, False)])  # -0.0 < 0.0
    check("a < 0.0", [({"a": "-0.0"}, True)])
    check("a > 3.14", [({"a": "3.1415"}, True)])  # ExpressionTest.testEvaluate_floatNumber
    check("a > 3.1E10", [({"a": str(3.1415 * 10**10)}, True)])  # testEvaluate_exponent


def test_ordering_two_strings_compares_as_doubles() -> None:
    check(
        "a > b",
        [
            ({"a": "10", "b": "9"}, True),  # numeric, not lexicographic
            ({"a": "20", "b": "10"}, True),
            ({"a": "10", "b": "20"}, False),
            ({"a": "1.5", "b": "1"}, True),
            ({"a": "x", "b": "1"}, ERR),
            ({"a": "1", "b": "x"}, ERR),
            ({"a": "10"}, None),
            ({"b": "10"}, None),
        ],
    )


def test_ordering_with_null_operands() -> None:
    check("a > -'x'", [({"a": "1"}, None), ({}, None)])
    check("-a < 5", [({"a": "1"}, None)])  # negating a String gives null
    check("a > -b", [({"a": "1", "b": "1"}, None)])


def test_ordering_mixed_constants() -> None:
    assert ev("1 < 2") is True
    assert ev("2 < 1.5") is False
    assert ev("3000000000 > 1") is True
    assert ev("1.5 > 1") is True
    assert ev("-1 < 0") is True


# --- BETWEEN --------------------------------------------------------------------------------------
def test_between() -> None:
    check(
        "a BETWEEN 2 AND 10",
        [
            ({"a": "1"}, False),
            ({"a": "2"}, True),
            ({"a": "5"}, True),
            ({"a": "10"}, True),
            ({"a": "11"}, False),
            ({}, None),
            ({"a": "abc"}, ERR),
        ],
    )
    check(
        "a NOT BETWEEN 2 AND 10",
        [({"a": "1"}, True), ({"a": "2"}, False), ({"a": "10"}, False), ({"a": "11"}, True), ({}, None)],
    )
    check("a NOT BETWEEN 10 AND 2", [({"a": "5"}, True)])  # accepted, no bounds check
    check("a BETWEEN -10 AND -20", [({"a": "-15"}, False)])
    check("a BETWEEN 1 AND 2.5", [({"a": "2"}, True), ({"a": "1.5"}, ERR)])  # a >= 1 parses an Integer
    check("a BETWEEN 1.0 AND 2.5", [({"a": "1.5"}, True)])
    check(
        "a BETWEEN b AND c", [({"a": "5", "b": "1", "c": "9"}, True), ({"a": "5", "b": "6", "c": "9"}, False)]
    )
    # ExpressionTest.testEvaluate_stringCompare
    check("a between up and low", [({"a": "3.14"}, None), ({"a": "3.14", "up": "up", "low": "low"}, ERR)])
    check("key is not null and key between 0 and 100", [({"key": "con"}, ERR)])


# --- IN -------------------------------------------------------------------------------------------
def test_in() -> None:
    check(
        "a IN ('3', '4', '5')",
        [({"a": "3"}, True), ({"a": "5"}, True), ({"a": "6"}, False), ({"a": "03"}, False), ({}, None)],
    )
    check(
        "a NOT IN ('3', '4', '5')",
        [({"a": "3"}, False), ({"a": "6"}, True), ({"a": "03"}, True), ({}, None)],
    )
    many = ", ".join(f"'{i}'" for i in range(50))
    check(f"a IN ({many})", [({"a": "49"}, True), ({"a": "50"}, False)])
    check("a IN ('it''s', '')", [({"a": "it's"}, True), ({"a": ""}, True), ({"a": "its"}, False)])
    check("TAGS IN ('TagA', 'TagB')", [({"TAGS": "TagA"}, True), ({"TAGS": "TagC"}, False)])


# --- IS NULL --------------------------------------------------------------------------------------
def test_is_null() -> None:
    check("a IS NULL", [({}, True), ({"a": ""}, False), ({"a": "x"}, False), ({"b": "x"}, True)])
    check("a IS NOT NULL", [({}, False), ({"a": ""}, True)])
    check("(a > 5) IS NULL", [({}, True), ({"a": "6"}, False), ({"a": "x"}, ERR)])
    check("(a > 5) IS NOT NULL", [({}, False), ({"a": "1"}, True)])
    assert ev("NULL IS NULL") is True
    assert ev("5 IS NULL") is False
    assert ev("-'x' IS NULL") is True
    # ExpressionTest: nullOr / equal
    check("a is null OR a='hello'", [({}, True), ({"a": "hello"}, True), ({"a": "abc"}, False)])
    check("a is not null and a='hello'", [({"a": "hello"}, True), ({}, False)])


def test_string_with_quotes_from_java_test() -> None:
    check("TAGS is not null and TAGS='''''tag'''''", [({"TAGS": "''tag''"}, True)])


# --- logic ----------------------------------------------------------------------------------------
V = {"TRUE": True, "FALSE": False, "NULL": None}
AND_TABLE = {
    ("TRUE", "TRUE"): True,
    ("TRUE", "FALSE"): False,
    ("TRUE", "NULL"): None,
    ("FALSE", "TRUE"): False,
    ("FALSE", "FALSE"): False,
    ("FALSE", "NULL"): False,
    ("NULL", "TRUE"): None,
    ("NULL", "FALSE"): False,
    ("NULL", "NULL"): None,
}
OR_TABLE = {
    ("TRUE", "TRUE"): True,
    ("TRUE", "FALSE"): True,
    ("TRUE", "NULL"): True,
    ("FALSE", "TRUE"): True,
    ("FALSE", "FALSE"): False,
    ("FALSE", "NULL"): None,
    ("NULL", "TRUE"): True,
    ("NULL", "FALSE"): None,
    ("NULL", "NULL"): None,
}


@pytest.mark.parametrize(("pair", "expected"), sorted(AND_TABLE.items()))
def test_and_truth_table(pair: tuple[str, str], expected: bool | None) -> None:
    assert ev(f"{pair[0]} AND {pair[1]}") is expected
    # the same through properties: a = 'x' is TRUE/FALSE/unknown
    props = {}
    for name, lit in zip("ab", pair, strict=True):
        if V[lit] is not None:
            props[name] = "x" if V[lit] else "y"
    assert ev("a = 'x' AND b = 'x'", props) is expected


@pytest.mark.parametrize(("pair", "expected"), sorted(OR_TABLE.items()))
def test_or_truth_table(pair: tuple[str, str], expected: bool | None) -> None:
    assert ev(f"{pair[0]} OR {pair[1]}") is expected


@pytest.mark.parametrize(("lit", "expected"), [("TRUE", False), ("FALSE", True), ("NULL", None)])
def test_not_truth_table(lit: str, expected: bool | None) -> None:
    assert ev(f"NOT {lit}") is expected
    assert ev(f"NOT NOT {lit}") is V[lit]


def test_long_and_or_chains() -> None:
    check(
        "a = 1 AND b = 2 AND c = 3 AND d = 4",
        [
            ({"a": "1", "b": "2", "c": "3", "d": "4"}, True),
            ({"a": "1", "b": "2", "c": "3"}, None),
            ({"a": "1", "b": "0", "c": "x"}, False),  # stops before the bad c
            ({"b": "0"}, False),
        ],
    )
    check(
        "a = 1 OR b = 2 OR c = 3 OR d = 4",
        [({"d": "4"}, True), ({"a": "0"}, None), ({"a": "0", "b": "0", "c": "0", "d": "0"}, False)],
    )
    # ExpressionTest and/or expressions
    check("a=3 and b<>4 And c>5 AND d<=4", [({"a": "3", "b": "5", "c": "6", "d": "4"}, True)])
    check("a=3 or b<>4 Or c>5 OR d<=4", [({"a": "4", "b": "4", "c": "5", "d": "5"}, False)])


def test_errors_abort_the_whole_expression_unless_short_circuited() -> None:
    bad = {"a": "x", "b": "1"}
    assert ev("b = 1 OR a > 5", bad) is True  # short-circuit before the failing comparison
    assert ev("a > 5 OR b = 1", bad) == ERR  # Java throws on a > 5: no match at all
    assert ev("b = 2 AND a > 5", bad) is False
    assert ev("a > 5 AND b = 2", bad) == ERR
    f = compile_sql92("a > 5 OR b = 1")
    assert f.matches(bad) is False
    with pytest.raises(FilterEvaluationError, match="Integer"):
        f.evaluate(bad)


# --- NOT and bare properties ----------------------------------------------------------------------
def test_bare_property_is_a_boolean_cast() -> None:
    check("a", [({"a": "true"}, False), ({"a": "x"}, False), ({}, None)])  # a String is never a Boolean
    check("NOT a", [({"a": "true"}, True), ({"a": ""}, True), ({}, None)])
    check("a OR b = 1", [({"a": "true", "b": "1"}, True), ({"a": "true", "b": "2"}, False)])
    check("a AND TRUE", [({"a": "true"}, False), ({}, None)])


def test_not_binds_tighter_than_comparison() -> None:
    # RocketMQ's grammar makes NOT unary: NOT a = 'x' is (NOT a) = 'x' and can never be TRUE.
    check("NOT a = 'x'", [({"a": "y"}, ERR), ({"a": "x"}, ERR), ({}, None)])
    check("NOT (a = 'x')", [({"a": "y"}, True), ({"a": "x"}, False), ({}, None)])
    check("NOT a = TRUE", [({"a": "y"}, True), ({}, None)])  # (NOT a) = TRUE
    check("NOT a IS NULL", [({}, True), ({"a": "x"}, False)])  # (NOT a) IS NULL


def test_not_of_unknown_is_unknown() -> None:
    check("NOT (a > 5)", [({}, None), ({"a": "1"}, True), ({"a": "9"}, False)])
    check("NOT (a IN ('x'))", [({}, None), ({"a": "x"}, False)])


def test_constant_filters() -> None:
    assert compile_sql92("TRUE").matches({})
    assert not compile_sql92("FALSE").matches({"a": "1"})
    assert not compile_sql92("NULL").matches({})
    assert compile_sql92("NOT FALSE").matches({})


def test_comments_and_whitespace_do_not_change_meaning() -> None:
    props = {"a": "1", "b": "2"}
    assert ev("a = 1 -- note\nAND b = 2", props) is True
    assert ev("/* x */a/* y */=/* z */1 AND b = 2 -- end", props) is True
    assert ev("\ta\r\n=\f1", props) is True


def test_matches_accepts_any_mapping() -> None:
    from types import MappingProxyType

    f = compile_sql92("a = 'x' AND b IS NULL")
    assert f.matches(MappingProxyType({"a": "x"}))
    assert not f.matches(MappingProxyType({"a": "x", "b": ""}))
