"""Java 4.9.7's TLS client (``-Dtls.enable=true``, its test mode trusting any certificate) against rocketq's
TLS ports (rocketq.remoting.tls): stock mqadmin lists the cluster through the name server and the broker.

``permissive`` serves the Java client with and without TLS on the same port; ``enforcing`` refuses it without.
The JVM gets ``tls.enable`` through JAVA_TOOL_OPTIONS (run_java takes no JVM flags)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from javaharness import run_java

from rocketq.testing import EmbeddedCluster
from rocketq.testing.java import MQADMIN_MAIN


def self_signed(out: Path) -> tuple[Path, Path]:
    cert, key = out / "server.pem", out / "server.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=rocketq",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


async def cluster_list(cluster: EmbeddedCluster, home: Path, tls: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", f"-Dtls.enable={str(tls).lower()}")
    _, out, err = await run_java(MQADMIN_MAIN, "clusterList", "-n", cluster.namesrv_addr, home=home, timeout=90)
    return out + err


@pytest.mark.parametrize("mode", ["permissive", "enforcing"])
async def test_java_mqadmin_over_tls(tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = self_signed(tmp_path)
    server = {"tls.server.mode": mode, "tls.server.certPath": str(cert), "tls.server.keyPath": str(key)}
    broker = {"tlsServerMode": mode, "tlsServerCertPath": str(cert), "tlsServerKeyPath": str(key),
              "tlsEnable": True, "tlsClientTrustCertPath": str(cert)}  # fmt: skip
    async with EmbeddedCluster(tmp_path / "c", namesrv_settings=server, **broker) as cluster:
        row = f"broker-a                0     {cluster.broker_addr}"  # the broker answered its runtime info too
        out = await cluster_list(cluster, tmp_path / "java-tls", True, monkeypatch)
        assert "DefaultCluster" in out and row in out and "rocketq" in out, out[-3000:]
        out = await cluster_list(cluster, tmp_path / "java-plain", False, monkeypatch)
        if mode == "permissive":
            assert row in out, out[-3000:]
        else:
            assert row not in out and "Exception" in out, out[-3000:]
