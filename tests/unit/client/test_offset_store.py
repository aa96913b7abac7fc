"""Offset stores: in-memory rules, the local file (broadcasting), and the remote store's error mapping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rocketq.client.offset_store import LocalFileOffsetStore, ReadOffsetType, RemoteBrokerOffsetStore
from rocketq.errors import QueryNotFoundError, RemotingTimeoutError
from rocketq.protocol.bodies import MessageQueue

MQ0 = MessageQueue("T", "b", 0)
MQ1 = MessageQueue("T", "b", 1)


async def test_update_increase_only_and_memory_reads(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("cid", "g", tmp_path)
    store.update_offset(MQ0, 5, True)
    store.update_offset(MQ0, 3, True)
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 5
    store.update_offset(MQ0, 3, False)
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 3
    assert await store.read_offset(MQ1, ReadOffsetType.READ_FROM_MEMORY) == -1


async def test_local_file_round_trip_and_backup(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("10.0.0.1@DEFAULT", "g", tmp_path)
    store.update_offset(MQ0, 7, False)
    store.update_offset(MQ1, 9, False)
    await store.persist_all([MQ0, MQ1])
    assert store.path == tmp_path / "10.0.0.1@DEFAULT" / "g" / "offsets.json"
    store.update_offset(MQ0, 8, False)
    await store.persist(MQ0)  # merges into the file
    again = LocalFileOffsetStore("10.0.0.1@DEFAULT", "g", tmp_path)
    await again.load()
    assert again.offset_table == {MQ0: 8, MQ1: 9}
    assert await again.read_offset(MQ1, ReadOffsetType.READ_FROM_STORE) == 9
    # A damaged file falls back to the .bak copy written before the last update.
    store.path.write_text("{not json")
    third = LocalFileOffsetStore("10.0.0.1@DEFAULT", "g", tmp_path)
    await third.load()
    assert third.offset_table == {MQ0: 7, MQ1: 9}


async def test_local_file_reads_java_fastjson_form(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    path.write_text('{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:42}}')
    store = LocalFileOffsetStore("cid", "g", path=path)
    await store.load()
    assert store.offset_table == {MQ0: 42}


class _FakeApi:
    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.updates: list[tuple[str, int, bool]] = []

    async def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue, timeout: float) -> int:
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return int(self.outcome)

    async def update_consumer_offset(self, addr: str, group: str, mq: MessageQueue, offset: int, timeout: float,
                                     *, oneway: bool = True) -> None:  # fmt: skip
        self.updates.append((addr, offset, oneway))


class _FakeInstance:
    def __init__(self, outcome: Any) -> None:
        self.api = _FakeApi(outcome)

    def find_broker_address_in_subscribe(self, name: str, bid: int, only: bool) -> tuple[str, bool]:
        return ("10.0.0.1:10911", False)

    async def update_topic_route(self, topic: str) -> bool:
        return False


async def test_remote_store_maps_errors_like_java() -> None:
    ok = RemoteBrokerOffsetStore(_FakeInstance(12), "g")  # type: ignore[arg-type]
    assert await ok.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == 12
    assert ok.offset_table[MQ0] == 12
    none = RemoteBrokerOffsetStore(_FakeInstance(QueryNotFoundError("no offset")), "g")  # type: ignore[arg-type]
    assert await none.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == -1
    down = RemoteBrokerOffsetStore(_FakeInstance(RemotingTimeoutError("t")), "g")  # type: ignore[arg-type]
    assert await down.read_offset(MQ0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == -2


async def test_remote_persist_all_is_oneway_and_drops_unused_queues() -> None:
    inst = _FakeInstance(0)
    store = RemoteBrokerOffsetStore(inst, "g")  # type: ignore[arg-type]
    store.update_offset(MQ0, 3, False)
    store.update_offset(MQ1, 4, False)
    await store.persist_all([MQ0])
    assert inst.api.updates == [("10.0.0.1:10911", 3, True)]
    assert MQ1 not in store.offset_table
