"""The one exception hierarchy of rocketq.

::

    RocketQError
    ├── ProtocolError            malformed frame, header or record (the codec raises only this)
    ├── ConfigError              a bad configuration key or value (names the key)
    ├── RemotingError            transport failures
    │   ├── RemotingConnectError
    │   ├── RemotingTimeoutError
    │   └── RemotingClosedError
    ├── BrokerError              a non-success response code; one subclass per code (``error_for_code``)
    └── ClientError              misuse of the client API (not started, bad argument, ...)

Statuses that are not errors (``PULL_NOT_FOUND``, ``PULL_RETRY_IMMEDIATELY``, ``PULL_OFFSET_MOVED``) are
returned as values, never raised.
"""

from __future__ import annotations

from rocketq.codes import ResponseCode


class RocketQError(Exception):
    """Base of every error rocketq raises on purpose."""


class ProtocolError(RocketQError):
    """Bytes that do not form a valid frame, header, body or record."""


class ConfigError(RocketQError, ValueError):
    """A configuration key that is unknown or has a bad value."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"config {key!r}: {message}")
        self.key = key


class RemotingError(RocketQError):
    """The transport failed; the request may or may not have reached the peer."""


class RemotingConnectError(RemotingError):
    pass


class RemotingTimeoutError(RemotingError, TimeoutError):
    pass


class RemotingClosedError(RemotingError):
    pass


class ClientError(RocketQError):
    """The client API was used in a way it does not support."""


class BrokerError(RocketQError):
    """A response whose code is not SUCCESS. ``code`` is the wire response code."""

    code: int = ResponseCode.SYSTEM_ERROR
    retriable: bool = False
    refresh_route: bool = False

    def __init__(self, remark: str | None = None, code: int | None = None) -> None:
        if code is not None:
            self.code = code
        self.remark = remark or ""
        super().__init__(f"{_code_name(self.code)} ({self.code}): {self.remark}")


def _code_name(code: int) -> str:
    try:
        return ResponseCode(code).name
    except ValueError:
        return "UNKNOWN"


class SystemError_(BrokerError):
    code = ResponseCode.SYSTEM_ERROR
    retriable = True


class SystemBusyError(BrokerError):
    code = ResponseCode.SYSTEM_BUSY
    retriable = True


class RequestCodeNotSupportedError(BrokerError):
    code = ResponseCode.REQUEST_CODE_NOT_SUPPORTED


class MessageIllegalError(BrokerError):
    code = ResponseCode.MESSAGE_ILLEGAL


class ServiceNotAvailableError(BrokerError):
    code = ResponseCode.SERVICE_NOT_AVAILABLE
    retriable = True


class NoPermissionError(BrokerError):
    code = ResponseCode.NO_PERMISSION


class TopicNotExistError(BrokerError):
    code = ResponseCode.TOPIC_NOT_EXIST
    refresh_route = True


class QueryNotFoundError(BrokerError):
    code = ResponseCode.QUERY_NOT_FOUND


class SubscriptionParseFailedError(BrokerError):
    code = ResponseCode.SUBSCRIPTION_PARSE_FAILED


class SubscriptionNotExistError(BrokerError):
    code = ResponseCode.SUBSCRIPTION_NOT_EXIST
    retriable = True


class SubscriptionNotLatestError(BrokerError):
    code = ResponseCode.SUBSCRIPTION_NOT_LATEST
    retriable = True


class SubscriptionGroupNotExistError(BrokerError):
    code = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


class ConsumerNotOnlineError(BrokerError):
    code = ResponseCode.CONSUMER_NOT_ONLINE


def _all_subclasses(cls: type[BrokerError]) -> list[type[BrokerError]]:
    out: list[type[BrokerError]] = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_all_subclasses(sub))
    return out


_BY_CODE: dict[int, type[BrokerError]] = {c.code: c for c in _all_subclasses(BrokerError)}


def error_for_code(code: int, remark: str | None = None) -> BrokerError:
    """Build the exception for a non-success response code."""
    cls = _BY_CODE.get(code, BrokerError)
    return cls(remark, code=code)
