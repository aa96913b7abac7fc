"""What the server commands check before they start, and how they word a start that failed.

Exit codes of ``rocketq namesrv``, ``broker`` and ``standalone`` (docs/running.md): 0 stopped cleanly, 1 could
not start (a port taken, a directory that cannot be used) or could not save everything at shutdown, 2 a
configuration refused (an unknown key, a bad value). Either failure is one line on stderr, never a traceback.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path


class StartupError(Exception):
    """The server cannot start for a reason outside its configuration's syntax; the message says which."""


def usable_directory(what: str, path: Path) -> None:
    """Create ``path`` if needed and prove a file can be written in it; StartupError says what is wrong.

    Checked before anything is built, so the answer names the directory instead of the first file that a
    component failed to open under it (and write access is tried, not inferred from modes: root passes every
    mode check but not a read-only file system).
    """
    if path.exists() and not path.is_dir():
        raise StartupError(f"{what} {path} is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StartupError(f"{what} {path} cannot be created: {_reason(exc)}") from None
    try:
        with tempfile.TemporaryFile(dir=path, prefix=".rocketq-write-check"):
            pass
    except OSError as exc:
        raise StartupError(f"{what} {path} is not writable: {_reason(exc)}") from None


def listen_error(host: str, port: int, exc: OSError) -> str:
    """One line for a bind that failed (uvloop and asyncio word it differently; errno is the same)."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    key = getattr(exc, "config_key", None)  # a bind error that knows which setting chose the port names it
    other = f"another port ({key})" if key else "another port"
    hint = f" (another process listens there; stop it or choose {other})" if exc.errno == errno.EADDRINUSE else ""
    return f"cannot listen on {where}: {_reason(exc)}{hint}"


def start_error(exc: OSError) -> str:
    """One line for an OSError raised while a server started (a file it could not open, say)."""
    if exc.filename is not None:
        return f"cannot use {exc.filename}: {_reason(exc)}"
    return f"cannot start: {_reason(exc)}"


def _reason(exc: OSError) -> str:
    if exc.errno:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__
