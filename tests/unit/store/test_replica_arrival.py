"""A replica's dispatched messages are reported to the store's arrival listener, as puts are, so pulls held on
a slave wake when the master's bytes arrive."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.unit.store.test_replica_append import _stream

from rocketq.store import MessageStore, StoreConfig, StoreMessage


def test_replicated_messages_reach_the_arrival_listener(
    open_store: Callable[..., MessageStore], store_config: Callable[..., StoreConfig], tmp_path: Path
) -> None:
    master = open_store(store_config(store_path_root_dir=str(tmp_path / "master")))
    replica = open_store(store_config(store_path_root_dir=str(tmp_path / "replica")))
    arrived: list[tuple[str, int, int]] = []
    replica.arrival_listener = lambda topic, qid, nxt, code, ts, props: arrived.append((topic, qid, nxt))
    for i in range(3):
        assert master.put_message(StoreMessage(topic="TWake", queue_id=1, body=f"b{i}".encode())).is_ok
    _stream(master, replica, 0, 32 * 1024)
    assert arrived == [("TWake", 1, 1), ("TWake", 1, 2), ("TWake", 1, 3)]
