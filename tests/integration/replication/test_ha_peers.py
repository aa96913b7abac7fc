"""The HA port admits this machine and the listed addresses only: a peer from another address is closed before
it gets a byte of the commit log, a listed one is served, and a slave next to its master follows it through
the master's network address with nothing configured.

A "stranger" is a connection to the loopback listener from this machine's non-loopback address (its source
address is then neither loopback nor the address it connected to), which is what a peer on another machine
looks like to the master."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from rocketq.remoting.local_address import local_address
from rocketq.replication.frames import encode_report
from rocketq.testing import EmbeddedCluster
from rocketq.testing.waiting import until

HA = {"haSendHeartbeatInterval": 200, "haReconnectInterval": 100, "listenHost": "0.0.0.0",
      "allowInsecureBind": "true"}  # fmt: skip
WAIT = 20.0  # an upper bound on a busy machine, not a threshold



async def first_bytes(port: int, source: str | None = None) -> bytes:
    """Connect to 127.0.0.1:``port`` (from ``source``), ask for the log from the start, and return what comes
    first (b"": closed)."""
    local = (source, 0) if source else None
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=local)
    try:
        writer.write(encode_report(0))
        await writer.drain()
        async with asyncio.timeout(WAIT):
            try:
                return await reader.read(12)
            except ConnectionResetError:  # closed with our report unread
                return b""
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


def own_ip() -> str:
    ip = local_address()
    assert ip != "127.0.0.1", "this test needs a non-loopback IPv4 address on the machine"
    return ip


async def test_a_stranger_is_refused_and_loopback_is_served(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ip = own_ip()
    async with EmbeddedCluster(tmp_path, **HA, haAllowedAddresses="203.0.113.7") as cluster:
        master = cluster.broker
        port = master.config.haListenPort
        assert master.ha.master._server is not None
        assert {s.getsockname()[0] for s in master.ha.master._server.sockets} <= {"0.0.0.0", "::"}  # listenHost
        assert await first_bytes(port, source=ip) == b""  # closed without a frame
        assert master.ha.master.refused == 1 and master.ha.master.connection_count == 0
        assert len(await first_bytes(port)) == 12  # a frame header (a keep-alive at least)
        assert master.ha.master.refused == 1
        assert await first_bytes(port, source=ip) == b""  # a retry: refused again, but no second line
        assert master.ha.master.refused == 2
    refusals = [r for r in caplog.records if "ha.master.peer_refused" in r.getMessage()]
    assert len(refusals) == 1 and refusals[0].levelname == "WARNING" and ip in refusals[0].getMessage()


async def test_a_listed_address_is_served(tmp_path: Path) -> None:
    ip = own_ip()
    async with EmbeddedCluster(tmp_path, **HA, haAllowedAddresses=f"203.0.113.7;{ip}") as cluster:
        master = cluster.broker
        assert len(await first_bytes(master.config.haListenPort, source=ip)) == 12
        assert master.ha.master.refused == 0


async def test_a_slave_next_to_its_master_follows_through_its_network_address(tmp_path: Path) -> None:
    ip = own_ip()
    async with EmbeddedCluster(tmp_path, **HA) as cluster:  # haAllowedAddresses empty
        master = cluster.broker
        slave = await cluster.start_slave(haMasterAddress=f"{ip}:{master.config.haListenPort}")
        await until(lambda: slave.ha.client.connected and master.ha.master.connection_count == 1)
        assert master.ha.master.refused == 0
        peer = next(iter(master.ha.master.connections)).peer
        assert peer.startswith(f"{ip}:") or peer.startswith(f"::ffff:{ip}:"), peer
