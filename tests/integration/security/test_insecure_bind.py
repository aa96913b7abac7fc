"""A server that would listen on a non-loopback address with no access control refuses to start, unless the
operator says so (``allowInsecureBind=true`` / ``--insecure``): rocketq.remoting.exposure, docs/security.md.

The command-line cases run side by side (each is interpreter start-up and a refusal)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from rocketq.errors import ConfigError
from rocketq.namesrv import NamesrvConfig, NamesrvServer
from rocketq.remoting.exposure import is_loopback
from rocketq.testing.process import StandaloneProcess, run_process

WAIT = 60.0  # interpreter start-up on a busy 2-core machine


async def rocketq(*args: str) -> tuple[int, str, str]:
    return await run_process([sys.executable, "-m", "rocketq", *args], timeout=WAIT)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True), ("localhost", True),
     ("0.0.0.0", False), ("", False), ("::", False), ("10.0.0.5", False), ("broker.example", False)],
)  # fmt: skip
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


async def test_every_server_refuses_an_unprotected_open_bind(tmp_path: Path) -> None:
    runs = {
        "namesrv": ("namesrv", "--port", "0", "--home", str(tmp_path / "n")),
        "namesrv one address": ("namesrv", "--host", "192.0.2.1", "--port", "0", "--home", str(tmp_path / "n2")),
        "broker": ("broker", "-n", "127.0.0.1:1", "listenPort=0", f"storePathRootDir={tmp_path / 'b'}"),
        "standalone": ("standalone", "--dir", str(tmp_path / "s"), "--namesrv-port", "0", "listenPort=0"),
        "standalone insecure=false": ("standalone", "--dir", str(tmp_path / "s2"), "--namesrv-port", "0",
                                      "--insecure", "listenPort=0", "allowInsecureBind=false"),
    }  # fmt: skip
    results = await asyncio.gather(*(rocketq(*args) for args in runs.values()))
    for name, (rc, out, err) in zip(runs, results, strict=True):
        assert rc == 2, (name, rc, out, err)
        assert "listening" not in out, (name, out)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err, (name, err)
        assert "'listenHost'" in lines[0] and "allowInsecureBind=true (--insecure)" in lines[0], (name, err)
        assert "127.0.0.1" in lines[0], (name, err)  # says how to bind loopback instead
    assert "name server" in results[0][2] and "the broker" in results[2][2]


async def test_loopback_and_explicit_consent_start(tmp_path: Path) -> None:
    standalone = await StandaloneProcess.start(tmp_path / "loopback")  # listenHost=127.0.0.1: no consent needed
    assert await standalone.stop() == 0
    config = NamesrvConfig(listen_host="0.0.0.0", listen_port=0, home_dir=tmp_path / "n", allow_insecure_bind=True)
    async with NamesrvServer(config) as server:
        assert server.listen_addresses[0].startswith("0.0.0.0:")


async def test_in_process_servers_refuse_too(tmp_path: Path) -> None:
    server = NamesrvServer(NamesrvConfig(listen_host="0.0.0.0", listen_port=0, home_dir=tmp_path / "n"))
    with pytest.raises(ConfigError, match="listenHost"):
        await server.start()
    await server.close()
    assert server.listen_addresses == []


def test_a_remote_config_update_cannot_allow_it() -> None:
    config = NamesrvConfig()
    assert config.update_from_properties({"allowInsecureBind": "true"}) == []  # UPDATE_NAMESRV_CONFIG: ignored
    assert config.allow_insecure_bind is False
    assert config.update_from_properties({"allowInsecureBind": "true"}, strict=True) == ["allowInsecureBind"]
    assert config.allow_insecure_bind is True
