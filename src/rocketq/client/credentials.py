"""Signing requests for a broker with ACL on (Java ``AclClientRPCHook``, ACL 1.0 of RocketMQ 4.9).

The signature a 4.9 broker checks: every extField except ``Signature`` and ``_UNIQUE_KEY_QUERY``, sorted by
key (UTF-16 code-unit order, as Java's ``TreeMap``), the values alone concatenated and UTF-8 encoded, then the
body; HMAC-SHA1 keyed with the secret key, base64 with padding. ``AccessKey`` (and ``SecurityToken`` when
given) are added to the extFields before signing, so they are signed too.

Unlike Java 4.9.4+'s client we leave ``_UNIQUE_KEY_QUERY`` out of the signed text, as the broker does: the
Java client signs it, and its QUERY_MESSAGE by unique key then fails with "Check signature failed".
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketq.protocol.command import Buffer, RemotingCommand

__all__ = ["ACCESS_KEY", "SECURITY_TOKEN", "SIGNATURE", "SessionCredentials", "signature", "signed_content"]

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
#: set by QUERY_MESSAGE by unique key; the 4.9 broker leaves it out of the signed text
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"
_UNSIGNED = frozenset((SIGNATURE, UNIQUE_KEY_QUERY))


def _utf16_order(key: str) -> bytes:
    # Java compares strings by UTF-16 code unit; big-endian UTF-16 bytes compare the same way (Python's own
    # order is by code point, which differs only above U+FFFF).
    return key.encode("utf-16-be")


#: key tuple (in insertion order) → the keys to sign, sorted: a client sends few distinct header shapes
_ORDER_CACHE: dict[tuple[str, ...], tuple[str, ...]] = {}
_ORDER_CACHE_MAX = 256


def _signed_keys(ext_fields: Mapping[str, str]) -> tuple[str, ...]:
    shape = tuple(ext_fields)
    keys = _ORDER_CACHE.get(shape)
    if keys is None:
        # ASCII keys (the usual case) sort the same by code point as by UTF-16 code unit
        ascii_keys = all(k.isascii() for k in shape)
        ordered = sorted(shape) if ascii_keys else sorted(shape, key=_utf16_order)
        keys = tuple(k for k in ordered if k not in _UNSIGNED)
        if len(_ORDER_CACHE) >= _ORDER_CACHE_MAX:
            _ORDER_CACHE.clear()
        _ORDER_CACHE[shape] = keys
    return keys


def _signed_text(ext_fields: Mapping[str, str]) -> bytes:
    return "".join([ext_fields[k] for k in _signed_keys(ext_fields)]).encode()


def signed_content(ext_fields: Mapping[str, str], body: Buffer = b"") -> bytes:
    """The bytes a 4.9 broker signs for a request with these extFields and body."""
    text = _signed_text(ext_fields)
    return text + bytes(body) if body else text


def signature(content: Buffer, secret_key: str) -> str:
    """HMAC-SHA1 of ``content`` keyed with ``secret_key`` (UTF-8), base64 with padding (28 characters)."""
    digest = hmac.new(secret_key.encode(), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    """An ACL account as a client holds it. The secret and the token are kept out of ``repr``."""

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)
    #: HMAC-SHA1 already keyed with the secret: each signature copies it instead of keying anew
    _mac: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.access_key or not self.secret_key:
            raise ValueError("ACL credentials need both an access key and a secret key")
        object.__setattr__(self, "_mac", hmac.new(self.secret_key.encode(), digestmod=hashlib.sha1))

    def __getstate__(self) -> tuple[str, str, str | None]:  # picklable (Spark ships options to executors)
        return (self.access_key, self.secret_key, self.security_token)

    def __setstate__(self, state: tuple[str, str, str | None]) -> None:
        for name, value in zip(("access_key", "secret_key", "security_token"), state, strict=True):
            object.__setattr__(self, name, value)
        self.__post_init__()

    def sign(self, cmd: RemotingCommand) -> None:
        """Add ``AccessKey`` (+ ``SecurityToken``) and the ``Signature`` of the request to its extFields.

        Used as the client's request hook: runs on every request just before it is encoded. Signing the same
        command again (a retry) gives it a fresh, correct signature.
        """
        ext = cmd.ext_fields
        ext.pop(SIGNATURE, None)
        ext[ACCESS_KEY] = self.access_key
        if self.security_token is not None:
            ext[SECURITY_TOKEN] = self.security_token
        mac = self._mac.copy()
        mac.update(_signed_text(ext))
        if cmd.body:
            mac.update(cmd.body)
        ext[SIGNATURE] = base64.b64encode(mac.digest()).decode("ascii")
