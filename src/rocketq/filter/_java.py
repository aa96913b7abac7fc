"""Java value semantics used by the SQL92 filter: ``Integer/Long/Double/Boolean.valueOf(String)``,
``compareTo`` and the type promotion of RocketMQ's ``ComparisonExpression.__compare``.

Java values are modelled as: ``None`` (null), ``bool`` (Boolean), ``int`` (Integer), :class:`JavaLong` (Long),
``float`` (Double) and ``str`` (String). Byte, Short and Float never occur in RocketMQ filters (literals are
Integer, Long or Double; property values are Strings), so they are left out.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import TypeAlias

from rocketq.filter._errors import FilterEvaluationError

__all__ = [
    "JavaLong",
    "JavaValue",
    "boolean_value_of",
    "double_compare",
    "double_value_of",
    "integer_value_of",
    "java_compare",
    "java_negate",
    "long_value_of",
    "string_compare",
    "type_name",
]

INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1
LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1


class JavaLong(int):
    """A Java ``Long``; a plain ``int`` stands for a Java ``Integer``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}L"


JavaValue: TypeAlias = bool | int | float | str | None

_JAVA_TRIM_CHARS = "".join(chr(c) for c in range(0x21))
_DECIMAL_FLOAT = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_HEX_FLOAT = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?")
_decimal_float_match = _DECIMAL_FLOAT.fullmatch
_hex_float_match = _HEX_FLOAT.fullmatch


def type_name(value: JavaValue) -> str:
    """The Java class name of a modelled value."""
    if value is None:
        return "null"
    t = type(value)
    if t is bool:
        return "Boolean"
    if t is JavaLong:
        return "Long"
    if t is int:
        return "Integer"
    if t is float:
        return "Double"
    return "String"


def _number_format_error(s: str, target: str) -> FilterEvaluationError:
    return FilterEvaluationError(f"cannot convert {s!r} to {target} (Java NumberFormatException)")


def _parse_integer(s: str, lo: int, hi: int, target: str) -> int:
    """``Integer.parseInt`` / ``Long.parseLong`` in radix 10: optional sign, Unicode decimal digits only."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body.isdecimal():  # also rejects "", blanks and "_"
        raise _number_format_error(s, target)
    if len(body) > 24:  # keep clear of Python's int() digit limit: drop leading zeros first
        i = 0
        while i < len(body) and unicodedata.decimal(body[i]) == 0:
            i += 1
        body = body[i:] or "0"
        if len(body) > 24:
            raise _number_format_error(s, target)
        s = s[0] + body if s[0] == "-" else body
    value = int(s)
    if value < lo or value > hi:
        raise _number_format_error(s, target)
    return value


def integer_value_of(s: str) -> int:
    """Java ``Integer.valueOf(String)``."""
    if len(s) < 10 and s.isascii() and s.isdigit():  # fast path: plain non-negative ASCII, surely in range
        return int(s)
    return _parse_integer(s, INT_MIN, INT_MAX, "Integer")


def long_value_of(s: str) -> JavaLong:
    """Java ``Long.valueOf(String)``."""
    if len(s) < 19 and s.isascii() and s.isdigit():
        return JavaLong(s)
    return JavaLong(_parse_integer(s, LONG_MIN, LONG_MAX, "Long"))


def double_value_of(s: str) -> float:
    """Java ``Double.valueOf(String)``: trimmed, decimal or hex (``0x1.8p3``) form, optional ``f``/``d``
    suffix, ``NaN`` / ``Infinity`` with optional sign; nothing else (no ``inf``, no ``1_000``)."""
    if s.isascii() and "_" not in s:
        # Fast path. On ASCII without "_", Python's float() accepts a subset of Java's syntax (it strips only
        # blanks that Java trims too) with the same value, except for its inf/nan spellings: re-check those.
        try:
            x = float(s)
        except ValueError:
            pass
        else:
            if x - x == 0.0:  # finite
                return x
    t = s.strip(_JAVA_TRIM_CHARS)
    if _decimal_float_match(t) is not None:
        if t[-1] in "fFdD":
            t = t[:-1]
        return float(t)
    if _hex_float_match(t) is not None:
        if t[-1] in "fFdD":
            t = t[:-1]
        try:
            return float.fromhex(t)
        except OverflowError:
            return -math.inf if t[0] == "-" else math.inf
    raise _number_format_error(s, "Double")


def boolean_value_of(s: str) -> bool:
    """Java ``Boolean.valueOf(String)``: ``"true"`` ignoring case; anything else is ``False``."""
    return len(s) == 4 and s.lower() == "true"


def double_compare(a: float, b: float) -> int:
    """Java ``Double.compare``: a total order with ``-0.0 < 0.0`` and NaN above +Infinity, equal to itself."""
    if a < b:
        return -1
    if a > b:
        return 1
    if a == b:
        if a == 0.0:
            sa = math.copysign(1.0, a)
            sb = math.copysign(1.0, b)
            return 0 if sa == sb else (-1 if sa < sb else 1)
        return 0
    a_nan = a != a
    b_nan = b != b
    if a_nan and b_nan:
        return 0
    return 1 if a_nan else -1


def string_compare(a: str, b: str) -> int:
    """Sign of Java ``String.compareTo`` (UTF-16 code unit order, which differs from code point order)."""
    if a == b:
        return 0
    ka = a.encode("utf-16-be", "surrogatepass")
    kb = b.encode("utf-16-be", "surrogatepass")
    return -1 if ka < kb else 1


def _int_compare(a: int, b: int) -> int:
    return -1 if a < b else (1 if a > b else 0)


def java_compare(lv: JavaValue, rv: JavaValue) -> int:
    """``ComparisonExpression.__compare(lv, rv, convertStringExpressions=true)`` for non-null values.

    Mixed types are promoted: Integer -> Long -> Double; a String facing a number is parsed as that number's
    type, facing a Boolean with ``Boolean.valueOf``. Pairs Java cannot promote compare as ``-1`` (so they are
    unequal), except Boolean-vs-String, which throws in Java (a ``ClassCastException``) and raises here.
    Failed number parsing raises :class:`FilterEvaluationError`.
    """
    if type(lv) is str:
        if type(rv) is str:
            return string_compare(lv, rv)
        if type(rv) is int:
            return _int_compare(integer_value_of(lv), rv)
        if type(rv) is JavaLong:
            return _int_compare(long_value_of(lv), rv)
        if type(rv) is float:
            return double_compare(double_value_of(lv), rv)
        if type(rv) is bool:
            return _int_compare(boolean_value_of(lv), rv)
        return -1
    if type(lv) is int or type(lv) is JavaLong:
        assert isinstance(lv, int)
        if type(rv) is int or type(rv) is JavaLong:
            assert isinstance(rv, int)
            return _int_compare(lv, rv)
        if type(rv) is float:
            return double_compare(float(lv), rv)
        if type(rv) is str:
            return _int_compare(lv, integer_value_of(rv) if type(lv) is int else long_value_of(rv))
        return -1
    if type(lv) is float:
        if type(rv) is float:
            return double_compare(lv, rv)
        if type(rv) is int or type(rv) is JavaLong:
            assert isinstance(rv, int)
            return double_compare(lv, float(rv))
        if type(rv) is str:
            return double_compare(lv, double_value_of(rv))
        return -1
    if type(lv) is bool:
        if type(rv) is bool:
            return _int_compare(lv, rv)
        if type(rv) is str:
            raise FilterEvaluationError(
                f"cannot compare Boolean {lv} with String {rv!r} (Java ClassCastException)"
            )
        return -1
    return -1


def java_negate(value: JavaValue) -> JavaValue:
    """``UnaryExpression.createNegate``: numbers are negated (keeping their type), anything else is null."""
    if type(value) is int or type(value) is float:
        return -value
    if type(value) is JavaLong:
        return JavaLong(-value)
    return None
