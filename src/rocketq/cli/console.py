"""``rocketq console``: the web console (docs/console.md) for the cluster behind a name server.

``standalone`` serves the same console in its own event loop (``--console-port``); both check the bind the way
the servers do (remoting/exposure.py): an address other machines can reach needs login (ACL) or ``--insecure``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from rocketq.cli.command import client_config, credential_args
from rocketq.cli.console_serve import check_console_bind, console_line
from rocketq.cli.output import UsageError
from rocketq.cli.tls_args import add_tls_arguments
from rocketq.errors import ConfigError

DEFAULT_PORT = 8080


def register(sub: Any) -> None:
    p = sub.add_parser("console", help="serve the web console (RocketMQ Dashboard's pages) for a cluster")
    p.add_argument("-n", "--namesrv", default=os.environ.get("NAMESRV_ADDR"),
                   help="name server address(es), 'host:port;host:port' (default $NAMESRV_ADDR)")  # fmt: skip
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 = any free one)")
    p.add_argument("--acl", action="store_true",
                   help="the brokers have aclEnable=true: every page needs a login with an ACL admin account, "
                        "whose signature the console then puts on that session's requests")  # fmt: skip
    p.add_argument(
        "--insecure",
        action="store_true",
        help="listen on a non-loopback --host without login (a firewall or private network protects it)",
    )
    p.add_argument("--timeout", type=float, default=5.0, help="request timeout in seconds (default 5)")
    add_tls_arguments(p)
    credential_args(p)  # without --acl: one account signs every page's requests (Dashboard's accessKey setting)
    p.set_defaults(func=_run_console)


def _run_console(args: argparse.Namespace) -> int:
    from rocketq.cli.broker_commands import _run, _stop_on_signal
    from rocketq.console.server import ConsoleServer

    if not args.namesrv:
        print("rocketq console: give the name server (-n HOST:PORT or $NAMESRV_ADDR)", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535:
        print(f"rocketq console: --port {args.port} is not a TCP port", file=sys.stderr)
        return 2
    try:
        check_console_bind(args.host, login=args.acl, allowed=args.insecure, host_key="--host")
    except ConfigError as exc:
        print(f"rocketq console: {exc}", file=sys.stderr)
        return 2
    if args.acl:  # each browser logs in with its own account; a configured one ($ROCKETQ_ACCESS_KEY) is not used
        args.access_key = args.secret_key = args.security_token = None
    try:
        config = client_config(args)
    except UsageError as exc:
        print(f"rocketq console: {exc}", file=sys.stderr)
        return 2

    async def main() -> bool:
        from rocketq.cli.startup import StartupError, listen_error

        server = ConsoleServer(config, args.host, args.port, login=args.acl, timeout=args.timeout)
        try:
            await server.start()
        except OSError as exc:
            raise StartupError(listen_error(args.host, args.port, exc)) from None
        stop = _stop_on_signal()
        print(f"{console_line(server)} (namesrv {args.namesrv})", flush=True)
        try:
            await stop.wait()
        finally:
            await server.close()
        return True

    return _run("console", main)
