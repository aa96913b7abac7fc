"""The ``rocketq`` command's logging options, accepted before or after the subcommand (docs/running.md).

* ``--log-level LEVEL`` (DEBUG, INFO, WARNING, ERROR; default INFO);
* ``--log-file PATH``: log to PATH instead of stderr, rotated when it would pass ``--log-max-bytes`` (default
  128 MiB), keeping ``--log-backups`` old files (PATH.1 … PATH.N, default 10) — Java's broker rolls its
  broker.log the same way (logback's size-based policy);
* ``--log-format text|json``: ``json`` writes one JSON object per line (time, level, logger, message, and
  ``exc`` with the traceback when there is one), for log shippers.

What a command prints as its result (stdout) and its one-line refusals (stderr) are not log records: they are
unaffected by these options.
"""

from __future__ import annotations

import argparse
import errno
import logging
import logging.handlers
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_MAX_BYTES = 128 * 1024 * 1024
DEFAULT_BACKUPS = 10
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
_MARK = "_rocketq_cli_handler"


def add_logging_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """Add the options to ``parser``: with their defaults on the top-level parser, without (SUPPRESS) on a
    subcommand's, so that a value given there overrides the top-level one and an absent one leaves it."""

    def default(value: object) -> Any:
        return value if defaults else argparse.SUPPRESS

    options: list[tuple[str, dict[str, Any]]] = [
        ("--log-level", {"default": default("INFO"), "choices": LEVELS, "help": "log level (default INFO)"}),
        ("--log-file", {"default": default(None), "metavar": "PATH",
                        "help": "log to PATH (rotated) instead of stderr"}),
        ("--log-max-bytes", {"default": default(DEFAULT_MAX_BYTES), "type": _positive, "metavar": "N",
                             "help": f"rotate the log file before it passes N bytes (default {DEFAULT_MAX_BYTES})"}),
        ("--log-backups", {"default": default(DEFAULT_BACKUPS), "type": _non_negative, "metavar": "N",
                           "help": f"rotated log files kept, PATH.1 to PATH.N (default {DEFAULT_BACKUPS})"}),
        ("--log-format", {"default": default("text"), "choices": ("text", "json"),
                          "help": "text lines, or one JSON object per line (default text)"}),
    ]  # fmt: skip
    taken = parser._option_string_actions
    for flag, kwargs in options:
        if flag not in taken:  # a subcommand that defines one of its own keeps it
            parser.add_argument(flag, **kwargs)


def add_logging_options_everywhere(parser: argparse.ArgumentParser) -> None:
    """The options on ``parser`` (with defaults) and on every subcommand parser below it, however deep."""
    add_logging_options(parser, defaults=True)
    pending = [parser]
    for _ in range(10_000):  # a bounded walk of the (small) tree of parsers
        if not pending:
            break
        current = pending.pop()
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in dict.fromkeys(action.choices.values()):  # aliases share a parser
                    add_logging_options(child, defaults=False)
                    pending.append(child)


class JsonLineFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            doc["exc"] = record.exc_text
        return orjson.dumps(doc).decode()


def configure_logging(args: argparse.Namespace) -> None:
    """Install the root handler the options ask for; an unusable --log-file raises OSError (the caller says so)."""
    handler: logging.Handler
    path = getattr(args, "log_file", None)
    if path:
        parent = Path(path).parent
        if parent.exists() and not parent.is_dir():  # mkdir would say "File exists", which misleads
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(parent))
        parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=args.log_max_bytes, backupCount=args.log_backups, encoding="utf-8"
        )
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLineFormatter() if args.log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):  # a second call (main called twice in one process) replaces its own
        if getattr(old, _MARK, False):
            root.removeHandler(old)
            old.close()
    setattr(handler, _MARK, True)
    root.addHandler(handler)
    root.setLevel(getattr(logging, args.log_level))


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value
