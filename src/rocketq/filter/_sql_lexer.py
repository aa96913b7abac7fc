"""Tokenizer for RocketMQ 4.9's SQL92 filter (``filter/parser/SelectorParser.jj``).

Tokens, as in the JavaCC grammar:

* blanks: space, ``\\t``, ``\\n``, ``\\r``, ``\\f`` only; comments ``-- ...`` (to the end of the line,
  or of the input: Java requires a line break, which only matters for ``--1``) and ``/* ... */``;
* keywords, case-insensitive: ``NOT AND OR BETWEEN IN TRUE FALSE NULL IS``;
* ``ID``: ``[A-Za-z_$][A-Za-z0-9_$]*`` (case kept: property names are case-sensitive);
* ``DECIMAL_LITERAL``: ``0`` or ``[1-9][0-9]*`` with an optional ``l``/``L``; no hex, no octal, no
  leading zero;
* ``FLOATING_POINT_LITERAL``: ``5.``, ``5.5``, ``.5``, ``5E10``, ``5.5e-3`` ...;
* ``STRING_LITERAL``: single quotes, ``''`` inside stands for one quote;
* operators ``= <> > >= < <= ( ) , + -``.

Numbers are lexed longest-match like JavaCC, so ``007`` is three tokens ``0 0 7``; the lexer reports that (and
``0x1F``) directly, since the parser would otherwise only see a confusing stray number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn

from rocketq.filter._errors import FilterSyntaxError

__all__ = ["KEYWORDS", "Token", "tokenize"]

KEYWORDS = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"})

# Kinds: a keyword (upper case), "ID", "INT", "FLOAT", "STRING", an operator's own text, or "EOF".
_TOKEN_RE = re.compile(
    r"""
    (?P<blank>[ \t\n\r\f]+)
  | (?P<line_comment>--[^\n\r]*)
  | (?P<block_comment>/\*.*?\*/)
  | (?P<FLOAT>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
  | (?P<INT>0|[1-9][0-9]*[lL]?)
  | (?P<STRING>'(?:[^']|'')*+')
  | (?P<ID>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<OP><>|<=|>=|[=<>(),+-])
    """,
    re.VERBOSE | re.DOTALL,
)

_HINTS = {
    "!": "unexpected character '!' (the not-equal operator is <>)",
    '"': "unexpected character '\"' (string literals use single quotes)",
    "&": "unexpected character '&' (use AND)",
    "|": "unexpected character '|' (use OR)",
    "/": "unexpected character '/' (no arithmetic in filter expressions)",
    "*": "unexpected character '*' (no arithmetic in filter expressions)",
}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    text: str
    pos: int

    @property
    def end(self) -> int:
        return self.pos + len(self.text)

    def describe(self) -> str:
        if self.kind == "EOF":
            return "end of input"
        if self.kind in KEYWORDS:
            return f"keyword {self.text}"
        if self.kind == "ID":
            return f"identifier {self.text}"
        if self.kind in ("INT", "FLOAT"):
            return f"number {self.text}"
        if self.kind == "STRING":
            return f"string {_shorten(self.text)}"
        return f"'{self.text}'"


def _shorten(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tokenize(source: str) -> list[Token]:
    """Split ``source`` into tokens (ending with an ``EOF`` token), or raise ``FilterSyntaxError``."""
    tokens: list[Token] = []
    append = tokens.append
    match = _TOKEN_RE.match
    pos = 0
    n = len(source)
    while pos < n:
        m = match(source, pos)
        if m is None:
            _raise_bad_char(source, pos)
        kind = m.lastgroup
        text = m.group()
        if kind == "ID":
            upper = text.upper()
            append(Token(upper if upper in KEYWORDS else "ID", text, pos))
        elif kind == "OP":
            append(Token(text, text, pos))
        elif kind == "INT":
            if text == "0" and m.end() < n:
                nxt = source[m.end()]
                if nxt.isdigit():
                    raise FilterSyntaxError(
                        "integer literals cannot have leading zeros (no octal)", pos, source
                    )
                if nxt in "xX":
                    raise FilterSyntaxError("hexadecimal literals are not supported", pos, source)
            append(Token("INT", text, pos))
        elif kind in ("FLOAT", "STRING"):
            append(Token(kind, text, pos))
        # blanks and comments are skipped
        pos = m.end()
    tokens.append(Token("EOF", "", n))
    return tokens


def _raise_bad_char(source: str, pos: int) -> NoReturn:
    ch = source[pos]
    if ch == "'":
        raise FilterSyntaxError("unterminated string literal", pos, source)
    if source.startswith("/*", pos):
        raise FilterSyntaxError("unterminated comment", pos, source)
    if ch == ".":
        raise FilterSyntaxError("unexpected character '.' (property names cannot contain dots)", pos, source)
    hint = _HINTS.get(ch)
    if hint is not None:
        raise FilterSyntaxError(hint, pos, source)
    if ch.isspace():
        raise FilterSyntaxError(f"unexpected whitespace character U+{ord(ch):04X}", pos, source)
    if ch.isalpha():
        raise FilterSyntaxError(
            f"unexpected character {ch!r} (identifiers are ASCII letters, digits, _ and $)", pos, source
        )
    raise FilterSyntaxError(f"unexpected character {ch!r}", pos, source)
