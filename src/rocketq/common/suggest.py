""""Did you mean ...?" for a mistyped setting name (broker.conf keys, name-server properties)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" — did you mean flushDiskType?"`` when one known name is close to ``name`` (case is ignored, as a
    typo in case is the commonest), else ``""``: ready to append to an error message."""
    by_lower = {k.lower(): k for k in known}
    if name.lower() in by_lower:  # the same name in another case: it is that one
        return f" — did you mean {by_lower[name.lower()]}?"
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.75)
    return f" — did you mean {by_lower[close[0]]}?" if close else ""
