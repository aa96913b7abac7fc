"""Settings shared by every client (Java ``ClientConfig``). Durations are seconds (floats)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocketq.client.credentials import SessionCredentials
from rocketq.remoting.tls import ClientTls

if TYPE_CHECKING:
    from rocketq.client.metrics import ClientMetrics

__all__ = ["ClientConfig", "ClientTls", "local_ip", "resolve_namesrv_addr"]

NAMESRV_ADDR_ENV = "NAMESRV_ADDR"


def resolve_namesrv_addr(addr: str | None) -> list[str]:
    """``"a:9876;b:9876"`` (or ``$NAMESRV_ADDR`` when None) → list of addresses."""
    raw = addr if addr is not None else os.environ.get(NAMESRV_ADDR_ENV, "")
    return [a.strip() for a in raw.replace(",", ";").split(";") if a.strip()]


def local_ip() -> str:
    """A non-loopback IPv4 address of this host when one exists (Java ``RemotingUtil.getLocalAddress``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # No packet is sent: connect() on UDP only picks the outgoing interface.
        sock.connect(("10.255.255.255", 1))
        ip = str(sock.getsockname()[0])
    except OSError:
        ip = "127.0.0.1"
    finally:
        sock.close()
    return ip


@dataclass(slots=True)
class ClientConfig:
    """Connection and scheduling settings of one client instance.

    ``instance_name`` ``"DEFAULT"`` is replaced by ``"<pid>#<ns>"`` for producers and clustering consumers
    (Java ``changeInstanceNameToPID``), so several clients in one process get distinct client ids.
    """

    namesrv_addr: str | None = None
    client_ip: str = field(default_factory=local_ip)
    instance_name: str = field(default_factory=lambda: os.environ.get("ROCKETMQ_CLIENT_NAME", "DEFAULT"))
    unit_name: str | None = None
    #: Route refresh interval (Java ``pollNameServerInterval``).
    poll_name_server_interval: float = 30.0
    #: rocketq: a failed or lost broker connection refreshes the routes naming that broker at once, then at most
    #: once per this many seconds per topic (0: off, only the periodic poll, as Java)
    failure_route_refresh_interval: float = 1.0
    #: Heartbeat interval (Java ``heartbeatBrokerInterval``).
    heartbeat_broker_interval: float = 30.0
    #: rocketq: while a subscribed topic has no route (or its broker knows no consumer of the group yet), the
    #: rebalance is retried after this, doubling up to the consumer's ``rebalance_interval`` (Java waits the
    #: full 20 s, so a consumer started before its topic exists used to wait up to ~31 s for a first message).
    rebalance_retry_interval: float = 1.0
    #: Consumer offset commit interval (Java ``persistConsumerOffsetInterval``).
    persist_consumer_offset_interval: float = 5.0
    #: Timeout of name-server and admin-style broker calls (Java ``mqClientApiTimeout``).
    mq_client_api_timeout: float = 3.0
    #: Timeout to open a TCP connection.
    connect_timeout: float = 3.0
    #: Language announced in every request header; Java brokers parse it as a ``LanguageCode`` name.
    language: str = "PYTHON"
    #: Dial name servers and brokers with TLS (Java ``tls.enable``); None = plain TCP. See docs/security.md.
    tls: ClientTls | None = None
    #: ACL account (Java ``AclClientRPCHook``): given an access key and a secret key, every request this client
    #: sends — to brokers and name servers — is signed; the secret and the token never appear in ``repr``.
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    security_token: str | None = field(default=None, repr=False)
    #: rocketq: client-side Prometheus metrics (5.x clients' names, ``rocketq.client.metrics``); None: off
    metrics: ClientMetrics | None = field(default=None, repr=False, compare=False)

    def credentials(self) -> SessionCredentials | None:
        """The account to sign with, None without one; a half-given account is a ``ValueError``."""
        if self.access_key is None and self.secret_key is None:
            if self.security_token is not None:
                raise ValueError("security_token given without access_key and secret_key")
            return None
        if not self.access_key or not self.secret_key:
            raise ValueError("ACL credentials need both access_key and secret_key")
        return SessionCredentials(self.access_key, self.secret_key, self.security_token)

    def namesrv_list(self) -> list[str]:
        return resolve_namesrv_addr(self.namesrv_addr)

    def build_client_id(self) -> str:
        cid = f"{self.client_ip}@{self.instance_name}"
        if self.unit_name:
            cid += f"@{self.unit_name}"
        return cid
