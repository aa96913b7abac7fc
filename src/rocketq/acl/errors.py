"""The ACL room's errors: a rule that cannot be honoured, and a request that is refused."""

from __future__ import annotations

from rocketq.errors import RocketQError


class AclConfigError(RocketQError, ValueError):
    """An ACL file or setting that cannot be honoured; the message names the file and the key."""


class AclDenied(RocketQError):
    """A request refused by the ACL check. ``message`` is Java's ``AclException`` message; ``frame`` the
    Java stack frame that throws it, for the remark a Java broker answers with."""

    def __init__(self, message: str, frame: str) -> None:
        super().__init__(message)
        self.message = message
        self.frame = frame
