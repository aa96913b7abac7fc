"""The plumbing every admin command shares: the parser type, ``run`` (an AdminClient per invocation, failures
as one line and an exit code, as cli/output.py's convention says)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
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


#: where the ACL options take their defaults from (flags win; the environment keeps secrets out of ``ps``)
ACCESS_KEY_ENV = "ROCKETQ_ACCESS_KEY"
SECRET_KEY_ENV = "ROCKETQ_SECRET_KEY"
SECURITY_TOKEN_ENV = "ROCKETQ_SECURITY_TOKEN"


def credential_args(p: argparse.ArgumentParser) -> None:
    """``--access-key``/``--secret-key``/``--security-token``: sign every request (brokers with aclEnable=true)."""
    g = p.add_argument_group("ACL credentials (for brokers with aclEnable=true)")
    g.add_argument("--access-key", default=os.environ.get(ACCESS_KEY_ENV) or None, metavar="AK",
                   help=f"sign every request with this account (default ${ACCESS_KEY_ENV})")  # fmt: skip
    g.add_argument("--secret-key", default=os.environ.get(SECRET_KEY_ENV) or None, metavar="SK",
                   help=f"the account's secret key (default ${SECRET_KEY_ENV}; prefer the variable: "
                        "a flag shows in the process list)")  # fmt: skip
    g.add_argument("--security-token", default=os.environ.get(SECURITY_TOKEN_ENV) or None, metavar="TOKEN",
                   help=f"optional security token, signed too (default ${SECURITY_TOKEN_ENV})")  # fmt: skip


def client_config(args: argparse.Namespace) -> ClientConfig:
    """The ``ClientConfig`` of a command: its name server and, when given, its TLS options and ACL account."""
    cfg = ClientConfig(namesrv_addr=args.namesrv, tls=tls_from_args(args),
                       access_key=getattr(args, "access_key", None), secret_key=getattr(args, "secret_key", None),
                       security_token=getattr(args, "security_token", None))  # fmt: skip
    try:
        cfg.credentials()
    except ValueError as exc:
        raise UsageError(f"{exc} (--access-key/--secret-key or ${ACCESS_KEY_ENV}/${SECRET_KEY_ENV})") from None
    return cfg


def run(fn: AsyncCommand, *, needs_namesrv: bool = True) -> Callable[[argparse.Namespace], int]:
    """The command's ``func``: an AdminClient for the coroutine, its failures as one line and exit code 1.
    ``needs_namesrv=False``: a command that talks to other servers only (``ha switch``: the controller)."""

    def command(args: argparse.Namespace) -> int:
        if needs_namesrv and not args.namesrv:
            print("error: no name server: pass -n host:port or set NAMESRV_ADDR", file=sys.stderr)
            return 2
        if getattr(args, "log_level", "INFO") == "INFO":
            logging.getLogger("rocketq").setLevel(logging.WARNING)

        async def main() -> Any:
            client = AdminClient(config=client_config(args), timeout=args.timeout)
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
