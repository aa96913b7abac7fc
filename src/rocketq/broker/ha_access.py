"""Who may connect to the HA port (beyond Java): this machine, plus the addresses in ``haAllowedAddresses``.

The HA socket has no handshake and no authentication: whoever connects and sends eight bytes receives the
commit log, every message of every topic. ACL does not cover it (ACL checks remoting requests; the HA socket
speaks none). So a master admits a peer only when it connects from this machine (loopback, or the very
address it connected to: a slave next to a broker that advertises its network address comes through that
address) or matches one of the operator's patterns (plain ACL's address syntax, ``rocketq.acl.patterns``;
several separated by ``;`` because a pattern may itself hold commas). The default is empty: a group on one
machine (``standalone --replicas``, tests) just works, and an exposed master never streams its log to a
stranger; a slave on another machine must be listed. Java's master accepts anyone.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from rocketq.acl.errors import AclConfigError
from rocketq.acl.patterns import AddressPattern, compile_pattern
from rocketq.remoting.exposure import is_loopback

#: the broker.conf key
KEY = "haAllowedAddresses"


def peer_ip(host: str) -> str:
    """A peer's address as patterns compare it: an IPv4-mapped IPv6 address (a dual-stack socket) as IPv4."""
    try:
        addr = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return host


@dataclass(frozen=True, slots=True)
class HAPeerPolicy:
    patterns: tuple[AddressPattern, ...] = ()

    @classmethod
    def parse(cls, text: str) -> HAPeerPolicy:
        """``;``-separated address patterns; raises ``ValueError`` naming a pattern that cannot be honoured."""
        try:
            return cls(tuple(compile_pattern(p.strip()) for p in text.split(";") if p.strip()))
        except AclConfigError as exc:
            raise ValueError(str(exc)) from None

    def allows(self, host: str, local: str = "") -> bool:
        """Whether a peer at ``host`` may follow; ``local`` is the connection's own address: a peer with the
        same address is this machine (it connected to one of our own non-loopback addresses)."""
        ip = peer_ip(host)
        if is_loopback(ip) or (local and ip == peer_ip(local)):
            return True
        return any(p.matches(ip) for p in self.patterns)

    def describe(self) -> str:
        return ";".join(p.text for p in self.patterns) or "(loopback only)"
