"""The gRPC clients the endpoint knows: their settings, and the channel the broker reaches them by.

The broker's client tables (``ProducerManager``, ``ConsumerManager``) hold remoting ``Connection``s; a gRPC
client is registered there with a ``GrpcClientConnection`` — a connection without a socket whose only way
out is the client's Telemetry stream. So the broker's own services reach gRPC clients unchanged: the
transaction check's CHECK_TRANSACTION_STATE to "a live producer of the group" arrives here and goes out as a
``recover_orphaned_transaction_command`` (Java's ``GrpcClientChannel`` does the same). Other one-way
commands (NOTIFY_CONSUMER_IDS_CHANGED) mean nothing to a gRPC client and are dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from rocketq.codes import RequestCode
from rocketq.errors import ProtocolError
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader
from rocketq.protocol.message import PROP_PGROUP, MessageRecord, decode_record
from rocketq.remoting.connection import Connection

log = logging.getLogger(__name__)

#: a check the broker sent: (the client's connection, producer group, header, the half message as sent)
CheckListener = Callable[["GrpcClientConnection", str, CheckTransactionStateRequestHeader, MessageRecord], None]


class _NoRequests:
    """A gRPC client sends nothing through remoting: the connection's dispatcher is never called."""

    def dispatch(self, conn: Connection, cmd: RemotingCommand) -> None:
        raise AssertionError("a gRPC client connection has no socket to read from")

    def connection_lost(self, conn: Connection) -> None:
        pass


class GrpcClientConnection(Connection):
    """The broker-side handle of one gRPC client (by client id): a producer or consumer channel kind."""

    def __init__(self, client_id: str, language: str, remote: str, on_check: CheckListener) -> None:
        super().__init__(_NoRequests())
        self.client_id = client_id
        self.language = language or "OTHER"
        self.remote = remote
        host, _, port = remote.rpartition(":")
        self.remote_host = (host or remote, int(port) if port.isdigit() else 0)
        self._on_check = on_check
        #: the open Telemetry stream's outbox (the newest stream wins), None while none is open
        self.outbox: asyncio.Queue[svc.TelemetryCommand | None] | None = None

    def push(self, command: svc.TelemetryCommand) -> bool:
        """Queue a server command on the client's stream; False when it has none open."""
        if self.outbox is None or self.closed:
            return False
        self.outbox.put_nowait(command)
        return True

    def write(self, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.CHECK_TRANSACTION_STATE:
            self._check(cmd)
        # anything else the broker tells a remoting client (members changed, …) has no gRPC meaning

    def write_many(self, cmds: list[RemotingCommand]) -> None:
        for cmd in cmds:
            self.write(cmd)

    def _check(self, cmd: RemotingCommand) -> None:
        try:
            header = CheckTransactionStateRequestHeader.from_ext(cmd.ext_fields)
            rec = decode_record(cmd.body, with_body=True)
        except (ProtocolError, ValueError) as exc:
            log.warning("grpc.check_undecodable client=%s error=%s", self.client_id, exc)
            return
        self._on_check(self, rec.properties.get(PROP_PGROUP, ""), header, rec)

    def close(self) -> None:
        """Expired or unregistered: the broker's tables forget it; an open stream is told to end."""
        if self.closed:
            return
        self.closed = True
        if self.outbox is not None:
            self.outbox.put_nowait(None)

    def abort(self) -> None:
        self.close()


@dataclass(slots=True)
class GrpcClient:
    client_id: str
    conn: GrpcClientConnection
    #: the client's own settings as last received (None until its first Telemetry settings command)
    settings: pb.Settings | None = None
    #: broker names of what it registered: publishing topics (producer) or its group (consumer)
    topics: list[str] = field(default_factory=list)
    group: str | None = None


class ClientTable:
    """client id → ``GrpcClient``."""

    def __init__(self, on_check: CheckListener) -> None:
        self._clients: dict[str, GrpcClient] = {}
        self._on_check = on_check

    def get(self, client_id: str) -> GrpcClient | None:
        return self._clients.get(client_id)

    def obtain(self, client_id: str, language: str, remote: str) -> GrpcClient:
        client = self._clients.get(client_id)
        if client is None:
            client = GrpcClient(client_id, GrpcClientConnection(client_id, language, remote, self._on_check))
            self._clients[client_id] = client
        elif client.conn.closed:  # the broker expired it (no heartbeat for a while): a new channel, same settings
            client.conn = GrpcClientConnection(client_id, language or client.conn.language, remote, self._on_check)
        return client

    def remove(self, client_id: str) -> GrpcClient | None:
        client = self._clients.pop(client_id, None)
        if client is not None:
            client.conn.close()
        return client

    def __len__(self) -> int:
        return len(self._clients)

    def all(self) -> list[GrpcClient]:
        return list(self._clients.values())
