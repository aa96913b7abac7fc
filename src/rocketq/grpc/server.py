"""The RocketMQ 5.x gRPC endpoint: ``apache.rocketmq.v2.MessagingService`` served in the broker's process.

Every RPC passes the same gate first (``_gate``): the ``x-mq-client-id`` header (CLIENT_ID_REQUIRED when
empty), then, with ``aclEnable``, the signature and the request's permissions (``auth.py``). Outcomes go in
the answer's ``status`` (gRPC OK), as Java's proxy answers; only Telemetry ends with real gRPC errors. The
work is done by the adapters: ``route``, ``telemetry``, ``producer``, ``consumer``; the RPCs the proxy does not
implement (PullMessage, offsets, RecallMessage, lite subscriptions) stay gRPC UNIMPLEMENTED.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import grpc  # type: ignore[import-untyped]  # grpcio ships no stubs

from rocketq.acl.errors import AclDenied
from rocketq.acl.store import AclStore
from rocketq.acl.validator import peer_ip
from rocketq.broker.context import BrokerContext
from rocketq.broker.messaging.send import SendService
from rocketq.broker.pop.service import PopService
from rocketq.broker.services.transaction import TransactionService
from rocketq.grpc import auth
from rocketq.grpc.clients import ClientTable, GrpcClient, GrpcClientConnection
from rocketq.grpc.consumer import ConsumerService
from rocketq.grpc.convert import SendLimits, to_message
from rocketq.grpc.names import group_of
from rocketq.grpc.producer import ProducerService
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.proto import messaging_service_pb2_grpc as svc_grpc
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.grpc.renew import Renewals
from rocketq.grpc.route import query_assignment, query_route
from rocketq.grpc.status import Code, GrpcRefusal, status
from rocketq.grpc.telemetry import CONSUMER_TYPES, SettingsService, duration_ms
from rocketq.protocol.headers import CheckTransactionStateRequestHeader
from rocketq.protocol.message import PROP_REAL_QID, PROP_REAL_TOPIC, MessageRecord

if TYPE_CHECKING:  # the controller is the composition root: it calls grpc_front_end, never imports it
    from rocketq.broker.controller import BrokerController

log = logging.getLogger(__name__)

CLIENT_ID = "x-mq-client-id"
LANGUAGE = "x-mq-language"
DEFAULT_REQUEST_TIMEOUT_MS = 3_000
#: the largest request accepted (ProxyConfig grpcMaxInboundMessageSize)
MAX_INBOUND_MESSAGE_SIZE = 130 * 1024 * 1024

R = TypeVar("R")


def _metadata(context: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in context.invocation_metadata() or ():
        if isinstance(value, str):
            out[key.lower()] = value
    return out


def _peer(context: Any) -> str:
    """``ipv4:1.2.3.4:5`` / ``ipv6:[::1]:5`` → ``1.2.3.4:5`` / ``[::1]:5``."""
    peer = str(context.peer() or "")
    kind, _, rest = peer.partition(":")
    return rest if kind in ("ipv4", "ipv6") else peer


def _host_of(peer: str) -> str:
    host = peer.rpartition(":")[0] if ":" in peer else peer
    return host.strip("[]")


class GrpcBindError(OSError):
    """The gRPC port cannot be bound (grpcio does not say why; taken is by far the likeliest)."""

    def __init__(self, host: str, port: int, code: int = errno.EADDRINUSE) -> None:
        super().__init__(code, f"the gRPC endpoint cannot listen on {host}:{port} (grpcServerPort)")
        self.listen_host = host
        self.listen_port = port
        self.config_key = "grpcServerPort"  # named in the start-up error: the port is fixed by default (8081)


def _probe_bind(host: str, port: int) -> None:
    """Bind the port once with a plain socket first: a taken port then fails with its real errno, in one line,
    instead of grpcio's core log line and a bare RuntimeError."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as grpcio binds: TIME_WAIT is no obstacle
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise GrpcBindError(host, port, exc.errno or errno.EADDRINUSE) from None


class _Servicer(svc_grpc.MessagingServiceServicer):
    def __init__(self, endpoint: GrpcEndpoint) -> None:
        self._e = endpoint

    async def QueryRoute(self, request: Any, context: Any) -> Any:
        e = self._e
        return await e.gate(request, context, svc.QueryRouteResponse,
                            lambda md, peer: query_route(e.ctx, request, e.advertised))  # fmt: skip

    async def QueryAssignment(self, request: Any, context: Any) -> Any:
        e = self._e
        return await e.gate(request, context, svc.QueryAssignmentResponse, lambda md, peer: query_assignment(
            e.ctx, request, e.advertised, e.orderly(request.group)))  # fmt: skip

    async def Heartbeat(self, request: Any, context: Any) -> Any:
        return await self._e.gate(request, context, svc.HeartbeatResponse,
                                  lambda md, peer: self._e.heartbeat(request, md))  # fmt: skip

    async def SendMessage(self, request: Any, context: Any) -> Any:
        return await self._e.gate(request, context, svc.SendMessageResponse,
                                  lambda md, peer: self._e.producer.send(request, peer))  # fmt: skip

    async def EndTransaction(self, request: Any, context: Any) -> Any:
        return await self._e.gate(request, context, svc.EndTransactionResponse,
                                  lambda md, peer: self._e.producer.end_transaction(request))  # fmt: skip

    async def AckMessage(self, request: Any, context: Any) -> Any:
        return await self._e.gate(request, context, svc.AckMessageResponse,
                                  lambda md, peer: self._e.consumer.ack(request))  # fmt: skip

    async def ChangeInvisibleDuration(self, request: Any, context: Any) -> Any:
        return await self._e.gate(request, context, svc.ChangeInvisibleDurationResponse,
                                  lambda md, peer: self._e.consumer.change_invisible(request))  # fmt: skip

    async def ForwardMessageToDeadLetterQueue(self, request: Any, context: Any) -> Any:
        return await self._e.gate(request, context, svc.ForwardMessageToDeadLetterQueueResponse,
                                  lambda md, peer: self._e.consumer.forward_to_dlq(request))  # fmt: skip

    async def NotifyClientTermination(self, request: Any, context: Any) -> Any:
        return await self._e.gate(request, context, svc.NotifyClientTerminationResponse,
                                  lambda md, peer: self._e.terminate(request, md))  # fmt: skip

    async def ReceiveMessage(self, request: Any, context: Any) -> AsyncIterator[Any]:
        async for frame in self._e.receive(request, context):
            yield frame

    async def Telemetry(self, request_iterator: Any, context: Any) -> AsyncIterator[Any]:
        async for command in self._e.telemetry(request_iterator, context):
            yield command


class GrpcEndpoint:
    """Built by the broker's controller; ``start`` binds ``host:port`` (0: any free port)."""

    def __init__(
        self, ctx: BrokerContext, sends: SendService, transactions: TransactionService, pop: PopService,
        acl: AclStore | None, *, host: str, port: int, validate_message_type: bool = True,
        renew_period_s: float = 5.0,
    ) -> None:  # fmt: skip
        self.ctx = ctx
        self.acl = acl
        self.host = host
        self.port = port
        self.renew_period_s = renew_period_s
        limits = SendLimits(max_body_size=ctx.config.maxMessageSize)
        self.clients = ClientTable(self._on_check)
        self.settings = SettingsService(ctx, validate_message_type=validate_message_type)
        self.producer = ProducerService(ctx, sends, transactions, limits)
        self.renewals = Renewals(pop)
        self.consumer = ConsumerService(ctx, pop, self.renewals)
        self._server: Any = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def advertised(self) -> tuple[str, int]:
        """This endpoint's address for clients that gave none (brokerIP1 and the bound port)."""
        return (self.ctx.config.brokerIP1, self.port)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # ------------------------------------------------------------------------------------- lifecycle

    async def start(self) -> int:
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", MAX_INBOUND_MESSAGE_SIZE),
                                          ("grpc.so_reuseport", 0)])  # fmt: skip
        svc_grpc.add_MessagingServiceServicer_to_server(_Servicer(self), server)  # type: ignore[no-untyped-call]
        _probe_bind(self.host, self.port)
        try:
            bound = server.add_insecure_port(f"{self.host}:{self.port}")
        except RuntimeError:  # grpcio's word for a bind that failed (it logs the errno itself)
            bound = 0
        if not bound:
            raise GrpcBindError(self.host, self.port)
        await server.start()
        self._server = server
        self.port = int(bound)
        task = asyncio.get_running_loop().create_task(self._renew_loop())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        log.info("grpc.started listen=%s:%d", self.host, self.port)
        return self.port

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for client in self.clients.all():
            self.settings.unregister(client)
            self.clients.remove(client.client_id)  # ends its Telemetry stream
        if self._server is not None:
            await self._server.stop(grace=1.0)
            self._server = None

    async def _renew_loop(self) -> None:
        while True:
            await asyncio.sleep(self.renew_period_s)
            try:
                self.renewals.renew_due()
            except Exception:
                log.exception("grpc.renew_pass_failed")

    # ------------------------------------------------------------------------------------------ gate

    def _check_acl(self, md: dict[str, str], peer: str, request: object) -> None:
        if self.acl is None:
            return
        rules = self.acl.rules
        try:  # Java 5's ResponseBuilder: authentication and authorization failures are both UNAUTHORIZED
            auth.authorize(rules, auth.authenticate(rules, peer_ip(_host_of(peer)), md), request)
        except AclDenied as exc:
            raise GrpcRefusal(Code.UNAUTHORIZED, exc.message) from None

    async def gate(
        self, request: object, context: Any, response: Callable[..., R],
        handler: Callable[[dict[str, str], str], R | Awaitable[R]],
    ) -> R:  # fmt: skip
        """Run one unary RPC: client id, ACL, the handler; a refusal or a failure becomes the status."""
        md = _metadata(context)
        if not md.get(CLIENT_ID):
            return response(status=status(Code.CLIENT_ID_REQUIRED, "x-mq-client-id is required"))
        peer = _peer(context)
        try:
            self._check_acl(md, peer, request)
            result = handler(md, peer)
            if isinstance(result, Awaitable):
                return await result
            return result
        except GrpcRefusal as exc:
            return response(status=status(exc.code, exc.message))
        except Exception as exc:
            log.exception("grpc.failed rpc=%s client=%s", type(request).__name__, md.get(CLIENT_ID))
            return response(status=status(Code.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}"))

    # ------------------------------------------------------------------------------------ clients

    def orderly(self, group: pb.Resource) -> bool:
        cfg = self.ctx.groups.find_or_create(group_of(group))
        return bool(cfg is not None and cfg.consume_message_orderly)

    def _kind(self, md: dict[str, str]) -> tuple[GrpcClient, int]:
        """The client and the type its stored settings say (Java dispatches on those, not on the request)."""
        client = self.clients.get(md[CLIENT_ID])
        if client is None or client.settings is None:
            raise GrpcRefusal(Code.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client")
        if client.conn.closed:
            client = self.clients.obtain(client.client_id, md.get(LANGUAGE, ""), client.conn.remote)
        settings = client.settings
        assert settings is not None
        kind = int(settings.client_type)
        if kind == pb.CLIENT_TYPE_UNSPECIFIED:
            kind = int(pb.PRODUCER) if settings.HasField("publishing") else int(pb.SIMPLE_CONSUMER)
        if kind != pb.PRODUCER and kind not in CONSUMER_TYPES:
            raise GrpcRefusal(Code.UNRECOGNIZED_CLIENT_TYPE, pb.ClientType.Name(kind))
        return client, kind

    def heartbeat(self, req: svc.HeartbeatRequest, md: dict[str, str]) -> svc.HeartbeatResponse:
        client, kind = self._kind(md)
        assert client.settings is not None
        if kind == pb.PRODUCER:
            self.settings.register(client, client.settings)
        else:
            group_of(req.group)
            self.settings.register(client, client.settings, replace_subscriptions=False)
        return svc.HeartbeatResponse(status=status(Code.OK))

    def terminate(
        self, req: svc.NotifyClientTerminationRequest, md: dict[str, str]
    ) -> svc.NotifyClientTerminationResponse:
        client, kind = self._kind(md)
        if kind != pb.PRODUCER:
            group_of(req.group)
        self.settings.unregister(client)
        self.renewals.client_gone(client.client_id)
        self.clients.remove(client.client_id)
        return svc.NotifyClientTerminationResponse(status=status(Code.OK))

    def _on_check(self, conn: GrpcClientConnection, group: str, header: CheckTransactionStateRequestHeader,
                  rec: MessageRecord) -> None:  # fmt: skip
        """The broker's transaction check reached a gRPC producer: ask it over its Telemetry stream."""
        transaction_id = header.transaction_id or header.msg_id or ""
        self.producer.remember(group, transaction_id, header.commit_log_offset, header.tran_state_table_offset)
        topic = rec.properties.get(PROP_REAL_TOPIC, rec.topic)
        rec.queue_id = int(rec.properties.get(PROP_REAL_QID, rec.queue_id) or 0)
        command = svc.TelemetryCommand(recover_orphaned_transaction_command=svc.RecoverOrphanedTransactionCommand(
            message=to_message(rec, topic), transaction_id=transaction_id))  # fmt: skip
        if not conn.push(command):
            log.info("grpc.check_skipped client=%s reason=no telemetry stream", conn.client_id)

    # ------------------------------------------------------------------------------------ streams

    async def receive(self, request: svc.ReceiveMessageRequest, context: Any) -> AsyncIterator[Any]:
        md = _metadata(context)
        client_id = md.get(CLIENT_ID, "")
        peer = _peer(context)
        refusal: GrpcRefusal | None = None
        if not client_id:
            refusal = GrpcRefusal(Code.CLIENT_ID_REQUIRED, "x-mq-client-id is required")
        else:
            try:
                self._check_acl(md, peer, request)
            except GrpcRefusal as exc:
                refusal = exc
        if refusal is not None:
            yield svc.ReceiveMessageResponse(status=status(refusal.code, refusal.message))
            done = svc.ReceiveMessageResponse()
            done.delivery_timestamp.GetCurrentTime()
            yield done
            return
        remaining = context.time_remaining()
        time_left = int(remaining * 1000) if remaining is not None else None
        client = self.clients.get(client_id)
        timeout_ms = DEFAULT_REQUEST_TIMEOUT_MS
        if client is not None and client.settings is not None and client.settings.HasField("request_timeout"):
            timeout_ms = duration_ms(client.settings.request_timeout) or DEFAULT_REQUEST_TIMEOUT_MS
        try:
            async for frame in self.consumer.receive(request, client_id, time_left, timeout_ms,
                                                     md.get("x-mq-client-version", "")):
                yield frame
        except Exception as exc:  # a bug must not end the stream without a status
            log.exception("grpc.receive_failed client=%s", client_id)
            yield svc.ReceiveMessageResponse(status=status(Code.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}"))

    async def telemetry(self, requests: Any, context: Any) -> AsyncIterator[svc.TelemetryCommand]:
        md = _metadata(context)
        client_id = md.get(CLIENT_ID, "")
        if not client_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "x-mq-client-id is required")
            return
        peer = _peer(context)
        client = self.clients.obtain(client_id, md.get(LANGUAGE, ""), peer)
        outbox: asyncio.Queue[svc.TelemetryCommand | None] = asyncio.Queue()
        client.conn.outbox = outbox
        failure: list[tuple[Any, str]] = []

        async def read() -> None:
            try:
                async for command in requests:
                    # thread stack traces and verify results answer commands this server never sends
                    if command.HasField("settings"):
                        self._check_acl(md, peer, command)
                        self.settings.register(client, command.settings)
                        outbox.put_nowait(svc.TelemetryCommand(status=status(Code.OK),
                                                               settings=self.settings.merged(command.settings)))
            except GrpcRefusal as exc:  # Java: INVALID_ARGUMENT for a 4xxxx code, else INTERNAL
                code = grpc.StatusCode.INVALID_ARGUMENT if 40000 <= exc.code < 50000 else grpc.StatusCode.INTERNAL
                failure.append((code, f"process client telemetryCommand failed. {exc.message}"))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the client went away mid-read, or a bug: end the stream, no traceback
                if not isinstance(exc, grpc.RpcError):
                    log.exception("grpc.telemetry_failed client=%s", client_id)
                    failure.append((grpc.StatusCode.INTERNAL, f"process client telemetryCommand failed. {exc}"))
            outbox.put_nowait(None)

        reader = asyncio.get_running_loop().create_task(read())
        try:
            while True:
                item = await outbox.get()
                if item is None:
                    break
                yield item
        finally:
            reader.cancel()
            if client.conn.outbox is outbox:
                client.conn.outbox = None
        if failure:
            await context.abort(*failure[0])


def grpc_front_end(broker: BrokerController) -> GrpcEndpoint:
    """The factory a composition root (the CLI, the test clusters) hands ``BrokerController(grpc=...)``: the
    endpoint over that broker's services (``broker/`` cannot import this package)."""
    cfg = broker.config
    return GrpcEndpoint(broker.ctx, broker.send_service, broker.transactions, broker.pop_service, broker.acl,
                        host=cfg.listenHost, port=cfg.grpcServerPort,
                        validate_message_type=cfg.enableTopicMessageTypeCheck)  # fmt: skip
