"""What ``rocketq console`` and ``rocketq standalone --console-port`` share: the bind rule, the listening line,
the standalone's console."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketq.cli.startup import StartupError, listen_error
from rocketq.remoting.exposure import check_bind

if TYPE_CHECKING:
    from rocketq.broker.config import BrokerConfig
    from rocketq.console.server import ConsoleServer


def check_console_bind(host: str, *, login: bool, allowed: bool, host_key: str) -> None:
    """The servers' fail-closed rule for the console's listening address."""
    check_bind("the console", host_key, host, protected=login, protection="ACL login", allowed=allowed,
               loopback=f"{host_key} 127.0.0.1")  # fmt: skip


def console_line(server: ConsoleServer) -> str:
    """The line a supervisor (and the tests) read: where the console listens."""
    return f"console listening on {server.url}" + (" (ACL login)" if server.login else "")


async def start_console(cfg: BrokerConfig, host: str, port: int, *, login: bool) -> ConsoleServer:
    """The console of ``standalone``, a client of its own name server (over loopback, as any client: the console
    reaches the cluster only through the client SDK). A TLS-enforcing broker is dialled with TLS, unverified:
    the console talks to this very process."""
    from rocketq.client import ClientTls
    from rocketq.client.config import ClientConfig
    from rocketq.console.server import ConsoleServer

    tls = ClientTls(verify=False) if cfg.tlsServerMode.strip().lower() == "enforcing" else None
    server = ConsoleServer(ClientConfig(namesrv_addr=cfg.namesrvAddr, tls=tls), host, port, login=login)
    try:
        await server.start()
    except OSError as exc:
        raise StartupError(f"console: {listen_error(host, port, exc)}") from None
    return server
