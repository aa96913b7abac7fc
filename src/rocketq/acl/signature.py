"""The AK/SK request signature of RocketMQ ACL 1.0 (Java ``AclUtils.combineRequestContent`` + ``AclSigner``).

The signed content is the values of every extField except ``Signature`` and ``_UNIQUE_KEY_QUERY``, ordered by
key as Java's ``TreeMap`` orders strings (UTF-16 code units), concatenated without separators and encoded
UTF-8, followed by the raw body. The signature is HMAC-SHA1 keyed with the secret key (UTF-8), in standard
base64 with padding.

Java 4.9.4+ clients sign ``_UNIQUE_KEY_QUERY`` too (their QUERY_MESSAGE never verifies on a Java broker);
``verify`` accepts either form, so their query and admin tools work here.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: left out of the content by the Java server
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"

Body = bytes | bytearray | memoryview | None


def _java_order(key: str) -> bytes:
    # Big-endian UTF-16 bytes compare exactly as Java compares strings (code unit by code unit).
    return key.encode("utf-16-be", "surrogatepass")


_ORDER_CACHE: dict[tuple[tuple[str, ...], bool], tuple[str, ...]] = {}
_ORDER_CACHE_MAX = 1024


def _signed_keys(ext_fields: Mapping[str, str], with_unique_key: bool) -> tuple[str, ...]:
    """The keys whose values are signed, in Java's order; remembered per key set (a client sends the same
    fields request after request)."""
    cache_key = (tuple(ext_fields), with_unique_key)
    keys = _ORDER_CACHE.get(cache_key)
    if keys is None:
        skip = (SIGNATURE,) if with_unique_key else (SIGNATURE, UNIQUE_KEY_QUERY)
        keys = tuple(sorted((k for k in ext_fields if k not in skip), key=_java_order))
        if len(_ORDER_CACHE) >= _ORDER_CACHE_MAX:
            _ORDER_CACHE.clear()
        _ORDER_CACHE[cache_key] = keys
    return keys


def content(ext_fields: Mapping[str, str], body: Body = None, *, with_unique_key: bool = False) -> bytes:
    """The bytes a signature covers (``with_unique_key``: as Java 4.9.4+ clients compute it)."""
    keys = _signed_keys(ext_fields, with_unique_key)
    text = "".join([ext_fields[k] for k in keys]).encode("utf-8", "surrogatepass")
    return text + bytes(body) if body else text


def _sign(data: bytes, secret_key: str) -> bytes:
    return base64.b64encode(hmac.new(secret_key.encode("utf-8"), data, hashlib.sha1).digest())


def sign_content(data: bytes, secret_key: str) -> str:
    """HMAC-SHA1 of ``data`` keyed with ``secret_key``, base64 with padding (28 characters)."""
    return _sign(data, secret_key).decode("ascii")


def signature_of(ext_fields: Mapping[str, str], body: Body, secret_key: str) -> str:
    """The signature a Java server expects for these fields and body."""
    return sign_content(content(ext_fields, body), secret_key)


def verify(ext_fields: Mapping[str, str], body: Body, secret_key: str) -> bool:
    """Whether ``ext_fields['Signature']`` signs the request with ``secret_key``: Java's content first, then
    (only when the request carries ``_UNIQUE_KEY_QUERY``) the content that includes it."""
    text = ext_fields.get(SIGNATURE)
    if text is None:
        return False
    given = text.encode("utf-8", "surrogatepass")  # compare_digest refuses non-ASCII str
    if hmac.compare_digest(_sign(content(ext_fields, body), secret_key), given):
        return True
    if UNIQUE_KEY_QUERY not in ext_fields:
        return False
    return hmac.compare_digest(_sign(content(ext_fields, body, with_unique_key=True), secret_key), given)


def sign_request(
    ext_fields: dict[str, str], body: Body, access_key: str, secret_key: str, security_token: str | None = None
) -> None:
    """Add ``AccessKey`` (and ``SecurityToken``) and the ``Signature`` to ``ext_fields`` in place, as Java's
    ``AclClientRPCHook`` does (the header already in ``ext_fields``). ``_UNIQUE_KEY_QUERY`` is left out of the
    content, so that a Java broker verifies it too."""
    ext_fields[ACCESS_KEY] = access_key
    if security_token:
        ext_fields[SECURITY_TOKEN] = security_token
    ext_fields.pop(SIGNATURE, None)
    ext_fields[SIGNATURE] = signature_of(ext_fields, body, secret_key)
