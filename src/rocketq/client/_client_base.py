"""What every client shares, producer and consumers: the group, a private copy of the ``ClientConfig``, the
``ClientInstance`` it runs on once started, and ``async with`` for ``start()`` … ``shutdown()``.

Java counterpart: ``ClientConfig``, the class ``DefaultMQProducer`` and ``DefaultMQPushConsumer`` extend for the
settings every client has (``namesrvAddr``, ``instanceName``, …).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

from rocketq.client._instance import ClientInstance
from rocketq.client._validators import check_group
from rocketq.client.config import ClientConfig
from rocketq.client.errors import ClientNotStartedError

__all__ = ["ClientBase"]


class ClientBase(ABC):
    """A producer's or consumer's group, configuration and instance; subclasses implement ``start``/``shutdown``."""

    _kind = "client"  #: "producer" or "consumer", in the not-started error

    def __init__(self, group: str, namesrv_addr: str | None, config: ClientConfig | None) -> None:
        check_group(group)
        self.group = group
        # A private copy: start() may set instance_name, which must not leak into other clients sharing the config.
        self.config = dataclasses.replace(config) if config is not None else ClientConfig()
        if namesrv_addr is not None:
            self.config.namesrv_addr = namesrv_addr
        self._instance: ClientInstance | None = None
        self._running = False

    @property
    def instance(self) -> ClientInstance:
        """The instance this client runs on; ``ClientNotStartedError`` before ``start()`` or after ``shutdown()``."""
        if self._instance is None or not self._running:
            raise ClientNotStartedError(f"the {self._kind} {self.group!r} is not started")
        return self._instance

    @abstractmethod
    async def start(self) -> None:
        """Join (or create) the client instance and begin working."""

    @abstractmethod
    async def shutdown(self) -> None:
        """Stop working and leave the client instance."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.shutdown()
