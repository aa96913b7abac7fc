"""``RemotingClient.ready_connection``: the open connection a caller may write an encoded request to, and never
while a ``before_request`` hook (ACL signing) must see every command first."""

from __future__ import annotations

import types

from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient


def _with_open_connection(client: RemotingClient, closed: bool = False) -> object:
    conn = types.SimpleNamespace(closed=closed)
    client._conns["127.0.0.1:10911"] = conn  # type: ignore[assignment]
    return conn


def test_an_open_connection_is_ready() -> None:
    client = RemotingClient()
    assert client.ready_connection("127.0.0.1:10911") is None  # none yet
    conn = _with_open_connection(client)
    assert client.ready_connection("127.0.0.1:10911") is conn


def test_a_closed_connection_is_not() -> None:
    client = RemotingClient()
    _with_open_connection(client, closed=True)
    assert client.ready_connection("127.0.0.1:10911") is None


def test_a_signing_hook_keeps_every_request_a_command() -> None:
    signed: list[RemotingCommand] = []
    client = RemotingClient(before_request=signed.append)
    _with_open_connection(client)
    assert client.ready_connection("127.0.0.1:10911") is None
