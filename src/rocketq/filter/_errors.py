"""Exceptions of the SQL92 filter."""

from __future__ import annotations

import re

__all__ = ["FilterEvaluationError", "FilterSyntaxError"]

_EXCERPT_RADIUS = 40
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _excerpt(source: str, position: int) -> str:
    """The source line around ``position`` and a caret under it (tabs and newlines shown as spaces)."""
    position = max(0, min(position, len(source)))
    line_start = max(source.rfind("\n", 0, position), source.rfind("\r", 0, position)) + 1
    line_end = len(source)
    for stop in ("\n", "\r"):
        i = source.find(stop, position)
        if i != -1:
            line_end = min(line_end, i)
    col = position - line_start
    lo = max(line_start, position - _EXCERPT_RADIUS)
    hi = min(line_end, position + _EXCERPT_RADIUS)
    prefix = "..." if lo > line_start else ""
    suffix = "..." if hi < line_end else ""
    text = source[lo:hi].replace("\t", " ").replace("\f", " ")
    caret = " " * (len(prefix) + position - lo) + "^"
    where = f"position {position}"
    if line_start > 0:
        line_no = len(_LINE_BREAK.findall(source, 0, line_start)) + 1
        where += f" (line {line_no}, column {col + 1})"
    return f"at {where}:\n    {prefix}{text}{suffix}\n    {caret}"


class FilterSyntaxError(ValueError):
    """A SQL92 filter expression that RocketMQ would refuse to compile.

    ``message`` says what is wrong, ``position`` is the 0-based character offset it points at and ``source``
    the whole expression (when known); ``str(error)`` adds an excerpt with a caret under the position.
    """

    def __init__(self, message: str, position: int, source: str | None = None) -> None:
        self.message = message
        self.position = position
        self.source = source
        where = f"at position {position}" if source is None else _excerpt(source, position)
        super().__init__(f"{message} {where}")

    def __reduce__(self) -> tuple[type[FilterSyntaxError], tuple[str, int, str | None]]:
        return (type(self), (self.message, self.position, self.source))


class FilterEvaluationError(ValueError):
    """Evaluating a filter failed where the Java evaluation throws (so the message does not match).

    Raised by ``SqlFilter.evaluate`` only; ``SqlFilter.matches`` turns it into ``False``.
    """
