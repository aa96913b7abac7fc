"""The plumbing every admin command shares: the parser type, ``run`` (an AdminClient per invocation, failures
as one line and an exit code, as cli/output.py's convention says)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeAlias

from rocketq.cli.output import CommandFailed, UsageError, one_line
from rocketq.cli.tls_args import tls_from_args
from rocketq.client import AdminClient, ClientConfig
from rocketq.errors import RocketQError

if TYPE_CHECKING:  # _SubParsersAction is only subscriptable for type checkers on Python 3.11
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
AsyncCommand = Callable[[argparse.Namespace, AdminClient], Coroutine[Any, Any, Any]]


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def run(fn: AsyncCommand) -> Callable[[argparse.Namespace], int]:
    """The command's ``func``: an AdminClient for the coroutine, its failures as one line and exit code 1."""

    def command(args: argparse.Namespace) -> int:
        if not args.namesrv:
            print("error: no name server: pass -n host:port or set NAMESRV_ADDR", file=sys.stderr)
            return 2
        if getattr(args, "log_level", "INFO") == "INFO":
            logging.getLogger("rocketq").setLevel(logging.WARNING)

        async def main() -> Any:
            config = ClientConfig(tls=tls_from_args(args))
            client = AdminClient(namesrv_addr=args.namesrv, config=config, timeout=args.timeout)
            try:
                return await fn(args, client)
            finally:
                await client.close()

        try:
            return int(asyncio.run(main()) or 0)
        except UsageError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except (RocketQError, CommandFailed, ValueError) as exc:
            # ValueError: the client's word for text that is not what it should be (an id, an expression)
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130

    return command
