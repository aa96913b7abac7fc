"""The address a server gives out when none is configured: Java's ``RemotingUtil.getLocalAddress`` rule.

Java walks the network interfaces, drops loopback addresses, and takes the first IPv4 address that starts with
neither ``127.0`` nor ``192.168``, else the last IPv4 address it saw. rocketq keeps that rule for IPv4 and
falls back to ``127.0.0.1`` when a host has no other IPv4 address (Java would hand out an IPv6 address; the
store's message ids here are built from an IPv4 store host). The interface walk is a parameter so that the rule
is tested without depending on the machine's network cards.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import struct
from collections.abc import Callable, Iterable

LOOPBACK = "127.0.0.1"
_SIOCGIFADDR = 0x8915  # Linux: the IPv4 address of one interface


def choose_local_address(addresses: Iterable[str]) -> str | None:
    """Java's choice among ``addresses`` (in interface order); None when no non-loopback IPv4 is among them."""
    candidates = []
    for text in addresses:
        try:
            addr = ipaddress.ip_address(text)
        except ValueError:
            continue
        if addr.version == 4 and not addr.is_loopback:
            candidates.append(text)
    for text in candidates:
        if not text.startswith(("127.0", "192.168")):
            return text
    return candidates[-1] if candidates else None


def interface_addresses() -> list[str]:
    """The IPv4 address of each network interface, in interface-index order (Linux; elsewhere what the host
    name resolves to)."""
    found: list[str] = []
    try:
        import fcntl  # POSIX only

        names = [name for _, name in socket.if_nameindex()]
    except (ImportError, OSError):
        names = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for name in names:
            try:
                packed = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:  # no IPv4 address on this interface (or not Linux)
                continue
            found.append(socket.inet_ntoa(packed[20:24]))
    if not found:
        with contextlib.suppress(OSError):
            found = [str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)]
    return found


def local_address(lookup: Callable[[], Iterable[str]] = interface_addresses) -> str:
    """The address to advertise by default: Java's choice among ``lookup()``'s addresses, else 127.0.0.1."""
    return choose_local_address(lookup()) or LOOPBACK
