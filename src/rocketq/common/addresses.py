"""Whether an address or host name means this machine only (the servers' bind rule, the console's Host check)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (127.0.0.0/8, ::1, ``localhost``; brackets allowed).
    A host name other than ``localhost`` counts as reachable: what it resolves to can change."""
    name = host.strip().strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
