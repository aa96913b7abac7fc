"""TLS on the remoting ports (rocketq.remoting.tls): Java's tls.server.mode disabled / permissive / enforcing,
the rocketq client dialling with TLS, and start-up refusing TLS settings it cannot honour.

One cluster per mode; the name server and the broker use the same mode, and the broker registers over TLS
(tls.enable) where the name server requires it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import (
    AdminClient,
    ClientConfig,
    ClientTls,
    ConsumeFromWhere,
    LitePullConsumer,
    Message,
    Producer,
    SendStatus,
)
from rocketq.errors import ConfigError, RemotingError
from rocketq.namesrv import NamesrvConfig, NamesrvServer
from rocketq.remoting.tls import ServerTls, TlsMode
from rocketq.testing.cluster import EmbeddedCluster

from .conftest import Cert

WAIT = 60.0
FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


def tls_settings(cert: Cert, mode: str) -> dict[str, str]:
    return {"tls.server.mode": mode, "tls.server.certPath": str(cert.cert), "tls.server.keyPath": str(cert.key)}


def broker_overrides(cert: Cert, mode: str) -> dict[str, Any]:
    # broker.conf takes Java's dotted names; EmbeddedCluster takes keyword arguments, so the camelCase ones
    return {"tlsServerMode": mode, "tlsServerCertPath": str(cert.cert), "tlsServerKeyPath": str(cert.key),
            "tlsEnable": mode == "enforcing", "tlsClientTrustCertPath": str(cert.cert)}  # fmt: skip


def client(namesrv: str, tls: ClientTls | None) -> ClientConfig:
    return ClientConfig(namesrv_addr=namesrv, tls=tls, connect_timeout=5.0, mq_client_api_timeout=5.0)


async def round_trip(namesrv: str, tls: ClientTls | None, topic: str) -> None:
    """Create a topic, send to it and pull it back: name server and broker both over ``tls``."""
    config = client(namesrv, tls)
    async with AdminClient(config=config, timeout=10.0) as admin:
        await admin.create_topic(topic, read_queue_nums=1, write_queue_nums=1)
    async with Producer(f"pg-{topic}", config=config) as producer:
        result = await producer.send(Message(topic, b"secret payload"))
        assert result.status is SendStatus.SEND_OK
    consumer = LitePullConsumer(f"cg-{topic}", config=client(namesrv, tls), consume_from_where=FIRST)
    consumer.subscribe(topic)
    await consumer.start()
    try:
        got: list[bytes] = []
        async with asyncio.timeout(WAIT):
            while not got:
                got.extend(m.body for m in await consumer.poll(timeout=1.0))
        assert got == [b"secret payload"]
    finally:
        await consumer.shutdown()


async def refused(namesrv: str, tls: ClientTls | None) -> Exception:
    with pytest.raises(RemotingError) as info:
        async with AdminClient(config=client(namesrv, tls), timeout=3.0) as admin:
            await admin.cluster_info()
    return info.value


async def test_enforcing_serves_tls_only(tmp_path: Path, tls_cert: Cert) -> None:
    async with EmbeddedCluster(tmp_path, namesrv_settings=tls_settings(tls_cert, "enforcing"),
                               **broker_overrides(tls_cert, "enforcing")) as cluster:  # fmt: skip
        trusted = ClientTls(trust_cert_path=str(tls_cert.cert))
        await round_trip(cluster.namesrv_addr, trusted, "TlsEnforcing")
        await refused(cluster.namesrv_addr, None)  # plain TCP: the handshake fails, the connection is closed
        await refused(cluster.namesrv_addr, ClientTls(trust_cert_path=str(tls_cert.other)))  # not the server's
        await refused(cluster.namesrv_addr, ClientTls())  # the system's CAs do not know a self-signed one
        # Java's client does not check the certificate by default; rocketq's only when told
        async with AdminClient(config=client(cluster.namesrv_addr, ClientTls(verify=False)), timeout=5.0) as admin:
            assert cluster.broker.config.brokerName in str(await admin.cluster_info())


async def test_permissive_serves_both_on_one_port(tmp_path: Path, tls_cert: Cert) -> None:
    async with EmbeddedCluster(tmp_path, namesrv_settings=tls_settings(tls_cert, "permissive"),
                               **broker_overrides(tls_cert, "permissive")) as cluster:  # fmt: skip
        await round_trip(cluster.namesrv_addr, ClientTls(trust_cert_path=str(tls_cert.cert)), "TlsPermissive")
        await round_trip(cluster.namesrv_addr, None, "PlainPermissive")
        # a client that connects and closes without a byte, and one that sends a broken handshake, cost nothing
        for data in (b"", b"\x16\x03\x01\x00\x05hello"):
            _, writer = await asyncio.open_connection("127.0.0.1", cluster.namesrv.port if cluster.namesrv else 0)
            writer.write(data)
            writer.close()
        async with AdminClient(config=client(cluster.namesrv_addr, None), timeout=5.0) as admin:
            assert cluster.broker.config.brokerName in str(await admin.cluster_info())


async def test_disabled_serves_plain_only(tmp_path: Path, tls_cert: Cert) -> None:
    async with EmbeddedCluster(tmp_path) as cluster:  # the default
        await refused(cluster.namesrv_addr, ClientTls(trust_cert_path=str(tls_cert.cert)))
        async with AdminClient(config=client(cluster.namesrv_addr, None), timeout=5.0) as admin:
            assert cluster.broker.config.brokerName in str(await admin.cluster_info())


async def test_client_certificates_when_required(tmp_path: Path, tls_cert: Cert) -> None:
    settings = {**tls_settings(tls_cert, "enforcing"), "tls.server.need.client.auth": "require",
                "tls.server.trustCertPath": str(tls_cert.cert)}  # fmt: skip
    config = NamesrvConfig(listen_host="127.0.0.1", listen_port=0, home_dir=tmp_path / "n")
    config.update_from_properties(settings, strict=True)
    async with NamesrvServer(config) as server:
        anonymous = ClientTls(trust_cert_path=str(tls_cert.cert))
        with pytest.raises(RemotingError):  # TLS 1.3: the refusal may come with the first answer, not the handshake
            async with AdminClient(config=client(server.address, anonymous), timeout=3.0) as admin:
                await admin.cluster_info()
        known = ClientTls(trust_cert_path=str(tls_cert.cert), cert_path=str(tls_cert.cert), key_path=str(tls_cert.key))
        async with AdminClient(config=client(server.address, known), timeout=5.0) as admin:
            assert await admin.cluster_info() is not None


def test_tls_settings_that_cannot_be_honoured_stop_start_up(tmp_path: Path, tls_cert: Cert) -> None:
    with pytest.raises(ConfigError, match=r"tls\.server\.certPath.*not set"):
        ServerTls(TlsMode.ENFORCING, key_path=str(tls_cert.key)).context()
    with pytest.raises(ConfigError, match=r"tls\.server\.keyPath.*no such file"):
        ServerTls(TlsMode.PERMISSIVE, str(tls_cert.cert), str(tmp_path / "missing.key")).context()
    with pytest.raises(ConfigError, match=r"tls\.server\.certPath.*cannot load"):
        ServerTls(TlsMode.ENFORCING, str(tls_cert.other), str(tls_cert.key)).context()  # key of another cert
    with pytest.raises(ConfigError, match=r"tls\.server\.mode"):
        TlsMode.parse("on")
    with pytest.raises(ConfigError, match=r"tls\.server\.need\.client\.auth"):
        ServerTls(need_client_auth="always")
    assert ServerTls().context() is None  # disabled: plain TCP


async def test_the_command_line_refuses_in_one_line(tmp_path: Path, tls_cert: Cert) -> None:
    runs = [
        ("namesrv", "--host", "127.0.0.1", "--port", "0", "--home", str(tmp_path / "n"),
         "tls.server.mode=enforcing", f"tls.server.keyPath={tls_cert.key}"),
        ("broker", "-n", "127.0.0.1:1", "listenHost=127.0.0.1", "listenPort=0",
         f"storePathRootDir={tmp_path / 'b'}", "tls.server.mode=permissive", f"tls.server.certPath={tls_cert.cert}",
         f"tls.server.keyPath={tmp_path / 'nope.key'}"),
    ]  # fmt: skip
    procs = [
        await asyncio.create_subprocess_exec(sys.executable, "-m", "rocketq", *args, stdout=asyncio.subprocess.PIPE,
                                             stderr=asyncio.subprocess.PIPE)
        for args in runs
    ]  # fmt: skip
    try:
        async with asyncio.timeout(WAIT):
            results = [await p.communicate() for p in procs]
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                await p.wait()
    for (out, err), proc, key in zip(results, procs, ("tls.server.certPath", "tls.server.keyPath"), strict=True):
        text = err.decode()
        assert proc.returncode == 2 and b"listening" not in out, text
        assert "Traceback" not in text and key in text, text
        assert len([line for line in text.splitlines() if "ERROR" in line or key in line]) == 1, text
