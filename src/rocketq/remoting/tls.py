"""Optional TLS on the remoting ports (Python ``ssl``), with Java's modes and key names.

Server side, Java's ``tls.server.mode``:

* ``disabled`` (rocketq's default): plain TCP only. A TLS ClientHello is not a frame, and the connection is
  closed as any malformed frame closes it;
* ``permissive``: TLS and plain TCP on the same port — the first byte a client sends tells them apart (a TLS
  record of a handshake starts with 0x16; a RocketMQ frame starts with its length's high byte, 0 for any
  frame under 16 MiB);
* ``enforcing``: TLS only; a plain client fails the handshake and is closed.

Java's default is ``permissive`` with a self-signed test certificate generated at start-up
(``tls.test.mode.enable``); rocketq has no built-in certificate, so it defaults to ``disabled`` and any other
mode needs ``tls.server.certPath`` and ``tls.server.keyPath`` — a file that is missing or unreadable stops
start-up with its key named, never a silent fall-back to plain TCP.

Client side: ``ClientTls`` (Java's ``tls.enable``); it verifies the server's certificate against
``trust_cert_path`` (or the system's CAs) unless ``verify=False`` (Java's client does not verify by default;
rocketq does).
"""

from __future__ import annotations

import enum
import ssl
from dataclasses import dataclass
from pathlib import Path

from rocketq.errors import ConfigError

#: Java's property names (TlsSystemConfig), accepted as broker.conf / name server keys
SERVER_MODE_KEY = "tls.server.mode"
SERVER_CERT_KEY = "tls.server.certPath"
SERVER_KEY_KEY = "tls.server.keyPath"
SERVER_KEY_PASSWORD_KEY = "tls.server.keyPassword"
SERVER_TRUST_KEY = "tls.server.trustCertPath"
SERVER_CLIENT_AUTH_KEY = "tls.server.need.client.auth"

#: the first byte of a TLS handshake record (ClientHello)
TLS_HANDSHAKE = 0x16


class TlsMode(enum.Enum):
    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"

    @classmethod
    def parse(cls, text: str) -> TlsMode:
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise ConfigError(SERVER_MODE_KEY, f"{text!r} is not disabled, permissive or enforcing") from None


_CLIENT_AUTH = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "require": ssl.CERT_REQUIRED}


def looks_like_tls(first: bytes) -> bool:
    """Whether a connection's first bytes are a TLS handshake rather than a RocketMQ frame."""
    return len(first) > 0 and first[0] == TLS_HANDSHAKE


@dataclass(frozen=True, slots=True)
class ServerTls:
    """A server's TLS settings; ``context()`` builds its ``SSLContext`` (None when disabled)."""

    mode: TlsMode = TlsMode.DISABLED
    cert_path: str = ""
    key_path: str = ""
    key_password: str = ""
    trust_cert_path: str = ""
    need_client_auth: str = "none"

    def __post_init__(self) -> None:
        if self.need_client_auth not in _CLIENT_AUTH:
            raise ConfigError(SERVER_CLIENT_AUTH_KEY, f"{self.need_client_auth!r} is not none, optional or require")

    @property
    def enabled(self) -> bool:
        return self.mode is not TlsMode.DISABLED

    def context(self) -> ssl.SSLContext | None:
        """The server context, or None when disabled; ConfigError naming the key of a file it cannot use."""
        if not self.enabled:
            return None
        for key, path in ((SERVER_CERT_KEY, self.cert_path), (SERVER_KEY_KEY, self.key_path)):
            _readable(key, path, f"{SERVER_MODE_KEY}={self.mode.value}")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            ctx.load_cert_chain(self.cert_path, self.key_path, self.key_password or None)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(SERVER_CERT_KEY, f"cannot load {self.cert_path} with {self.key_path}: {exc}") from None
        ctx.verify_mode = _CLIENT_AUTH[self.need_client_auth]
        if self.need_client_auth != "none":
            _readable(SERVER_TRUST_KEY, self.trust_cert_path, f"{SERVER_CLIENT_AUTH_KEY}={self.need_client_auth}")
            _load_trust(ctx, SERVER_TRUST_KEY, self.trust_cert_path)
        return ctx


@dataclass(frozen=True, slots=True)
class ClientTls:
    """A client's TLS settings (Java's ``tls.enable`` and ``tls.client.*``)."""

    trust_cert_path: str = ""  # CA (or self-signed server) certificates in PEM; "" = the system's CAs
    verify: bool = True  # check the server's certificate and that it names the address dialled
    cert_path: str = ""  # a client certificate, for servers with tls.server.need.client.auth
    key_path: str = ""

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.trust_cert_path:
            _readable("tls.client.trustCertPath", self.trust_cert_path, "verification")
            _load_trust(ctx, "tls.client.trustCertPath", self.trust_cert_path)
        if self.cert_path or self.key_path:
            try:
                ctx.load_cert_chain(self.cert_path, self.key_path or None)
            except (ssl.SSLError, OSError) as exc:
                raise ConfigError("tls.client.certPath", f"cannot load {self.cert_path}: {exc}") from None
        return ctx


def _readable(key: str, path: str, needed_by: str) -> None:
    if not path:
        raise ConfigError(key, f"needed by {needed_by}, but not set")
    if not Path(path).is_file():
        raise ConfigError(key, f"{path}: no such file")


def _load_trust(ctx: ssl.SSLContext, key: str, path: str) -> None:
    try:
        ctx.load_verify_locations(cafile=path)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(key, f"cannot load {path}: {exc}") from None
