"""``rocketq broker`` and ``rocketq standalone``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from rocketq.broker.config import BrokerConfig
from rocketq.broker.controller import BrokerController
from rocketq.errors import ConfigError


def register(sub: Any) -> None:
    p = sub.add_parser("broker", help="run a broker")
    p.add_argument("-n", "--namesrv", help="name server addresses, ';'-separated (or NAMESRV_ADDR)")
    p.add_argument("-c", "--config", help="a broker.conf (Java properties) file")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="broker.conf properties")
    p.set_defaults(func=_run_broker)

    s = sub.add_parser("standalone", help="run a name server and a broker in one process")
    s.add_argument("--dir", default="./data", help="data directory (store under DIR/store, default ./data)")
    s.add_argument("--namesrv-port", type=int, default=9876, help="name server port (0 = any free port)")
    s.add_argument("-c", "--config", help="a broker.conf (Java properties) file")
    s.add_argument("overrides", nargs="*", metavar="key=value", help="broker.conf properties")
    s.set_defaults(func=_run_standalone)


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.new_event_loop()


async def _wait_for_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def _run_broker(args: argparse.Namespace) -> int:
    overrides = list(args.overrides)
    if args.namesrv:
        overrides.append(f"namesrvAddr={args.namesrv}")
    try:
        cfg = BrokerConfig.load(args.config, overrides)
    except ConfigError as exc:
        print(f"rocketq broker: {exc}", file=sys.stderr)
        return 2

    async def main() -> bool:
        broker = BrokerController(cfg)
        await broker.start()
        print(f"broker {cfg.brokerName} listening on {cfg.broker_addr} (namesrv {cfg.namesrvAddr})", flush=True)
        try:
            await _wait_for_signal()
        finally:
            saved = await broker.shutdown()
        return saved

    return _run("broker", main)


def _run(what: str, main: Callable[[], Coroutine[Any, Any, bool]]) -> int:
    """Exit codes: 0 stopped with everything saved, 1 something could not be saved at shutdown (logged), 2 a
    config file it could not start with (named on stderr)."""
    try:
        with asyncio.Runner(loop_factory=_new_loop) as runner:
            saved = runner.run(main())
    except ConfigError as exc:
        print(f"rocketq {what}: {exc}", file=sys.stderr)
        return 2
    return 0 if saved else 1


def _run_standalone(args: argparse.Namespace) -> int:
    from rocketq.namesrv.config import NamesrvConfig
    from rocketq.namesrv.server import NamesrvServer

    data = Path(args.dir)
    base = {
        "storePathRootDir": str(data / "store"),
    }
    try:
        cfg = BrokerConfig.load(args.config, list(args.overrides), base=base)
    except ConfigError as exc:
        print(f"rocketq standalone: {exc}", file=sys.stderr)
        return 2

    async def main() -> bool:
        namesrv = NamesrvServer(
            NamesrvConfig(listen_host=cfg.listenHost, listen_port=args.namesrv_port, home_dir=data / "namesrv")
        )
        port = await namesrv.start()
        if not cfg.namesrvAddr:  # the embedded name server, on the port it actually got
            cfg.namesrvAddr = f"127.0.0.1:{port}"
        broker = BrokerController(cfg)
        try:
            await broker.start()
            print(f"name server listening on {cfg.listenHost}:{namesrv.port}", flush=True)
            print(f"broker {cfg.brokerName} listening on {cfg.broker_addr} (store {cfg.storePathRootDir})", flush=True)
            await _wait_for_signal()
        finally:
            saved = await broker.shutdown()
            await namesrv.close()
        return saved

    return _run("standalone", main)
