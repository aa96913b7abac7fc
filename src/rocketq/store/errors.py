"""Store exceptions (few: the store reports outcomes of puts and gets as status values)."""

from __future__ import annotations

import errno

from rocketq.errors import RocketQError

#: the errors that mean "no space" (a quota counts as a full disk too)
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class StoreError(RocketQError):
    """The message store cannot do what was asked."""


class StoreLockedError(StoreError):
    """Another store (in this or another process) has the directory open."""


class StoreNotAvailableError(StoreError):
    """The store is not loaded, or has been shut down."""


class DiskFullError(OSError):
    """A commit-log file was not created: the disk has not enough room for it and the headroom."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.ENOSPC, message)


def is_no_space(exc: BaseException) -> bool:
    """``exc`` says the disk (or a quota) is full."""
    return isinstance(exc, OSError) and exc.errno in NO_SPACE_ERRNOS
