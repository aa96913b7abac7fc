"""The admin commands' TLS flags (Java's ``tls.enable`` and ``tls.client.*``; docs/security.md, "TLS")."""

from __future__ import annotations

import argparse

from rocketq.client import ClientTls


def add_tls_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tls", action="store_true", help="connect with TLS (servers with tls.server.mode set)")
    parser.add_argument("--tls-trust-cert", metavar="PEM",
                        help="CA or server certificate(s) to verify the servers with (default: the system's CAs)")
    parser.add_argument("--tls-no-verify", action="store_true",
                        help="do not verify the servers' certificates (as Java's client by default): encrypted, "
                             "but open to a man in the middle")  # fmt: skip


def tls_from_args(args: argparse.Namespace) -> ClientTls | None:
    """The client's TLS settings from the flags (None: plain TCP); a trust file or --tls-no-verify implies --tls."""
    trust = getattr(args, "tls_trust_cert", None) or ""
    no_verify = bool(getattr(args, "tls_no_verify", False))
    if not (getattr(args, "tls", False) or trust or no_verify):
        return None
    return ClientTls(trust_cert_path=trust, verify=not no_verify)
