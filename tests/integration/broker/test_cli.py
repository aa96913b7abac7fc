"""The broker command refuses a bad configuration with a message that names the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocketq", *args], capture_output=True, text=True, timeout=60)


def test_unknown_key_stops_broker_start() -> None:
    result = run("broker", "-n", "127.0.0.1:1", "brokerNmae=x")
    assert result.returncode == 2
    assert "brokerNmae" in result.stderr and "unknown" in result.stderr


def test_bad_value_in_config_file_is_named(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\nlistenPort=not-a-port\n")
    result = run("standalone", "--dir", str(tmp_path), "-c", str(conf))
    assert result.returncode == 2
    assert "listenPort" in result.stderr and "not-a-port" in result.stderr


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0 and result.stdout.startswith("rocketq ")
