"""Compiles a checked SQL92 filter tree into a tree of closures, once, for the per-message hot path.

Each closure maps the message properties to a Java value (``True``/``False``/``None`` for boolean nodes,
``None`` being SQL's *unknown*); Java evaluation exceptions are raised as ``FilterEvaluationError``. The
semantics are those of RocketMQ 4.9's expression classes (see ``rocketq.filter.sql92``); the common shapes
(``prop <op> constant``, ``prop IS [NOT] NULL``, ``prop [NOT] IN (...)``, AND/OR chains) get specialised
closures, everything else goes through the generic Java comparison.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping

from rocketq.filter._errors import FilterEvaluationError
from rocketq.filter._java import (
    JavaLong,
    JavaValue,
    boolean_value_of,
    double_compare,
    double_value_of,
    integer_value_of,
    java_compare,
    java_negate,
    long_value_of,
)
from rocketq.filter._sql_parser import (
    And,
    BoolCast,
    Compare,
    Equal,
    In,
    IsNull,
    Literal,
    Negate,
    Node,
    Not,
    Or,
    Prop,
)

__all__ = ["Evaluator", "compile_tree", "property_names"]

Props = Mapping[str, str]
Evaluator = Callable[[Props], JavaValue]

_INT_OPS: dict[str, Callable[[int, int], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
_SIGN_TESTS: dict[str, Callable[[int], bool]] = {
    ">": lambda r: r > 0,
    ">=": lambda r: r >= 0,
    "<": lambda r: r < 0,
    "<=": lambda r: r <= 0,
}


def property_names(node: Node) -> frozenset[str]:
    """Every property name the expression reads."""
    names: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Prop):
            names.add(n.name)
        elif isinstance(n, (Negate, Not, IsNull, BoolCast, In)):
            stack.append(n.operand)
        elif isinstance(n, (And, Or, Compare, Equal)):
            stack.append(n.left)
            stack.append(n.right)
    return frozenset(names)


def _fold(node: Node) -> Node:
    """Fold ``-literal`` (any depth) into a literal of the same Java type; non-numbers negate to NULL."""
    if isinstance(node, Negate):
        inner = _fold(node.operand)
        if isinstance(inner, Literal):
            return Literal(node.start, node.end, java_negate(inner.value))
        return Negate(node.start, node.end, inner)
    return node


def compile_tree(node: Node) -> Evaluator:
    """Turn a checked tree (from ``_sql_parser.parse``) into an evaluator closure."""
    node = _fold(node)
    if isinstance(node, Literal):
        return _constant(node.value)
    if isinstance(node, Prop):
        return _property(node.name)
    if isinstance(node, Negate):
        return _negate(compile_tree(node.operand))
    if isinstance(node, BoolCast):
        return _bool_cast(node.operand.name)
    if isinstance(node, Not):
        return _not(node.operand)
    if isinstance(node, And):
        return _and([compile_tree(n) for n in _flatten(node, And)])
    if isinstance(node, Or):
        return _or([compile_tree(n) for n in _flatten(node, Or)])
    if isinstance(node, Compare):
        return _compare(node.op, _fold(node.left), _fold(node.right))
    if isinstance(node, Equal):
        return _equal(_fold(node.left), _fold(node.right))
    if isinstance(node, IsNull):
        return _is_null(_fold(node.operand))
    if isinstance(node, In):
        return _in(node.operand.name, frozenset(node.values), node.negated)
    raise TypeError(f"unknown node {node!r}")


# --- leaves ---------------------------------------------------------------------------------------
def _constant(value: JavaValue) -> Evaluator:
    def constant(props: Props) -> JavaValue:
        return value

    return constant


def _property(name: str) -> Evaluator:
    def prop(props: Props) -> JavaValue:
        return props.get(name)

    return prop


def _negate(operand: Evaluator) -> Evaluator:
    def negate(props: Props) -> JavaValue:
        return java_negate(operand(props))

    return negate


# --- boolean structure ----------------------------------------------------------------------------
def _bool_cast(name: str) -> Evaluator:
    """A property used as a boolean: null stays unknown; a String is never a Boolean, so it is FALSE."""

    def bool_cast(props: Props) -> JavaValue:
        return None if props.get(name) is None else False

    return bool_cast


def _not(operand_node: Node) -> Evaluator:
    if isinstance(operand_node, IsNull) and isinstance(operand_node.operand, Prop):
        name = operand_node.operand.name

        def is_not_null(props: Props) -> JavaValue:
            return props.get(name) is not None

        return is_not_null
    operand = compile_tree(operand_node)

    def not_(props: Props) -> JavaValue:
        v = operand(props)
        return None if v is None else not v

    return not_


def _flatten(node: Node, kind: type[And] | type[Or]) -> list[Node]:
    """Operands of a nested AND (or OR) tree, left to right. Short-circuiting a left-to-right n-ary AND gives
    the same results and evaluates the same operands as Java's nested binary ``LogicExpression``s."""
    out: list[Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, kind):
            stack.append(n.right)
            stack.append(n.left)
        else:
            out.append(n)
    return out


def _and(operands: list[Evaluator]) -> Evaluator:
    if len(operands) == 2:
        first, second = operands

        def and2(props: Props) -> JavaValue:
            lv = first(props)
            if lv is False:
                return False
            rv = second(props)
            if rv is False:
                return False
            return None if lv is None or rv is None else True

        return and2
    ops = tuple(operands)

    def and_n(props: Props) -> JavaValue:
        unknown = False
        for op in ops:
            v = op(props)
            if v is False:
                return False
            if v is None:
                unknown = True
        return None if unknown else True

    return and_n


def _or(operands: list[Evaluator]) -> Evaluator:
    if len(operands) == 2:
        first, second = operands

        def or2(props: Props) -> JavaValue:
            lv = first(props)
            if lv is True:
                return True
            rv = second(props)
            if rv is True:
                return True
            return None if lv is None or rv is None else False

        return or2
    ops = tuple(operands)

    def or_n(props: Props) -> JavaValue:
        unknown = False
        for op in ops:
            v = op(props)
            if v is True:
                return True
            if v is None:
                unknown = True
        return None if unknown else False

    return or_n


# --- predicates -----------------------------------------------------------------------------------
def _is_null(operand_node: Node) -> Evaluator:
    if isinstance(operand_node, Prop):
        name = operand_node.name

        def prop_is_null(props: Props) -> JavaValue:
            return props.get(name) is None

        return prop_is_null
    operand = compile_tree(operand_node)

    def is_null(props: Props) -> JavaValue:
        return operand(props) is None

    return is_null


def _in(name: str, values: frozenset[str], negated: bool) -> Evaluator:
    def in_(props: Props) -> JavaValue:
        v = props.get(name)
        if v is None:
            return None
        return (v in values) is not negated

    return in_


def _numeric_parser(value: JavaValue) -> Callable[[str], int] | None:
    if type(value) is int:
        return integer_value_of
    if type(value) is JavaLong:
        return long_value_of
    return None


def _compare(op: str, left: Node, right: Node) -> Evaluator:
    """``>``, ``>=``, ``<``, ``<=`` (``ComparisonExpression.evaluate``)."""
    if isinstance(left, Prop) and isinstance(right, Literal) and right.value is not None:
        return _prop_order_const(op, left.name, right.value, const_left=False)
    if isinstance(right, Prop) and isinstance(left, Literal) and left.value is not None:
        return _prop_order_const(op, right.name, left.value, const_left=True)
    return _generic_order(op, compile_tree(left), compile_tree(right))


def _prop_order_const(op: str, name: str, const: JavaValue, *, const_left: bool) -> Evaluator:
    parse_int = _numeric_parser(const)
    if parse_int is not None:
        assert isinstance(const, int)
        c = int(const)
        test = _INT_OPS[op]
        if const_left:

            def const_vs_int_prop(props: Props) -> JavaValue:
                v = props.get(name)
                return None if v is None else test(c, parse_int(v))

            return const_vs_int_prop

        def int_prop_vs_const(props: Props) -> JavaValue:
            v = props.get(name)
            return None if v is None else test(parse_int(v), c)

        return int_prop_vs_const
    if type(const) is float:
        d = const
        sign_test = _SIGN_TESTS[op]
        if const_left:

            def const_vs_double_prop(props: Props) -> JavaValue:
                v = props.get(name)
                return None if v is None else sign_test(double_compare(d, double_value_of(v)))

            return const_vs_double_prop

        def double_prop_vs_const(props: Props) -> JavaValue:
            v = props.get(name)
            return None if v is None else sign_test(double_compare(double_value_of(v), d))

        return double_prop_vs_const
    # Not reachable: the parser only lets numeric literals into an ordering, and folded non-numbers are NULL.
    prop, lit = _property(name), _constant(const)
    return _generic_order(op, lit, prop) if const_left else _generic_order(op, prop, lit)


def _generic_order(op: str, left: Evaluator, right: Evaluator) -> Evaluator:
    sign_test = _SIGN_TESTS[op]

    def order(props: Props) -> JavaValue:
        lv = left(props)
        if lv is None:
            return None
        rv = right(props)
        if rv is None:
            return None
        if type(lv) is str and type(rv) is str:
            # Java: two Strings are compared as Doubles, or the comparison throws.
            try:
                return sign_test(double_compare(double_value_of(lv), double_value_of(rv)))
            except FilterEvaluationError as exc:
                raise FilterEvaluationError(
                    f"cannot order strings {lv!r} and {rv!r} by '{op}': {exc}"
                ) from None
        return sign_test(java_compare(lv, rv))

    return order


def _equal(left: Node, right: Node) -> Evaluator:
    """``=`` (``ComparisonExpression.doCreateEqual``). Null handling is asymmetric as in Java: a null left
    side gives unknown (or TRUE if both are null), a null right side alone gives FALSE."""
    if isinstance(left, Prop) and isinstance(right, Literal) and right.value is not None:
        return _prop_equals_const(left.name, right.value)
    if isinstance(left, Prop) and isinstance(right, Prop):
        return _prop_equals_prop(left.name, right.name)
    lf = compile_tree(left)
    rf = compile_tree(right)

    def equal(props: Props) -> JavaValue:
        lv = lf(props)
        rv = rf(props)
        if lv is None:
            return True if rv is None else None
        if rv is None:
            return False
        return java_compare(lv, rv) == 0

    return equal


def _prop_equals_prop(left: str, right: str) -> Evaluator:
    def prop_eq_prop(props: Props) -> JavaValue:
        lv = props.get(left)
        rv = props.get(right)
        if lv is None:
            return True if rv is None else None
        if rv is None:
            return False
        return lv == rv  # two Strings: equals()

    return prop_eq_prop


def _prop_equals_const(name: str, const: JavaValue) -> Evaluator:
    if type(const) is str:
        s = const

        def prop_eq_string(props: Props) -> JavaValue:
            v = props.get(name)
            return None if v is None else v == s

        return prop_eq_string
    parse_int = _numeric_parser(const)
    if parse_int is not None:
        assert isinstance(const, int)
        c = int(const)

        def prop_eq_int(props: Props) -> JavaValue:
            v = props.get(name)
            return None if v is None else parse_int(v) == c

        return prop_eq_int
    if type(const) is float:
        d = const

        def prop_eq_double(props: Props) -> JavaValue:
            v = props.get(name)
            return None if v is None else double_compare(double_value_of(v), d) == 0

        return prop_eq_double
    if type(const) is bool:
        b = const

        def prop_eq_bool(props: Props) -> JavaValue:
            v = props.get(name)
            return None if v is None else boolean_value_of(v) is b

        return prop_eq_bool
    raise TypeError(f"unexpected constant {const!r}")
