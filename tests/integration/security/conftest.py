"""A self-signed certificate for 127.0.0.1, made once per session with the ``openssl`` command (the venv has no
``cryptography``); the same file serves as the server's certificate, the clients' trust file and, for mutual
TLS, the client's certificate."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Cert:
    cert: Path
    key: Path
    other: Path  # a second self-signed certificate: trusting it does not verify ``cert``


def _self_signed(out: Path, name: str) -> tuple[Path, Path]:
    cert, key = out / f"{name}.pem", out / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-addext", "basicConstraints=critical,CA:TRUE",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="session")
def tls_cert(tmp_path_factory: pytest.TempPathFactory) -> Cert:
    out = tmp_path_factory.mktemp("tls")
    cert, key = _self_signed(out, "rocketq-test")
    other, _ = _self_signed(out, "somebody-else")
    return Cert(cert, key, other)
