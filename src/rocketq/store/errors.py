"""Store exceptions (few: the store reports outcomes of puts and gets as status values)."""

from __future__ import annotations

from rocketq.errors import RocketQError


class StoreError(RocketQError):
    """The message store cannot do what was asked."""


class StoreLockedError(StoreError):
    """Another store (in this or another process) has the directory open."""


class StoreNotAvailableError(StoreError):
    """The store is not loaded, or has been shut down."""
