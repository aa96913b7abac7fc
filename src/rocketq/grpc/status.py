"""Outcomes as RocketMQ 5.x answers them: in-band ``Status{code, message}``, never a gRPC error.

The reference is Java's proxy (``ResponseBuilder``, rocketmq-5x-grpc.md §1 and §2.1): a refusal is an answer
with gRPC OK and the ``apache.rocketmq.v2.Code`` in ``status``; only Telemetry fails with real gRPC codes.
``GrpcRefusal`` is how the adapters stop a request with a code; the servicer turns it into the status.
"""

from __future__ import annotations

from rocketq.codes import ResponseCode
from rocketq.grpc.proto import messaging_types_pb2 as pb

Code = pb.Code


class GrpcRefusal(Exception):
    """A request refused with ``code`` (an ``apache.rocketmq.v2.Code`` value) and ``message``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def status(code: int, message: str | None = None) -> pb.Status:
    """A ``Status``; the message defaults to the code's name, as the proxy writes ``Code.OK.name()``."""
    return pb.Status(code=code, message=message if message is not None else Code.Name(code))  # type: ignore[arg-type]


OK_STATUS_NAME = "OK"

#: remoting response code → gRPC Code (``ResponseBuilder.buildStatus(Throwable)`` and the activities' maps)
_FROM_REMOTING: dict[int, int] = {
    ResponseCode.SUCCESS: Code.OK,
    ResponseCode.SYSTEM_BUSY: Code.TOO_MANY_REQUESTS,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: Code.NOT_IMPLEMENTED,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: Code.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.TOPIC_NOT_EXIST: Code.TOPIC_NOT_FOUND,
    ResponseCode.NO_PERMISSION: Code.FORBIDDEN,
    ResponseCode.MESSAGE_ILLEGAL: Code.BAD_REQUEST,
    ResponseCode.FLUSH_DISK_TIMEOUT: Code.MASTER_PERSISTENCE_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: Code.SLAVE_PERSISTENCE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: Code.HA_NOT_AVAILABLE,
    ResponseCode.SERVICE_NOT_AVAILABLE: Code.INTERNAL_SERVER_ERROR,
    ResponseCode.POLLING_FULL: Code.TOO_MANY_REQUESTS,
    ResponseCode.POLLING_TIMEOUT: Code.MESSAGE_NOT_FOUND,
    ResponseCode.NO_MESSAGE: Code.INVALID_RECEIPT_HANDLE,
    ResponseCode.SUBSCRIPTION_PARSE_FAILED: Code.ILLEGAL_FILTER_EXPRESSION,
}


def code_of_remoting(code: int) -> int:
    """The gRPC Code a broker service's remoting ``code`` is answered with (anything unknown: internal)."""
    return _FROM_REMOTING.get(int(code), Code.INTERNAL_SERVER_ERROR)


def from_remoting(code: int, remark: str | None) -> pb.Status:
    mapped = code_of_remoting(code)
    return status(mapped, remark if remark and mapped != Code.OK else None)


def combined(codes: list[int]) -> pb.Status:
    """The top-level status of a batch: the one distinct code, or MULTIPLE_RESULTS (proxy's rule)."""
    distinct = set(codes)
    if len(distinct) == 1:
        return status(distinct.pop())
    if not distinct:
        return status(Code.INTERNAL_SERVER_ERROR, "no entries")
    return status(Code.MULTIPLE_RESULTS)
