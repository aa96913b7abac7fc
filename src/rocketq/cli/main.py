"""``rocketq`` command: one argparse tree; each command group lives in its own module.

A module that adds commands exposes ``register(subparsers)``; each subcommand sets ``func`` (returning an exit
code) on its parser via ``set_defaults``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

import rocketq
from rocketq.cli.output import call_command

# Modules that contribute subcommands; a missing one is skipped so partial installs still run.
_COMMAND_MODULES = (
    "rocketq.cli.servers",
    "rocketq.cli.broker_commands",
    "rocketq.cli.admin",
    "rocketq.cli.bench",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rocketq", description="Apache RocketMQ 4.x, rebuilt in Python.")
    parser.add_argument("--version", action="version", version=f"rocketq {rocketq.__version__}")
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="stderr log level"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return call_command(func, args)  # BrokenPipeError (| head) ends quietly


if __name__ == "__main__":
    sys.exit(main())
