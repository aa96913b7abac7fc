"""The one output convention of the admin commands (docs/cli.md).

* Text: a table with a header row and a dashed rule (``print_table``; ``StreamTable`` when rows arrive over
  time), sometimes followed by a summary line.
* ``--json``: ONE JSON document on stdout, an array (one object per table row) or an object (one thing);
  keys in camelCase as Java's admin tools and RocketMQ Dashboard write them.
* Exit codes: 0 success; 1 the operation failed or found nothing asked for, with one ``error:`` line on
  stderr and nothing on stdout; 2 a usage error (argparse); 141 stdout closed by the reader (``| head``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

#: exit code when the reader of stdout went away (128 + SIGPIPE, what a killed-by-SIGPIPE process reports)
EXIT_BROKEN_PIPE = 141


class CommandFailed(Exception):
    """Stop a command with exit code 1 and this one line on stderr."""


class UsageError(CommandFailed):
    """Options that do not go together (what argparse can not check): exit code 2, one line on stderr."""


def emit(args: argparse.Namespace, data: Any, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """``data`` as JSON with ``--json``, else the table."""
    if args.json:
        print_json(data)
    else:
        print_table(headers, rows)


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [[_cell(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    StreamTable(headers, widths).rows(rows)


class StreamTable:
    """A table printed row by row as rows arrive: the header first, columns of fixed width (a longer value
    widens its own row only)."""

    def __init__(self, headers: Sequence[str], widths: Sequence[int]) -> None:
        self.widths = [max(w, len(h)) for h, w in zip(headers, widths, strict=True)]
        self._line([str(h) for h in headers])
        self._line(["-" * w for w in self.widths])

    def rows(self, rows: Sequence[Sequence[Any]]) -> None:
        for r in rows:
            self._line([_cell(c) for c in r])

    def _line(self, cells: Sequence[str]) -> None:
        print("  ".join(c.ljust(w) for c, w in zip(cells, self.widths, strict=True)).rstrip())


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def fmt_ts(ms: int) -> str:
    """Epoch ms as local time, '-' for none."""
    if ms <= 0:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def body_text(body: bytes) -> str:
    """UTF-8 text, else hex."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.hex()


def one_line(exc: BaseException) -> str:
    """An error's text on one line, without the FAQ link Java brokers append to their remarks."""
    lines = [ln.strip() for ln in str(exc).splitlines()]
    text = " ".join(ln for ln in lines if ln and not ln.startswith("See http"))
    return text or type(exc).__name__


def call_command(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run a command; stdout closed early by its reader (``rocketq ... | head``) ends it quietly."""
    try:
        code = int(func(args) or 0)
        sys.stdout.flush()  # inside the try: a pipe closed by the reader shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        # Python would flush stdout again at exit and print another BrokenPipeError: point it at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_BROKEN_PIPE
