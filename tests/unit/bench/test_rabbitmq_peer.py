"""The optional RabbitMQ peer: its node's isolation and what it refuses before it starts a server (the runs
themselves need Debian's rabbitmq-server and are the bench's, not the tests')."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.bench import rabbitmq_confirms
from rocketq.bench.rabbitmq_confirms import RabbitUnavailable, node_environment, rabbitmq_server


async def test_a_missing_rabbitmq_server_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(rabbitmq_confirms, "SERVER", str(tmp_path / "no-such-rabbitmq-server"))
    with pytest.raises(RabbitUnavailable, match="apt-get install rabbitmq-server"):
        async with rabbitmq_server(tmp_path):
            pass
    assert list(tmp_path.iterdir()) == []  # nothing was created for a node that never started


def test_the_node_shares_nothing_with_a_system_rabbitmq(tmp_path: Path) -> None:
    env = node_environment(tmp_path, 5999, 6001, 6003)
    assert env["RABBITMQ_NODE_PORT"] == "5999" and env["RABBITMQ_DIST_PORT"] == "6001"
    assert env["ERL_EPMD_PORT"] == "6003" and env["ERL_EPMD_ADDRESS"] == "127.0.0.1"
    assert env["RABBITMQ_NODE_IP_ADDRESS"] == "127.0.0.1"
    assert env["RABBITMQ_NODENAME"].endswith("-5999@localhost")
    for key in ("HOME", "RABBITMQ_MNESIA_BASE", "RABBITMQ_LOG_BASE", "RABBITMQ_PID_FILE",
                "RABBITMQ_ENABLED_PLUGINS_FILE"):  # fmt: skip
        assert Path(env[key]).is_relative_to(tmp_path), key
    assert Path(env["RABBITMQ_ENABLED_PLUGINS_FILE"]).read_text() == "[].\n"  # no plugins, no management port
    assert "+sbwt none" in env["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"]  # an idle node does not spin
