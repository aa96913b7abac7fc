"""Server subcommands: ``rocketq namesrv`` (and, later, ``broker`` and ``standalone``).

Each subcommand is one ``add_<name>_command(subparsers)`` function that sets ``func`` on its parser, plus one
``cmd_<name>(args)`` that builds the server(s) and hands an async main to ``run_async``. Shared helpers:

* ``run_async(main)``: runs a coroutine on uvloop when it is installed, else on the default loop;
* ``wait_for_shutdown_signal()``: returns once SIGINT or SIGTERM arrives;
* ``serve(name, server, host)``: start, print the address, wait for a signal, close.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

from rocketq.cli.startup import StartupError, listen_error, start_error, usable_directory
from rocketq.common.settings import key_values

log = logging.getLogger("rocketq.cli.servers")


class ServerLike(Protocol):
    async def start(self) -> int: ...

    @property
    def listen_addresses(self) -> list[str]: ...

    async def close(self) -> None: ...


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_namesrv_command(subparsers)
    add_controller_command(subparsers)


# ------------------------------------------------------------------------------------------- namesrv


def add_namesrv_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("namesrv", help="run a name server", description="Run a RocketMQ 4.x name server.")
    p.add_argument("--host", default="0.0.0.0", help="listen address (default 0.0.0.0)")
    p.add_argument("--port", type=int, default=9876, help="listen port, 0 for any free port (default 9876)")
    p.add_argument("--home", default="./data/namesrv", help="home directory: kvConfig.json (default ./data/namesrv)")
    p.add_argument("--order-message-enable", action="store_true", help="put orderTopicConf into topic routes")
    p.add_argument("--acl-file", metavar="YML",
                   help="protect the name server: write requests need a signed admin account of this file (aclFile)")
    p.add_argument("--insecure", action="store_true",
                   help="listen on a non-loopback --host without name server protection (allowInsecureBind=true)")
    p.add_argument("-p", "--printConfigItem", dest="print_config", action="store_true",
                   help="print the effective configuration (key=value, as mqnamesrv -p) and exit")  # fmt: skip
    p.add_argument("settings", nargs="*", metavar="key=value",
                   help="name server properties by their Java names, e.g. serverMaxConnections=5000")  # fmt: skip
    p.set_defaults(func=cmd_namesrv)


def cmd_namesrv(args: argparse.Namespace) -> int:
    from rocketq.errors import ConfigError
    from rocketq.namesrv import NamesrvConfig, NamesrvServer

    try:
        config = NamesrvConfig(
            listen_host=args.host,
            listen_port=args.port,
            home_dir=Path(args.home),
            order_message_enable=args.order_message_enable,
            allow_insecure_bind=args.insecure,
            acl_file=Path(args.acl_file) if args.acl_file else None,
        )
        settings = key_values(args.settings)
        config.update_from_properties(settings, strict=True)
    except ConfigError as exc:
        print(f"rocketq namesrv: {exc}", file=sys.stderr)
        return 2
    if args.print_config:
        sys.stdout.write(config.to_properties())
        return 0
    try:
        usable_directory("--home", config.home_dir)
    except StartupError as exc:
        print(f"rocketq namesrv: {exc}", file=sys.stderr)
        return 1
    from rocketq.replication.controller.store import MetadataStoreError

    try:
        server = NamesrvServer(config)  # with the embedded controller: reads its state file
    except MetadataStoreError as exc:
        print(f"rocketq namesrv: {exc}", file=sys.stderr)
        return 1
    return run_async(lambda: serve("namesrv", server, args.host, args.port))


# ---------------------------------------------------------------------------------------- controller


def add_controller_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "controller", help="run a 5.x controller (automatic failover)",
        description="Run a single RocketMQ 5.x controller: broker groups, masters, in-sync sets, elections.",
    )  # fmt: skip
    p.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9878, help="listen port, 0 for any free port (default 9878)")
    p.add_argument("--store", default="./data/controller",
                   help="directory of the controller's state (controllerStorePath, default ./data/controller)")
    p.add_argument("--insecure", action="store_true",
                   help="listen on a non-loopback --host (the controller has no access control)")
    p.add_argument("settings", nargs="*", metavar="key=value",
                   help="controller properties by their Java names, e.g. enableElectUncleanMaster=true")  # fmt: skip
    p.set_defaults(func=cmd_controller)


def cmd_controller(args: argparse.Namespace) -> int:
    from rocketq.errors import ConfigError
    from rocketq.replication.controller.config import ControllerConfig
    from rocketq.replication.controller.server import ControllerServer, ControllerServerConfig
    from rocketq.replication.controller.store import MetadataStoreError

    try:
        config = ControllerConfig(controller_store_path=Path(args.store))
        settings = key_values(args.settings)
        unknown = set(settings) - set(config.update_from_properties(settings))
        if unknown:
            raise ConfigError(sorted(unknown)[0], "unknown controller setting")
        usable_directory("--store", Path(args.store))
        server = ControllerServer(ControllerServerConfig(args.host, args.port, args.insecure), config)
    except ConfigError as exc:
        print(f"rocketq controller: {exc}", file=sys.stderr)
        return 2
    except (StartupError, MetadataStoreError) as exc:
        print(f"rocketq controller: {exc}", file=sys.stderr)
        return 1
    return run_async(lambda: serve("controller", server, args.host, args.port))


# ------------------------------------------------------------------------------------------- helpers


def run_async(main: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run ``main()`` to completion on uvloop if available; returns its exit code."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on every platform but Windows
        loop_factory = None
    else:
        loop_factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(main())


def shutdown_signal() -> asyncio.Future[str]:
    """A future that gets the name of the first SIGINT or SIGTERM (handlers installed now)."""
    loop = asyncio.get_running_loop()
    received: asyncio.Future[str] = loop.create_future()

    def on_signal(sig: signal.Signals) -> None:
        if not received.done():
            received.set_result(sig.name)

    for sig in _SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    return received


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def wait_for_shutdown_signal(received: asyncio.Future[str] | None = None) -> str:
    """Wait for SIGINT or SIGTERM (``received`` from ``shutdown_signal``, or installed now) and return its name."""
    if received is None:
        received = shutdown_signal()
    try:
        return await received
    finally:
        loop = asyncio.get_running_loop()
        for sig in _SIGNALS:
            loop.remove_signal_handler(sig)


async def serve(name: str, server: ServerLike, host: str, port: int = 0) -> int:
    """Start ``server``, print where it listens, run until SIGINT/SIGTERM, then close it. A start that fails
    (the port taken, a file it cannot open) is one line on stderr and exit code 1."""
    from rocketq.errors import ConfigError

    try:
        port = await server.start()
    except ConfigError as exc:  # a setting it cannot serve with (an unprotected bind, a TLS file): checked
        print(f"rocketq {name}: {exc}", file=sys.stderr)  # before anything starts, so nothing to close
        return 2
    except OSError as exc:
        why = start_error(exc) if exc.filename is not None else listen_error(host, port, exc)
        print(f"rocketq {name}: {why}", file=sys.stderr)
        await server.close()
        return 1
    try:
        received = shutdown_signal()  # before the line: whoever reads it may stop us at once
        where = ", ".join(server.listen_addresses) or _format_addr(host, port)  # as bound: 0.0.0.0 = everywhere
        print(f"rocketq {name} listening on {where}", flush=True)
        sig = await wait_for_shutdown_signal(received)
        log.info("%s.shutdown signal=%s", name, sig)
    finally:
        await server.close()
    return 0


def _format_addr(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
