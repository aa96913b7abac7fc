"""Refuse to serve an unprotected server on an address other machines can reach (beyond Java).

A RocketMQ name server or broker without access control obeys anyone who can reach its port: register a fake
master, delete a topic, reset offsets. Java binds every interface and lets it happen; rocketq refuses to start
such a server unless it listens on loopback only, has access control on, or the operator says explicitly that
the port is protected some other way (``allowInsecureBind=true``, ``--insecure``: a firewall, a private
network). The check runs at start-up, before the port is bound.
"""

from __future__ import annotations

from rocketq.common.addresses import is_loopback
from rocketq.errors import ConfigError

__all__ = ["ALLOW_FLAG", "ALLOW_KEY", "check_bind", "is_loopback"]

#: the key (broker.conf, name server property) and the command-line flag that allow an unprotected bind
ALLOW_KEY = "allowInsecureBind"
ALLOW_FLAG = "--insecure"


def check_bind(
    who: str, host_key: str, host: str, *, protected: bool, protection: str, allowed: bool, loopback: str = ""
) -> None:
    """Raise ConfigError naming ``host_key`` when ``host`` is reachable from other machines, ``protected`` is
    false and the operator has not allowed it. ``protection`` names the setting that would protect it,
    ``loopback`` how to listen on loopback instead (default ``<host_key>=127.0.0.1``)."""
    if protected or allowed or is_loopback(host):
        return
    where = host or "every interface"
    loopback = loopback or f"{host_key}=127.0.0.1"
    raise ConfigError(
        host_key,
        f"{who} would listen on {where} with no access control ({protection} is off): anyone who can reach the "
        f"port could take it over. Listen on loopback ({loopback}), turn on {protection}, or set "
        f"{ALLOW_KEY}=true ({ALLOW_FLAG}) if a firewall or private network protects the port",
    )
