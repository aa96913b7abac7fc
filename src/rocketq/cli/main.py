"""``rocketq`` command: one argparse tree; each command group lives in its own module.

A module that adds commands exposes ``register(subparsers)``; each subcommand sets ``func`` (returning an exit
code) on its parser via ``set_defaults``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

import rocketq
from rocketq.cli.logsetup import add_logging_options_everywhere, configure_logging
from rocketq.cli.output import call_command

# Modules that contribute subcommands; a missing one is skipped so partial installs still run.
_COMMAND_MODULES = (
    "rocketq.cli.servers",
    "rocketq.cli.broker_commands",
    "rocketq.cli.admin",
    "rocketq.cli.bench",
    "rocketq.cli.console",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rocketq", description="Apache RocketMQ 4.x, rebuilt in Python.")
    parser.add_argument("--version", action="version", version=f"rocketq {rocketq.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    add_logging_options_everywhere(parser)  # last: on every subcommand too, so they may follow it
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        configure_logging(args)
    except OSError as exc:
        print(f"rocketq: cannot write the log file {args.log_file}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return call_command(func, args)  # BrokenPipeError (| head) ends quietly


if __name__ == "__main__":
    sys.exit(main())
