"""``rocketq broker`` and ``rocketq standalone``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocketq.broker.config import BrokerConfig, default_broker_ip, gives_key
from rocketq.cli.console_serve import check_console_bind, console_line, start_console
from rocketq.cli.startup import StartupError, listen_error, start_error, usable_directory
from rocketq.errors import ConfigError

if TYPE_CHECKING:  # the broker's code is imported only by the commands that run one: admin commands start faster
    from rocketq.broker.controller import BrokerController
    from rocketq.console.server import ConsoleServer


def register(sub: Any) -> None:
    p = sub.add_parser("broker", help="run a broker")
    p.add_argument("-n", "--namesrv", help="name server addresses, ';'-separated (or NAMESRV_ADDR)")
    p.add_argument("-c", "--config", help="a broker.conf (Java properties) file")
    p.add_argument("-p", "--printConfigItem", dest="print_config", action="store_true",
                   help="print the effective configuration (key=value, as mqbroker -p) and exit")  # fmt: skip
    p.add_argument("--insecure", action="store_true", help=_INSECURE_HELP)
    p.add_argument("overrides", nargs="*", metavar="key=value", help="broker.conf properties")
    p.set_defaults(func=_run_broker)

    s = sub.add_parser("standalone", help="run a name server and a broker in one process")
    s.add_argument("--dir", default="./data", help="data directory (store under DIR/store, default ./data)")
    s.add_argument("--namesrv-port", type=int, default=9876, help="name server port (0 = any free port)")
    s.add_argument("-c", "--config", help="a broker.conf (Java properties) file")
    s.add_argument("-p", "--printConfigItem", dest="print_config", action="store_true",
                   help="print the broker's effective configuration (key=value) and exit")  # fmt: skip
    s.add_argument("--namesrv-acl-file", metavar="YML",
                   help="protect the name server with this account file (rocketq namesrv --acl-file); the broker "
                        "signs its registrations with accessKey/secretKey")  # fmt: skip
    s.add_argument("--insecure", action="store_true", help=_INSECURE_HELP)
    s.add_argument("--replicas", type=int, default=1, metavar="N",
                   help="run the broker as a master and N-1 slaves (brokerId 1..N-1, stores DIR/store-slaveI, "
                        "listenPort + 100*I; docs/replication.md)")  # fmt: skip
    s.add_argument("--console-port", type=int, default=None, metavar="PORT",
                   help="serve the web console on this port (0 = any free one; default: no console; docs/console.md)")
    s.add_argument("--console-host", default="127.0.0.1",
                   help="the console's address (default 127.0.0.1; another needs aclEnable=true or --insecure)")
    s.add_argument("overrides", nargs="*", metavar="key=value", help="broker.conf properties")
    s.set_defaults(func=_run_standalone)


_INSECURE_HELP = "listen on a non-loopback listenHost without ACL (allowInsecureBind=true; docs/security.md)"


def _overrides(args: argparse.Namespace) -> list[str]:
    """The key=value arguments, with ``--insecure`` as its key (given before them: an explicit value wins)."""
    return ["allowInsecureBind=true"] * bool(args.insecure) + list(args.overrides)


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.new_event_loop()


def _stop_on_signal() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM. Installed before the listening lines are printed: a supervisor that
    stops the process as soon as it has read them gets a clean shutdown, not the default death by signal."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop


def _run_broker(args: argparse.Namespace) -> int:
    overrides = _overrides(args)
    if args.namesrv:
        overrides.append(f"namesrvAddr={args.namesrv}")
    try:
        cfg = BrokerConfig.load(args.config, overrides)
        if not gives_key("brokerIP1", args.config, overrides):
            cfg.brokerIP1 = default_broker_ip(cfg.listenHost)
    except ConfigError as exc:
        print(f"rocketq broker: {exc}", file=sys.stderr)
        return 2
    if args.print_config:
        return _print_config(cfg)

    async def main() -> bool:
        from rocketq.broker.controller import BrokerController
        from rocketq.grpc.server import grpc_front_end

        broker = BrokerController(cfg, grpc=grpc_front_end)
        await _start_broker(broker)
        stop = _stop_on_signal()
        print(f"{_broker_line(broker)} (namesrv {cfg.namesrvAddr})", flush=True)
        try:
            await stop.wait()
        finally:
            saved = await broker.shutdown()
        return saved

    return _run("broker", main, ("storePathRootDir", Path(cfg.storePathRootDir)))


async def _start_broker(broker: BrokerController, who: str = "") -> None:
    """``broker.start()``, with an OSError (its port taken, a store file it cannot open) as a StartupError;
    ``who`` prefixes its message (standalone runs two servers)."""
    cfg = broker.config
    try:
        await broker.start()
    except OSError as exc:
        # the gRPC endpoint's bind error names its own host and port (listen_host, listen_port)
        host, port = getattr(exc, "listen_host", cfg.listenHost), getattr(exc, "listen_port", cfg.listenPort)
        why = start_error(exc) if exc.filename is not None else listen_error(host, port, exc)
        raise StartupError(who + why) from None


def _print_config(cfg: BrokerConfig) -> int:
    """``key=value`` for every setting, as it would start (Java's ``mqbroker -p``), in BrokerConfig's order."""
    sys.stdout.write("".join(f"{key}={value}\n" for key, value in cfg.as_properties().items()))
    return 0


def _run(what: str, main: Callable[[], Coroutine[Any, Any, bool]], *dirs: tuple[str, Path]) -> int:
    """Exit codes: 0 stopped with everything saved, 1 could not start (a port taken, a directory of ``dirs``
    that cannot be used: one line on stderr) or something could not be saved at shutdown (logged), 2 a
    config file it could not start with (named on stderr)."""
    try:
        for key, path in dirs:
            usable_directory(key, path)
        with asyncio.Runner(loop_factory=_new_loop) as runner:
            saved = runner.run(main())
    except ConfigError as exc:
        print(f"rocketq {what}: {exc}", file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"rocketq {what}: {exc}", file=sys.stderr)
        return 1
    return 0 if saved else 1


def _broker_line(broker: BrokerController) -> str:
    """Where it listens as bound (``0.0.0.0`` = every interface; the VIP port after the main one), then the
    address it registers with the name servers — the one clients dial (``brokerIP1:listenPort``)."""
    listen = broker.listen_addresses
    where = listen[0] + (f" (VIP {', '.join(listen[1:])})" if len(listen) > 1 else "")
    return f"broker {broker.config.brokerName} listening on {where}, advertised as {broker.config.broker_addr}"


def _run_standalone(args: argparse.Namespace) -> int:
    from rocketq.namesrv.config import NamesrvConfig
    from rocketq.namesrv.server import NamesrvServer

    data = Path(args.dir)
    base = {
        "storePathRootDir": str(data / "store"),
        # standalone is the whole of RocketMQ on one machine: the 5.x clients' gRPC endpoint is on (port 8081,
        # as Java's local-mode proxy); grpcServerEnable=false turns it off
        "grpcServerEnable": "true",
    }
    try:
        cfg = BrokerConfig.load(args.config, _overrides(args), base=base)
    except ConfigError as exc:
        print(f"rocketq standalone: {exc}", file=sys.stderr)
        return 2
    if args.print_config:
        return _print_config(cfg)
    if args.replicas < 1:
        print("rocketq standalone: --replicas must be at least 1", file=sys.stderr)
        return 2
    if args.replicas > 1 and cfg.brokerRole == "SLAVE":
        print("rocketq standalone: with --replicas the first broker is the master (brokerRole=SLAVE given)",
              file=sys.stderr)  # fmt: skip
        return 2
    slave_cfgs = [_slave_config(cfg, i) for i in range(1, args.replicas)]
    # login is on when the broker or the name server checks accounts: the console then needs an admin account
    console_login = cfg.aclEnable or bool(args.namesrv_acl_file)
    if args.console_port is not None:
        if not 0 <= args.console_port <= 65535:
            print(f"rocketq standalone: --console-port {args.console_port} is not a TCP port", file=sys.stderr)
            return 2
        try:
            check_console_bind(args.console_host, login=console_login, allowed=cfg.allowInsecureBind,
                               host_key="--console-host")  # fmt: skip
        except ConfigError as exc:
            print(f"rocketq standalone: {exc}", file=sys.stderr)
            return 2

    async def main() -> bool:
        limits = cfg.server_limits()  # the embedded name server takes the broker's remoting limits
        namesrv = NamesrvServer(
            NamesrvConfig(
                listen_host=cfg.listenHost, listen_port=args.namesrv_port, home_dir=data / "namesrv",
                max_connections=limits.max_connections, max_partial_frame_bytes=limits.max_partial_frame_bytes,
                write_high_water=limits.write_high_water, write_low_water=limits.write_low_water,
                max_write_buffer=limits.max_write_buffer, allow_insecure_bind=cfg.allowInsecureBind,
                tls_mode=cfg.tlsServerMode, tls_cert_path=cfg.tlsServerCertPath, tls_key_path=cfg.tlsServerKeyPath,
                tls_trust_cert_path=cfg.tlsServerTrustCertPath, tls_need_client_auth=cfg.tlsServerNeedClientAuth,
                acl_file=Path(args.namesrv_acl_file) if args.namesrv_acl_file else None,
            )
        )  # fmt: skip
        try:
            port = await namesrv.start()
        except OSError as exc:
            await namesrv.close()
            why = start_error(exc) if exc.filename is not None else listen_error(cfg.listenHost, args.namesrv_port, exc)
            raise StartupError(f"name server: {why}") from None
        if not cfg.namesrvAddr:  # the embedded name server, on the port it actually got
            cfg.namesrvAddr = f"127.0.0.1:{port}"
        from rocketq.broker.controller import BrokerController
        from rocketq.grpc.server import grpc_front_end

        broker = BrokerController(cfg, grpc=grpc_front_end)
        slaves: list[BrokerController] = []
        console: ConsoleServer | None = None
        try:
            await _start_broker(broker, "broker: ")
            for scfg in slave_cfgs:  # after the master: their first registration already names its HA address
                scfg.namesrvAddr = cfg.namesrvAddr
                slave = BrokerController(scfg, grpc=grpc_front_end)
                slaves.append(slave)
                await _start_broker(slave, f"slave {scfg.brokerId}: ")
            if args.console_port is not None:
                console = await start_console(cfg, args.console_host, args.console_port, login=console_login)
            stop = _stop_on_signal()
            print(f"name server listening on {', '.join(namesrv.listen_addresses)}", flush=True)
            print(f"{_broker_line(broker)} (store {cfg.storePathRootDir})", flush=True)
            if broker.grpc is not None:
                print(f"gRPC (RocketMQ 5.x clients) listening on {broker.grpc.address}", flush=True)
            for slave in slaves:
                print(f"slave {slave.config.brokerId} of {_broker_line(slave)} (store {slave.config.storePathRootDir})",
                      flush=True)  # fmt: skip
            if console is not None:
                print(console_line(console), flush=True)
            await stop.wait()
        finally:
            if console is not None:
                await console.close()
            saved = True
            for slave in reversed(slaves):
                saved = await slave.shutdown() and saved
            saved = await broker.shutdown() and saved
            await namesrv.close()
        return saved

    dirs = (("--dir", data), ("storePathRootDir", Path(cfg.storePathRootDir)), ("--dir", data / "namesrv"),
            *(("storePathRootDir", Path(s.storePathRootDir)) for s in slave_cfgs))  # fmt: skip
    return _run("standalone", main, *dirs)


def _slave_config(master: BrokerConfig, i: int) -> BrokerConfig:
    """Slave ``i`` of ``rocketq standalone --replicas``: the master's settings, its own id, role, store and ports."""
    cfg = copy.deepcopy(master)
    cfg.brokerId = i
    cfg.brokerRole = "SLAVE"
    cfg.storePathRootDir = f"{master.storePathRootDir}-slave{i}"
    cfg.listenPort = master.listenPort + 100 * i if master.listenPort else 0
    cfg.haListenPort = 0  # its own listenPort + 1 (or any free port)
    cfg.grpcServerEnable = False  # a slave takes no sends and serves no pops: 5.x clients use the master's
    cfg.validate()
    return cfg
