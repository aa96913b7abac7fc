"""Recursive-descent parser for RocketMQ 4.9's SQL92 filter, mirroring ``SelectorParser.jj`` production by
production, including the compile-time checks the Java expression factories make (``ComparisonExpression``,
``UnaryExpression``, ``ConstantExpression``, ``SelectorParser.asBooleanExpression``).

Grammar (lowest precedence first; every binary level is left-associative)::

    selector   := or EOF
    or         := and ( OR and )*
    and        := equality ( AND equality )*
    equality   := comparison ( '=' comparison | '<>' comparison | IS NULL | IS NOT NULL )*
    comparison := unary ( ('>' | '>=' | '<' | '<=') unary
                        | [NOT] BETWEEN unary AND unary
                        | [NOT] IN '(' STRING ( ',' STRING )* ')' )*
    unary      := '+' unary | '-' unary | NOT unary | primary
    primary    := literal | ID | '(' or ')'
    literal    := STRING | INT | FLOAT | TRUE | FALSE | NULL

Note that ``NOT`` is a *unary* operator binding tighter than every comparison: ``NOT a = 'x'`` is
``(NOT a) = 'x'``. Desugaring as in Java: ``a <> b`` -> ``NOT (a = b)``; ``x IS NOT NULL`` -> ``NOT (x IS
NULL)``; ``x BETWEEN l AND h`` -> ``x >= l AND x <= h``; ``x NOT BETWEEN l AND h`` -> ``x < l OR x > h``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NoReturn

from rocketq.filter._errors import FilterEvaluationError, FilterSyntaxError
from rocketq.filter._java import INT_MAX, LONG_MAX, JavaLong, JavaValue, java_compare
from rocketq.filter._sql_lexer import Token, tokenize

__all__ = [
    "And",
    "BoolCast",
    "Compare",
    "Equal",
    "In",
    "IsNull",
    "Literal",
    "Negate",
    "Node",
    "Not",
    "Or",
    "Prop",
    "dump",
    "parse",
]


# --------------------------------------------------------------------------------------------------
# AST. ``start``/``end`` are the node's character span in the source (for error messages).
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Node:
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Literal(Node):
    """A ``ConstantExpression``: String, Integer, Long, Double; or TRUE/FALSE/NULL
    (``BooleanConstantExpression``)."""

    value: JavaValue


@dataclass(frozen=True, slots=True)
class Prop(Node):
    """A ``PropertyExpression``: the message property of that (case-sensitive) name."""

    name: str


@dataclass(frozen=True, slots=True)
class Negate(Node):
    operand: Node


@dataclass(frozen=True, slots=True)
class BoolCast(Node):
    """A property used where a boolean is needed (``UnaryExpression.createBooleanCast``)."""

    operand: Prop


@dataclass(frozen=True, slots=True)
class Not(Node):
    operand: Node


@dataclass(frozen=True, slots=True)
class And(Node):
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Or(Node):
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Compare(Node):
    """``>``, ``>=``, ``<`` or ``<=``."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Equal(Node):
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class IsNull(Node):
    operand: Node


@dataclass(frozen=True, slots=True)
class In(Node):
    operand: Prop
    values: tuple[str, ...]
    negated: bool


_BOOLEAN_NODES = (BoolCast, Not, And, Or, Compare, Equal, IsNull, In)
_ORDER_OPS = (">", ">=", "<", "<=")


def _is_boolean_expression(node: Node) -> bool:
    """Java ``instanceof BooleanExpression`` (TRUE/FALSE/NULL constants included)."""
    return isinstance(node, _BOOLEAN_NODES) or (
        isinstance(node, Literal) and (node.value is None or type(node.value) is bool)
    )


def _literal_text(value: JavaValue) -> str:
    if value is None:
        return "NULL"
    if type(value) is bool:
        return "TRUE" if value else "FALSE"
    if type(value) is str:
        return "'" + value.replace("'", "''") + "'"
    if type(value) is float:
        return repr(value)
    return str(int(value))


def dump(node: Node) -> str:
    """A fully parenthesised rendering of the tree (for tests and debugging)."""
    if isinstance(node, Literal):
        return _literal_text(node.value)
    if isinstance(node, Prop):
        return node.name
    if isinstance(node, BoolCast):
        return node.operand.name
    if isinstance(node, Negate):
        return f"(-{dump(node.operand)})"
    if isinstance(node, Not):
        return f"(NOT {dump(node.operand)})"
    if isinstance(node, And):
        return f"({dump(node.left)} AND {dump(node.right)})"
    if isinstance(node, Or):
        return f"({dump(node.left)} OR {dump(node.right)})"
    if isinstance(node, Compare):
        return f"({dump(node.left)} {node.op} {dump(node.right)})"
    if isinstance(node, Equal):
        return f"({dump(node.left)} = {dump(node.right)})"
    if isinstance(node, IsNull):
        return f"({dump(node.operand)} IS NULL)"
    if isinstance(node, In):
        items = ", ".join(_literal_text(v) for v in node.values)
        return f"({node.operand.name} {'NOT IN' if node.negated else 'IN'} ({items}))"
    raise TypeError(f"unknown node {node!r}")


# --------------------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------------------
class _Parser:
    __slots__ = ("i", "source", "tokens")

    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = tokenize(source)
        self.i = 0

    # token helpers --------------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "EOF":
            self.i += 1
        return tok

    def error(self, message: str, pos: int) -> NoReturn:
        raise FilterSyntaxError(message, pos, self.source)

    def unexpected(self, tok: Token, expected: str) -> NoReturn:
        if (
            tok.kind == "="
            and self.i > 0
            and self.tokens[self.i - 1].kind == "="
            and (self.tokens[self.i - 1].end == tok.pos)
        ):
            self.error("unexpected '==' (the equality operator is =)", tok.pos - 1)
        self.error(f"expected {expected} but found {tok.describe()}", tok.pos)

    def expect(self, kind: str, expected: str) -> Token:
        tok = self.peek()
        if tok.kind != kind:
            self.unexpected(tok, expected)
        return self.advance()

    def text(self, node: Node, limit: int = 40) -> str:
        t = " ".join(self.source[node.start : node.end].split())
        return t if len(t) <= limit else t[: limit - 3] + "..."

    # checks mirroring the Java factories ----------------------------------------------------------
    def as_boolean(self, node: Node, context: str) -> Node:
        if _is_boolean_expression(node):
            return node
        if isinstance(node, Prop):
            return BoolCast(node.start, node.end, node)
        self.error(f"{context} needs a boolean expression, not {self.text(node)!r}", node.start)

    def check_order_operand(self, node: Node, op: str) -> None:
        """``ComparisonExpression.checkLessThanOperand``."""
        if isinstance(node, Literal):
            if type(node.value) in (int, JavaLong, float):
                return
            what = "NULL" if node.value is None else self.text(node)
            self.error(f"{what} cannot be compared with '{op}' (only numbers can be ordered)", node.start)
        if _is_boolean_expression(node):
            hint = ""
            if isinstance(node, Not) and node.start < node.operand.start:
                hint = (
                    f" (NOT binds tighter than comparisons: write NOT ({self.text(node.operand)} {op} ...))"
                )
            self.error(
                f"the boolean expression {self.text(node)!r} cannot be compared with '{op}'{hint}", node.start
            )

    def make_compare(self, op: str, left: Node, right: Node) -> Compare:
        self.check_order_operand(left, op)
        self.check_order_operand(right, op)
        return Compare(left.start, right.end, op, left, right)

    def make_equal(self, left: Node, right: Node, op: str) -> Equal:
        """``ComparisonExpression.createEqual``: ``checkEqualOperand`` and
        ``checkEqualOperandCompatability``."""
        for side in (left, right):
            if isinstance(side, Literal) and side.value is None:
                self.error(f"NULL cannot be compared with '{op}' (use IS NULL / IS NOT NULL)", side.start)
        if (
            isinstance(left, Literal)
            and isinstance(right, Literal)
            and type(left.value) is bool
            and type(right.value) is not bool
        ):
            self.error(f"{self.text(left)} cannot be compared with {self.text(right)}", left.start)
        return Equal(left.start, right.end, left, right)

    def check_between_bounds(self, low: Node, high: Node) -> None:
        """The constant check of ``ComparisonExpression.createBetween``."""
        if not (isinstance(low, Literal) and isinstance(high, Literal)):
            return
        if low.value is None or high.value is None:
            self.error("BETWEEN bounds cannot be NULL", (low if low.value is None else high).start)
        try:
            order = java_compare(high.value, low.value)
        except FilterEvaluationError as exc:
            self.error(
                f"BETWEEN bounds {self.text(low)} and {self.text(high)} cannot be compared: {exc}", low.start
            )
        if order < 0:
            self.error(
                f"BETWEEN lower bound {self.text(low)} is greater than upper bound {self.text(high)}",
                low.start,
            )

    # productions ----------------------------------------------------------------------------------
    def selector(self) -> Node:
        if self.peek().kind == "EOF":
            self.error("empty filter expression", 0)
        node = self.or_expr()
        tok = self.peek()
        if tok.kind != "EOF":
            self.unexpected(tok, "AND, OR, a comparison or end of input")
        return self.as_boolean(node, "a filter")

    def or_expr(self) -> Node:
        left = self.and_expr()
        while self.peek().kind == "OR":
            self.advance()
            right = self.and_expr()
            left = Or(left.start, right.end, self.as_boolean(left, "OR"), self.as_boolean(right, "OR"))
        return left

    def and_expr(self) -> Node:
        left = self.equality()
        while self.peek().kind == "AND":
            self.advance()
            right = self.equality()
            left = And(left.start, right.end, self.as_boolean(left, "AND"), self.as_boolean(right, "AND"))
        return left

    def equality(self) -> Node:
        left = self.comparison()
        while True:
            kind = self.peek().kind
            if kind == "=":
                self.advance()
                left = self.make_equal(left, self.comparison(), "=")
            elif kind == "<>":
                self.advance()
                right = self.comparison()
                left = Not(left.start, right.end, self.make_equal(left, right, "<>"))
            elif kind == "IS":
                self.advance()
                tok = self.peek()
                if tok.kind == "NULL":
                    self.advance()
                    left = IsNull(left.start, tok.end, left)
                elif tok.kind == "NOT" and self.peek(1).kind == "NULL":
                    self.advance()
                    end = self.advance().end
                    left = Not(left.start, end, IsNull(left.start, end, left))
                elif tok.kind == "NOT":
                    self.unexpected(self.peek(1), "NULL after IS NOT")
                else:
                    self.unexpected(tok, "NULL or NOT NULL after IS")
            else:
                return left

    def comparison(self) -> Node:
        left = self.unary()
        while True:
            tok = self.peek()
            kind = tok.kind
            if kind in _ORDER_OPS:
                self.advance()
                left = self.make_compare(kind, left, self.unary())
            elif kind == "BETWEEN":
                self.advance()
                left = self.between(left, negated=False)
            elif kind == "IN":
                self.advance()
                left = self.in_list(left, negated=False)
            elif kind == "NOT" and self.peek(1).kind == "BETWEEN":
                self.advance()
                self.advance()
                left = self.between(left, negated=True)
            elif kind == "NOT" and self.peek(1).kind == "IN":
                self.advance()
                self.advance()
                left = self.in_list(left, negated=True)
            else:
                return left

    def between(self, value: Node, *, negated: bool) -> Node:
        low = self.unary()
        self.expect("AND", "AND between the BETWEEN bounds")
        high = self.unary()
        if negated:
            below = self.make_compare("<", value, low)
            return Or(value.start, high.end, below, self.make_compare(">", value, high))
        self.check_between_bounds(low, high)
        at_least = self.make_compare(">=", value, low)
        return And(value.start, high.end, at_least, self.make_compare("<=", value, high))

    def in_list(self, value: Node, *, negated: bool) -> Node:
        op = "NOT IN" if negated else "IN"
        if not isinstance(value, Prop):
            self.error(
                f"the left operand of {op} must be a property name, not {self.text(value)!r}", value.start
            )
        self.expect("(", f"'(' after {op}")
        items: list[str] = []
        while True:
            tok = self.peek()
            if tok.kind != "STRING":
                self.unexpected(tok, f"a string literal in the {op} list")
            self.advance()
            items.append(_decode_string(tok.text))
            tok = self.peek()
            if tok.kind not in (",", ")"):
                self.unexpected(tok, f"',' or ')' in the {op} list")
            self.advance()
            if tok.kind == ")":
                return In(value.start, tok.end, value, tuple(items), negated)

    def unary(self) -> Node:
        tok = self.peek()
        if tok.kind == "+":
            self.advance()
            return self.unary()
        if tok.kind == "-":
            self.advance()
            operand = self.unary()
            return Negate(tok.pos, operand.end, operand)
        if tok.kind == "NOT":
            self.advance()
            operand = self.unary()
            return Not(tok.pos, operand.end, self.as_boolean(operand, "NOT"))
        return self.primary()

    def primary(self) -> Node:
        tok = self.peek()
        kind = tok.kind
        if kind == "ID":
            self.advance()
            return Prop(tok.pos, tok.end, tok.text)
        if kind == "(":
            self.advance()
            node = self.or_expr()
            self.expect(")", "')'")
            return node
        if kind == "STRING":
            self.advance()
            return Literal(tok.pos, tok.end, _decode_string(tok.text))
        if kind == "INT":
            self.advance()
            return Literal(tok.pos, tok.end, self.decimal(tok))
        if kind == "FLOAT":
            self.advance()
            return Literal(tok.pos, tok.end, self.floating(tok))
        if kind in ("TRUE", "FALSE"):
            self.advance()
            return Literal(tok.pos, tok.end, kind == "TRUE")
        if kind == "NULL":
            self.advance()
            return Literal(tok.pos, tok.end, None)
        self.unexpected(tok, "an operand (a property name, a literal, '(', NOT, + or -)")

    def decimal(self, tok: Token) -> int:
        """``ConstantExpression.createFromDecimal``: an Integer if it fits, else a Long."""
        text = tok.text.rstrip("lL")
        value = int(text)
        if value > LONG_MAX:
            self.error(f"integer literal {tok.text} is out of range (more than {LONG_MAX})", tok.pos)
        return value if value <= INT_MAX else JavaLong(value)

    def floating(self, tok: Token) -> float:
        """``ConstantExpression.createFloat`` (a Double)."""
        value = float(tok.text)
        if math.isinf(value):
            self.error(f"floating-point literal {tok.text} is out of range", tok.pos)
        return value


def _decode_string(image: str) -> str:
    return image[1:-1].replace("''", "'")


def parse(source: str) -> Node:
    """Parse and check a filter expression; the result is a boolean node. Raises ``FilterSyntaxError``."""
    return _Parser(source).selector()
