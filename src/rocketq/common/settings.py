"""``key=value`` command-line settings (the servers' trailing arguments, as Java's ``-c`` file keys)."""

from __future__ import annotations

from collections.abc import Iterable

from rocketq.errors import ConfigError


def key_values(items: Iterable[str]) -> dict[str, str]:
    """``["a=1", "b = x"]`` → ``{"a": "1", "b": "x"}`` (later wins); an item without ``=`` or a key is refused
    with a ``ConfigError`` naming it."""
    settings: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(item, "expected key=value")
        settings[key.strip()] = value.strip()
    return settings
