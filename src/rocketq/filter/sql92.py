"""RocketMQ 4.9's SQL92 property filter (``enablePropertyFilter``, subscription ``expressionType=SQL92``).

``compile_sql92(expr)`` parses and checks an expression once and returns a :class:`SqlFilter` whose
``matches(props)`` runs a pre-built tree of closures over a message's properties (all values are strings).

Semantics follow Apache RocketMQ 4.9.8 ``filter/`` (``SelectorParser.jj`` and ``expression/*``) and the
broker's ``ExpressionMessageFilter``/``MessageEvaluationContext``; the decisions, in order of surprise:

Operators
    ``= <> > >= < <=``, ``[NOT] BETWEEN x AND y``, ``[NOT] IN ('s', ...)`` (string literals only, the left
    side must be a property), ``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT``, unary ``+``/``-``, parentheses.
    Keywords are case-insensitive, property names case-sensitive (``TAGS`` is just the property holding the
    tag).
    ``CONTAINS``, ``STARTSWITH`` and ``ENDSWITH`` arrived in RocketMQ 5.1.3 and are *not* in 4.9, nor here.
    There is no ``LIKE``, no ``!=``, no arithmetic and no hex/octal literal.

Precedence (loosest first)
    ``OR`` < ``AND`` < ``= <> IS`` < ``> >= < <= BETWEEN IN`` < unary ``+ - NOT``. ``NOT`` is a *unary*
    operator binding tighter than any comparison, exactly like the Java grammar: ``NOT a = 'x'`` means
    ``(NOT a) = 'x'`` (which never matches); write ``NOT (a = 'x')`` or ``a <> 'x'``. ``NOT a > 1`` is
    therefore a syntax error (a boolean cannot be ordered).

Literals
    ``123`` is a Java Integer when it fits 32 bits, else a Long (``123L`` too; more than 2**63-1 is an error);
    ``1.5``, ``1.``, ``.5``, ``1e3`` are Doubles; ``'it''s'`` is a String; ``TRUE``, ``FALSE``, ``NULL``.
    ``-5`` is a negation applied to ``5``.

Values and type coercion (``ComparisonExpression``)
    A property is ``null`` when absent, otherwise a String. Comparing a String with a number parses the String
    as *that number's type* with Java's ``Integer/Long/Double.valueOf``: ``a > 5`` with ``a = "3000000000"``
    or ``"1.5"`` fails (``5`` is an Integer), ``a > 5.0`` accepts ``"1.5"``, ``"1e3"``, ``" 7 "``, ``"NaN"``.
    Comparing a String with TRUE/FALSE uses ``Boolean.valueOf`` (``"TRUE"``/``"true"`` -> true, anything
    else -> false). Two Strings with ``>``/``<``... are both parsed as Doubles; two Strings with ``=`` are
    compared as text (``'1.0' = '1'`` is false, ``a = b`` compares the raw strings). Numbers promote
    Integer -> Long -> Double; Doubles order like Java's ``Double.compareTo`` (``-0.0 < 0.0``; NaN equals
    itself and is greater than everything). ``IN`` is plain string membership (no coercion).

Evaluation errors
    When a coercion fails (``NumberFormatException``), or a Boolean constant on the *left* of ``=`` meets a
    String property (Java's ``ClassCastException``, e.g. ``TRUE = a``), Java throws, and the broker logs the
    error and treats the message as not matching — the *whole* expression fails, even inside an ``OR`` whose
    other branch is true, unless that branch was evaluated first and short-circuited. ``matches`` returns
    ``False`` in that case; ``evaluate`` raises :class:`FilterEvaluationError`.

Null / unknown (three-valued logic)
    Ordering comparisons, ``BETWEEN``, ``IN`` and ``NOT IN`` with a null operand are *unknown*. ``=`` is
    asymmetric as in Java: ``a = 'x'`` with ``a`` absent is unknown, but ``'x' = a`` is FALSE, and ``a = b``
    with both absent is TRUE. ``<>`` is ``NOT (=)``. ``NOT unknown`` is unknown; ``AND``/``OR`` follow SQL
    (``FALSE AND unknown`` = FALSE, ``TRUE OR unknown`` = TRUE), evaluated left to right with short circuit.
    ``IS NULL`` / ``IS NOT NULL`` are never unknown. Only TRUE matches.

Booleans
    A bare property used as a boolean (``a``, ``NOT a``, ``a AND b = 1``) is unknown when absent and FALSE
    otherwise (a String is never a Boolean), so ``a`` alone never matches and ``NOT a`` matches any message
    having ``a``. ``TRUE``, ``FALSE`` and ``NULL`` are valid boolean operands; a string or number is not.

Compile-time checks (raised as :class:`FilterSyntaxError`, like the Java factories)
    a non-boolean where a boolean is needed (top level, AND/OR/NOT operands); a string, boolean or NULL
    constant, or a boolean expression, as an operand of ``> >= < <=`` / ``BETWEEN``; ``NULL`` as an operand of
    ``=``/``<>``; ``TRUE``/``FALSE`` constant ``=`` a non-boolean constant; constant ``BETWEEN`` bounds that
    are NULL, incomparable or reversed (``NOT BETWEEN`` is not checked, as in Java); ``IN`` on a non-property;
    integer literal overflow; infinite float literal.

Deliberate deviations from Java 4.9.8 (all make errors visible rather than silent)
    * Trailing input is an error. Java's parser stops at the first token that cannot continue the expression
      and silently ignores the rest, so ``a = 1 b = 2`` means ``a = 1`` and ``a = 007`` means ``a = 0``.
    * ``0.0`` (and float literals underflowing to 0) are accepted; Java rejects them ("less than
      Double.MIN_VALUE"), which is a bug.
    * ``-- comment`` may end at the end of the input (Java needs a line break; there it would lex as ``- -``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from rocketq.filter._errors import FilterEvaluationError, FilterSyntaxError
from rocketq.filter._sql_eval import Evaluator, compile_tree, property_names
from rocketq.filter._sql_parser import Node, dump, parse

__all__ = ["FilterEvaluationError", "FilterSyntaxError", "SqlFilter", "compile_sql92"]


class SqlFilter:
    """A compiled SQL92 filter expression. Immutable and thread-safe; compare/hash by source text."""

    __slots__ = ("_evaluator", "_tree", "property_names", "source")

    source: str
    property_names: frozenset[str]

    def __init__(self, source: str) -> None:
        tree = parse(source)
        self.source = source
        self._tree: Node = tree
        self._evaluator: Evaluator = compile_tree(tree)
        #: every property name the expression reads
        self.property_names = property_names(tree)

    def matches(self, props: Mapping[str, str]) -> bool:
        """Whether a message with these properties passes the filter (TRUE only; unknown or an evaluation
        error is no match, as on the Java broker)."""
        try:
            return self._evaluator(props) is True
        except FilterEvaluationError:
            return False

    def evaluate(self, props: Mapping[str, str]) -> bool | None:
        """The three-valued result: True, False or None (unknown). Raises :class:`FilterEvaluationError` where
        the Java evaluation throws."""
        result = self._evaluator(props)
        assert result is None or type(result) is bool
        return result

    def explain(self) -> str:
        """The parsed tree, fully parenthesised, with Java's desugarings applied (``<>`` -> ``NOT =`` ...)."""
        return dump(self._tree)

    def __repr__(self) -> str:
        return f"SqlFilter({self.source!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SqlFilter) and other.source == self.source

    def __hash__(self) -> int:
        return hash(self.source)


@lru_cache(maxsize=256)
def _compile_cached(expr: str) -> SqlFilter:
    return SqlFilter(expr)


def compile_sql92(expr: str) -> SqlFilter:
    """Parse and check a SQL92 filter expression. Raises :class:`FilterSyntaxError` (a ``ValueError``) with
    the position of the problem. Results are cached (like Java's parse cache), so calling it per pull is
    cheap.
    """
    if not isinstance(expr, str):
        raise TypeError(f"expression must be a str, not {type(expr).__name__}")
    return _compile_cached(expr)
