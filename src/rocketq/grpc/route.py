"""QueryRoute and QueryAssignment (proxy ``RouteActivity``; rocketmq-5x-grpc.md §3.1, §3.6).

One endpoint serves the broker it runs in (Java's local mode): the route lists this broker's queues of the
topic, with the request's own ``endpoints`` as the broker address (clients keep talking to the address they
were given), scheme set, broker id 0 for a master.

``accept_message_types``: rocketq topics have no ``message.type`` attribute, and one topic serves every kind
of send (a FIFO, delayed or transactional message to any topic is stored as such). So every topic answers
what it really serves: [NORMAL, FIFO, DELAY, TRANSACTION] — Java's MIXED. With Java's default (NORMAL) the
5.x clients would refuse FIFO/DELAY/TRANSACTION sends before they leave the client.
"""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.grpc.names import group_of, resource, topic_of
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.grpc.status import Code, GrpcRefusal, status
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE

ACCEPTED_TYPES = (pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION)


def _endpoints(requested: pb.Endpoints, fallback: tuple[str, int]) -> pb.Endpoints:
    """The request's access point echoed (scheme IPv4 when it did not say), else this endpoint's address."""
    if requested.addresses:
        out = pb.Endpoints()
        out.CopyFrom(requested)
        if out.scheme == pb.ADDRESS_SCHEME_UNSPECIFIED:
            out.scheme = pb.IPv4
        return out
    return pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host=fallback[0], port=fallback[1])])


def _permission(perm: int) -> int:
    readable, writable = bool(perm & PERM_READ), bool(perm & PERM_WRITE)
    if readable and writable:
        return int(pb.READ_WRITE)
    if readable:
        return int(pb.READ)
    if writable:
        return int(pb.WRITE)
    return int(pb.NONE)


def _broker(ctx: BrokerContext, endpoints: pb.Endpoints) -> pb.Broker:
    return pb.Broker(name=ctx.config.brokerName, id=ctx.role.broker_id if ctx.role.is_slave else 0,
                     endpoints=endpoints)  # fmt: skip


def query_route(ctx: BrokerContext, req: svc.QueryRouteRequest, address: tuple[str, int]) -> svc.QueryRouteResponse:
    topic = topic_of(req.topic)
    tc = ctx.topics.get(topic)
    if tc is None:
        raise GrpcRefusal(Code.TOPIC_NOT_FOUND, f"topic not found: {topic}")
    broker = _broker(ctx, _endpoints(req.endpoints, address))
    perm = tc.perm & ctx.config.brokerPermission
    queues = []
    # Java's renumbering: read-only queues, then write-only ones, then READ_WRITE; the usual r == w gives 0..n-1
    r, w = tc.read_queue_nums, tc.write_queue_nums
    both = min(r, w)
    layout = [(PERM_READ, r - both), (PERM_WRITE, w - both), (PERM_READ | PERM_WRITE, both)]
    qid = 0
    for bits, count in layout:
        for _ in range(count):
            queues.append(pb.MessageQueue(topic=resource(topic, req.topic.resource_namespace), id=qid,
                                          permission=_permission(perm & bits),  # type: ignore[arg-type]
                                          broker=broker, accept_message_types=ACCEPTED_TYPES))  # fmt: skip
            qid += 1
    return svc.QueryRouteResponse(status=status(Code.OK), message_queues=queues)


def query_assignment(
    ctx: BrokerContext, req: svc.QueryAssignmentRequest, address: tuple[str, int], orderly: bool
) -> svc.QueryAssignmentResponse:
    """A non-FIFO group gets one assignment with queue id -1 (any queue of the broker); a FIFO group one per
    readable queue."""
    topic = topic_of(req.topic)
    group_of(req.group)
    tc = ctx.topics.get(topic)
    if tc is None:
        raise GrpcRefusal(Code.TOPIC_NOT_FOUND, f"topic not found: {topic}")
    if not (tc.perm & ctx.config.brokerPermission & PERM_READ) or tc.read_queue_nums <= 0 or ctx.role.is_slave:
        raise GrpcRefusal(Code.FORBIDDEN, "no readable queue")
    broker = _broker(ctx, _endpoints(req.endpoints, address))
    ids = list(range(tc.read_queue_nums)) if orderly else [-1]
    topic_res = resource(topic, req.topic.resource_namespace)
    assignments = [
        pb.Assignment(message_queue=pb.MessageQueue(topic=topic_res, id=i, permission=pb.READ_WRITE, broker=broker))
        for i in ids
    ]
    return svc.QueryAssignmentResponse(status=status(Code.OK), assignments=assignments)
