"""Fixtures for the store tests: tiny files (so they roll over), a fake clock, stores that always shut down."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.store import MessageStore, StoreConfig, StoreMessage

# 2024-01-02 03:04:05.678 UTC: a fixed starting point for the fake clock
T0 = 1_704_164_645_678


class FakeClock:
    """Milliseconds since the epoch, moved only by the test."""

    def __init__(self, now: int = T0) -> None:
        self.now = now
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            return self.now

    def advance(self, ms: int) -> None:
        with self._lock:
            self.now += ms


@pytest.fixture(autouse=True)
def _no_store_threads_left() -> Iterator[None]:
    """Every test must shut its stores down: no flush/cleanup thread may outlive it."""
    yield
    leftover = [t.name for t in threading.enumerate() if t.name.startswith("rocketq-store-")]
    assert not leftover, f"store threads still running: {leftover}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store_config(tmp_path: Path) -> Callable[..., StoreConfig]:
    """Factory of StoreConfig with 4 KiB commit-log files, 10-unit CQ files and a small index."""

    def make(**overrides: Any) -> StoreConfig:
        base: dict[str, Any] = dict(
            store_path_root_dir=str(tmp_path / "store"),
            mapped_file_size_commit_log=4096,
            mapped_file_size_consume_queue=200,
            max_hash_slot_num=64,
            max_index_num=128,
            clean_resource_interval=0,
            flush_interval_commit_log=20,
            flush_interval_consume_queue=50,
            delete_commit_log_files_interval=0,
        )
        base.update(overrides)
        return StoreConfig(**base)

    return make


@pytest.fixture
def open_store(store_config: Callable[..., StoreConfig], clock: FakeClock) -> Iterator[Callable[..., MessageStore]]:
    """Factory: load + start a store (fake clock unless ``clock=`` is given); all are shut down at teardown."""
    stores: list[MessageStore] = []

    def make(config: StoreConfig | None = None, start: bool = True, **kwargs: Any) -> MessageStore:
        kwargs.setdefault("clock", clock)
        store = MessageStore(config or store_config(), **kwargs)
        assert store.load()
        if start:
            store.start()
        stores.append(store)
        return store

    yield make
    for s in stores:
        s.shutdown()


@pytest.fixture
def msg() -> Callable[..., StoreMessage]:
    """Factory of StoreMessage with a UNIQ_KEY derived from the body unless given."""

    def make(topic: str = "T", body: bytes = b"hello", queue_id: int = 0, **kw: Any) -> StoreMessage:
        props = kw.pop("properties", None)
        if props is None:
            props = {"UNIQ_KEY": "U" + body.hex()[:30]}
        return StoreMessage(
            topic=topic, body=body, queue_id=queue_id, properties=props, born_host=("10.0.0.1", 5000),
            store_host=("10.0.0.2", 10911), **kw,
        )

    return make
