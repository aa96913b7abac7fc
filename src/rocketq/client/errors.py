"""Exceptions raised by the client SDK.

Everything derives from ``rocketq.errors``; the classes here are the client's own failure classes::

    RocketQError
    ├── RemotingError                   (rocketq.errors) the transport failed
    │   ├── RemotingConnectError
    │   ├── RemotingTimeoutError
    │   └── RemotingClosedError
    ├── BrokerError                     (rocketq.errors) a broker / name server answered with an error code;
    │                                   one subclass per code, e.g. TopicNotExistError, NoPermissionError
    └── ClientError                     (rocketq.errors) misuse or a client-side failure
        ├── ClientNotStartedError       the producer / consumer is not started (or already closed)
        ├── InvalidMessageError         a message the broker would reject (empty body, too large, bad topic)
        ├── InvalidMessageIdError       not a message id, or a client id where an offset id is needed
        ├── NoRouteError                the name server knows no route for the topic (and no TBW102 fallback)
        ├── BrokerNotFoundError         a broker name with no address in the route
        ├── SendFailedError             every send attempt failed; ``__cause__`` is the last failure
        │   └── SendTimeoutError        the send timeout ran out before the retries did
        ├── QueueNotAssignedError       seek / commit on a queue this consumer does not own
        └── InvalidOffsetError          a seek outside [min offset, max offset]

A non-retriable broker error during a synchronous send (e.g. ``MessageIllegalError``) is raised as is,
like Java's ``MQBrokerException``; retriable ones (Java's ``retryResponseCodes``) are retried and, when the
retries run out, wrapped in ``SendFailedError``.
"""

from __future__ import annotations

from rocketq.errors import BrokerError, ClientError

__all__ = [
    "BrokerNotFoundError",
    "ClientNotStartedError",
    "InvalidMessageError",
    "InvalidMessageIdError",
    "InvalidOffsetError",
    "NoRouteError",
    "QueueNotAssignedError",
    "SendFailedError",
    "SendTimeoutError",
]


class ClientNotStartedError(ClientError):
    """The client is not running: call ``start()`` first (or it was already shut down)."""


class InvalidMessageError(ClientError, ValueError):
    """A message that fails the client-side checks (Java ``Validators.checkMessage``)."""


class InvalidMessageIdError(ClientError, ValueError):
    """A message id that cannot be used as given: not a message id at all, or a client id (``UNIQ_KEY``) where
    a broker offset id is needed (a client id is searched for in its topic)."""


class NoRouteError(ClientError):
    """No route for a topic: the name server does not know it (and auto-creation is not available)."""

    def __init__(self, topic: str, detail: str = "") -> None:
        super().__init__(f"no route info for topic {topic!r}" + (f": {detail}" if detail else ""))
        self.topic = topic


class BrokerNotFoundError(ClientError):
    """A broker name from the route has no usable address."""

    def __init__(self, broker_name: str) -> None:
        super().__init__(f"the broker {broker_name!r} does not exist in the route")
        self.broker_name = broker_name


class SendFailedError(ClientError):
    """All send attempts failed. ``brokers_tried`` lists the broker of each attempt; ``__cause__`` is the last error
    (also in the message); ``response_code`` is the last broker answer's code, None when no broker answered (Java
    ``MQClientException.getResponseCode``)."""

    def __init__(self, message: str, brokers_tried: list[str] | None = None, last_error: BaseException | None = None):
        super().__init__(message)
        self.brokers_tried = brokers_tried or []
        self.response_code: int | None = last_error.code if isinstance(last_error, BrokerError) else None


class SendTimeoutError(SendFailedError, TimeoutError):
    """The send timeout elapsed before a send attempt succeeded."""


class QueueNotAssignedError(ClientError):
    """The message queue is not assigned to this consumer (not subscribed/assigned, or being rebalanced)."""


class InvalidOffsetError(ClientError, ValueError):
    """A seek offset outside the queue's ``[min_offset, max_offset]``."""
