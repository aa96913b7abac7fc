"""SQL92 filter: what parses, how it groups, and where syntax errors point."""

from __future__ import annotations

import pickle

import pytest

from rocketq.filter import FilterSyntaxError, SqlFilter, compile_sql92


def explain(expr: str) -> str:
    return compile_sql92(expr).explain()


# --- accepted syntax ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "expr",
    [
        # the expressions of RocketMQ's own ParserTest / ExpressionTest
        "a=3 and b<>4 And c>5 AND d<=4",
        "a=3  and    b<>4 And c>5 AND d<=4",
        "a=3 or b<>4 Or c>5 OR d<=4",
        "a in ('3', '4', '5')",
        "(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))",
        "(a between 2 and 10) AND (b not between 6 and 9)",
        "a is null",
        "a is not null",
        "a <= now",
        "a=TRUE OR b=FALSE",
        "TAGS is not null and TAGS='''''tag'''''",
        "a > 3.1E10",
        # more
        "TRUE",
        "FALSE",
        "NULL",
        "a",
        "NOT a",
        "$weird_Name$1 = 'x'",
        "_a = 1",
        "notes = 1",  # keyword prefix makes an identifier
        "a > -5",
        "a > +5",
        "a > - -5",
        "a > 5L",
        "a > 5l",
        "a > 0",
        "a > 0.0",
        "a > .5",
        "a > 5.",
        "a > 5e3",
        "a > 5E+3",
        "a > 5.5e-3",
        "a > 9223372036854775807",
        "a = ''",
        "a = 'multi\nline'",
        "a=1AND b=2",  # JavaCC splits 1AND into 1 and AND
        "a = 1 -- trailing comment",
        "a = 1 -- comment\n AND b = 2",
        "/* leading */ a = 1 /* inner ** comment */ AND b = 2",
        "\t a\r\n=\f1 ",
        "a = 1 = TRUE",
        "a IS NULL = TRUE",
        "'x' = TRUE",
        "1 = TRUE",
        "a = -'x'",
        "a > -'x'",
        "a BETWEEN -10 AND -20",  # negations are not constants for Java's bounds check
        "a NOT BETWEEN 10 AND 2",  # Java only checks BETWEEN bounds
        "a BETWEEN b AND c",
        "(a) IN ('x')",
        "+a IN ('x')",
        "NOT NULL",
        "NULL IS NULL",
        "5 IS NULL",
        "NOT a IS NULL",
        "a > b IS NULL",  # IS NULL accepts any operand, even a boolean
    ],
)
def test_accepts(expr: str) -> None:
    f = compile_sql92(expr)
    assert isinstance(f, SqlFilter)
    assert f.source == expr


def test_keywords_are_case_insensitive() -> None:
    assert explain("a BETWEEN 1 AND 2 OR b IS NOT NULL") == explain("a between 1 and 2 oR b iS nOt NuLl")
    assert explain("a NOT IN ('x')") == explain("a not in ('x')")
    assert explain("a = true") == "(a = TRUE)"
    assert explain("a = False") == "(a = FALSE)"


def test_property_names_are_case_sensitive() -> None:
    f = compile_sql92("a = '1'")
    assert f.matches({"a": "1"})
    assert not f.matches({"A": "1"})
    assert compile_sql92("A = 1 AND a = 2").property_names == {"A", "a"}


# --- grouping / precedence ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expr", "tree"),
    [
        ("a = 1 OR b = 2 AND c = 3", "((a = 1) OR ((b = 2) AND (c = 3)))"),
        ("a = 1 AND b = 2 OR c = 3", "(((a = 1) AND (b = 2)) OR (c = 3))"),
        ("(a = 1 OR b = 2) AND c = 3", "(((a = 1) OR (b = 2)) AND (c = 3))"),
        ("a = 1 OR b = 2 OR c = 3", "(((a = 1) OR (b = 2)) OR (c = 3))"),
        ("NOT a = 1 AND b = 2", "(((NOT a) = 1) AND (b = 2))"),
        ("NOT (a = 1) AND b = 2", "((NOT (a = 1)) AND (b = 2))"),
        ("NOT (a = 1 AND b = 2)", "(NOT ((a = 1) AND (b = 2)))"),
        ("NOT a = 'x'", "((NOT a) = 'x')"),  # NOT binds tighter than '=' in RocketMQ's grammar
        ("NOT NOT a", "(NOT (NOT a))"),
        ("a > 1 = TRUE", "((a > 1) = TRUE)"),  # ordering binds tighter than equality
        ("a = b = c", "((a = b) = c)"),
        ("a IS NULL = TRUE", "((a IS NULL) = TRUE)"),
        ("a <> 1", "(NOT (a = 1))"),
        ("a IS NOT NULL", "(NOT (a IS NULL))"),
        ("a BETWEEN 1 AND 2", "((a >= 1) AND (a <= 2))"),
        ("a NOT BETWEEN 1 AND 2", "((a < 1) OR (a > 2))"),
        ("a BETWEEN 1 AND 2 AND b = 3", "(((a >= 1) AND (a <= 2)) AND (b = 3))"),
        ("a IN ('x', 'it''s')", "(a IN ('x', 'it''s'))"),
        ("a NOT IN ('x')", "(a NOT IN ('x'))"),
        ("a > -5", "(a > (-5))"),
        ("a > +5", "(a > 5)"),
        ("a > - - 5", "(a > (-(-5)))"),
        ("-a < 5", "((-a) < 5)"),
        ("a > 2147483647", "(a > 2147483647)"),
        ("a > 5L", "(a > 5)"),
        ("a > 1.5e3", "(a > 1500.0)"),
        ("a", "a"),
        ("((a = 1))", "(a = 1)"),
    ],
)
def test_grouping(expr: str, tree: str) -> None:
    assert explain(expr) == tree


def test_explain_output_reparses_to_itself() -> None:
    for expr in ("a = 1 OR b = 2 AND NOT c IS NULL", "a NOT BETWEEN -1 AND 2.5 OR b IN ('x', 'y''z')"):
        once = explain(expr)
        assert explain(once) == once


# --- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expr", "position", "fragment"),
    [
        ("", 0, "empty filter expression"),
        ("   ", 0, "empty filter expression"),
        ("-- only a comment", 0, "empty filter expression"),
        ("a >", 3, "found end of input"),
        ("a AND", 5, "found end of input"),
        ("a = 1 b = 2", 6, "found identifier b"),  # Java silently ignores trailing tokens
        ("a = 1 NOT", 6, "found keyword NOT"),
        ("a = 1)", 5, "found ')'"),
        ("(a = 1", 6, "expected ')'"),
        ("()", 1, "expected an operand"),
        ("a = = 1", 4, "found '='"),
        ("a == 1", 2, "'=='"),
        ("a != 1", 2, "<>"),
        ('a = "x"', 4, "single quotes"),
        ("a && b", 2, "use AND"),
        ("a || b", 2, "use OR"),
        ("a = 1 + 2", 6, "found '+'"),
        ("a * 2 > 1", 2, "arithmetic"),
        ("a.b = 1", 1, "dots"),
        ("a = 1;", 5, "unexpected character ';'"),
        ("\u00e0 = 1", 0, "ASCII"),
        ("a =\u00a01", 3, "whitespace"),
        ("a = 'abc", 4, "unterminated string literal"),
        ("a = 'it''s", 4, "unterminated string literal"),
        ("a = 1 /* note", 6, "unterminated comment"),
        ("a = 007", 4, "leading zeros"),
        ("a = 0x1F", 4, "hexadecimal"),
        ("a = 0L", 5, "found identifier L"),
        ("a > 9223372036854775808", 4, "out of range"),
        ("a > 1e999", 4, "out of range"),
        ("a LIKE 'x%'", 2, "found identifier LIKE"),
        ("a CONTAINS 'x'", 2, "found identifier CONTAINS"),  # 5.x only
        ("a STARTSWITH 'x'", 2, "found identifier STARTSWITH"),
        ("IS = 1", 0, "found keyword IS"),
        # not a boolean
        ("'abc'", 0, "a filter needs a boolean expression"),
        ("5", 0, "a filter needs a boolean expression"),
        ("-a", 0, "a filter needs a boolean expression"),
        ("(1)", 1, "a filter needs a boolean expression"),
        ("a = 1 AND 5", 10, "AND needs a boolean expression"),
        ("'x' OR a = 1", 0, "OR needs a boolean expression"),
        ("NOT 5", 4, "NOT needs a boolean expression"),
        ("NOT -a", 4, "NOT needs a boolean expression"),
        # ordering operands
        ("a > 'x'", 4, "'x' cannot be compared with '>'"),
        ("'x' < a", 0, "cannot be compared with '<'"),
        ("a >= TRUE", 5, "cannot be compared with '>='"),
        ("a <= NULL", 5, "NULL cannot be compared"),
        ("a > (b = 1)", 5, "boolean expression"),
        ("a > b > c", 0, "boolean expression"),
        ("NOT a > 1", 0, "NOT binds tighter than comparisons"),
        # equality operands
        ("a = NULL", 4, "use IS NULL"),
        ("NULL <> a", 0, "use IS NULL"),
        ("TRUE = 1", 0, "TRUE cannot be compared with 1"),
        ("FALSE = 'x'", 0, "FALSE cannot be compared with 'x'"),
        # BETWEEN
        ("a BETWEEN 10 AND 0", 10, "greater than upper bound"),
        ("a BETWEEN 2.5 AND 2", 10, "greater than upper bound"),
        ("a BETWEEN NULL AND 1", 10, "cannot be NULL"),
        ("a BETWEEN 1 AND NULL", 16, "cannot be NULL"),
        ("a BETWEEN 1 OR 2", 12, "expected AND"),
        ("a BETWEEN 'a' AND 'b'", 10, "cannot be compared"),
        ("a BETWEEN 1 AND 'b'", 10, "cannot be compared"),
        ("a NOT BETWEEN 'a' AND 'b'", 14, "cannot be compared"),
        ("a BETWEEN (b = 1) AND 2", 11, "boolean expression"),
        # IN
        ("a IN ()", 6, "string literal"),
        ("a IN (1)", 6, "string literal"),
        ("a IN (b)", 6, "string literal"),
        ("a IN ('x'", 9, "',' or ')'"),
        ("a IN ('x' 'y')", 10, "',' or ')'"),
        ("a IN ('x',)", 10, "string literal"),
        ("a IN 'x'", 5, "'(' after IN"),
        ("1 IN ('x')", 0, "must be a property name"),
        ("-a NOT IN ('x')", 0, "NOT IN must be a property name"),
        ("a NOT x", 2, "found keyword NOT"),
        # IS
        ("a IS 5", 5, "NULL or NOT NULL"),
        ("a IS NOT 5", 9, "NULL after IS NOT"),
        ("a IS", 4, "NULL or NOT NULL"),
    ],
)
def test_syntax_errors(expr: str, position: int, fragment: str) -> None:
    with pytest.raises(FilterSyntaxError) as info:
        compile_sql92(expr)
    err = info.value
    assert fragment in err.message
    assert err.position == position, str(err)
    assert err.source == expr


def test_error_message_has_caret_excerpt() -> None:
    with pytest.raises(FilterSyntaxError) as info:
        compile_sql92("a = 1 AND b > 'x'")
    text = str(info.value)
    lines = text.splitlines()
    assert lines[0].startswith("'x' cannot be compared with '>'")
    assert "at position 14" in lines[0]
    assert lines[1] == "    a = 1 AND b > 'x'"
    assert lines[2] == "    " + " " * 14 + "^"


def test_error_on_second_line_reports_line_and_column() -> None:
    expr = "a = 1 AND\n  b >"
    with pytest.raises(FilterSyntaxError) as info:
        compile_sql92(expr)
    err = info.value
    assert err.position == 15
    text = str(err)
    assert "(line 2, column 6)" in text
    assert text.splitlines()[1] == "      b >"
    assert text.splitlines()[2] == "    " + " " * 5 + "^"


def test_error_excerpt_of_long_expression_is_windowed() -> None:
    expr = " AND ".join(f"p{i} = {i}" for i in range(40)) + " AND q > 'x'"
    with pytest.raises(FilterSyntaxError) as info:
        compile_sql92(expr)
    err = info.value
    _, excerpt, caret = str(err).splitlines()
    assert excerpt.startswith("    ...")
    assert caret.index("^") - 4 == excerpt[4:].index("'x'")
    assert len(excerpt) < 100


def test_filter_syntax_error_is_a_value_error_and_pickles() -> None:
    with pytest.raises(ValueError):
        compile_sql92("a >")
    err = FilterSyntaxError("boom", 3, "a > ")
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.message, copy.position, copy.source, str(copy)) == (err.message, 3, "a > ", str(err))
    plain = FilterSyntaxError("boom", 7)
    assert str(plain) == "boom at position 7"


def test_compile_rejects_non_strings() -> None:
    with pytest.raises(TypeError):
        compile_sql92(None)  # type: ignore[arg-type]


def test_compile_is_cached_and_filters_compare_by_source() -> None:
    f1 = compile_sql92("a = 1")
    assert compile_sql92("a = 1") is f1
    assert SqlFilter("a = 1") == f1
    assert hash(SqlFilter("a = 1")) == hash(f1)
    assert SqlFilter("a = 1") != SqlFilter("a=1")
    assert repr(f1) == "SqlFilter('a = 1')"


def test_property_names() -> None:
    f = compile_sql92("a = 1 AND (b IS NULL OR c IN ('x')) AND NOT d AND -e > 1 AND TAGS = 'x'")
    assert f.property_names == {"a", "b", "c", "d", "e", "TAGS"}
    assert compile_sql92("TRUE").property_names == frozenset()
