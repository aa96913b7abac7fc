"""The optional NATS JetStream peer: what it refuses before it touches a server (the runs themselves need
Debian's nats-server and are the bench's, not the tests')."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rocketq.bench import nats_jetstream
from rocketq.bench.nats_jetstream import NatsServer, NatsUnavailable, nats_send, nats_server


async def test_a_missing_nats_server_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(nats_jetstream.shutil, "which", lambda name: None)
    with pytest.raises(NatsUnavailable, match="apt-get install nats-server"):
        async with nats_server(tmp_path):
            pass
    assert list(tmp_path.iterdir()) == []  # nothing was created for a server that never started


async def test_an_unknown_send_mode_is_refused_before_connecting(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec("true")
    await proc.wait()
    server = NatsServer(port=1, directory=tmp_path, proc=proc)  # nothing listens there: no connection is tried
    with pytest.raises(ValueError, match="unknown send mode 'batch'"):
        await nats_send(server, "batch", duration=0.1, warmup=0.0)


def test_the_server_url_is_its_loopback_port(tmp_path: Path) -> None:
    server = NatsServer(port=4333, directory=tmp_path, proc=None)  # type: ignore[arg-type]
    assert server.url == "nats://127.0.0.1:4333"
