"""Committed consumer offsets, ``topic@group → {queueId: offset}``, persisted to ``config/consumerOffset.json``.

The file uses quoted integer keys (``{"offsetTable":{"T@g":{"0":5}}}``); fastjson reads both forms. An entry
is one queue's offset: a queue id in Java's ``int`` range and an offset in its ``long`` range. A bad one is
left out of the file (the group's other queues are kept); in the file it stops start-up (``fail_closed``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rocketq.broker.managers.entries import INT64, BadEntry, int_key_error, show
from rocketq.broker.managers.persist import BackgroundWriter, ConfigManager, write_json_atomic
from rocketq.protocol.header_codec import INT64_MAX, INT64_MIN

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetManager(ConfigManager):
    """Commits only mark the table dirty; the broker's periodic task writes it (``persist_in_background``)."""

    def __init__(self, config_dir: Path, writer: BackgroundWriter | None = None) -> None:
        super().__init__(config_dir / "consumerOffset.json", writer)
        self.table: dict[str, dict[int, int]] = {}
        #: Java 5.1's pullOffsetTable, in memory only: ``topic@group → {queueId: next offset to pull}`` as the
        #: last answered pull left it (the metrics tell pulled-not-committed from not-pulled with it)
        self.pulled: dict[str, dict[int, int]] = {}
        self._dirty = False

    def decode(self, obj: dict[str, Any]) -> None:
        for key, queues in (obj.get("offsetTable") or {}).items():
            self.table[key] = {int(q): int(o) for q, o in queues.items()}

    def snapshot(self) -> Callable[[], Any]:
        table = {k: dict(v) for k, v in self.table.items()}  # shallow copies: C-speed, no encoding here
        return lambda: self.encode_table(table)

    def check(self, doc: dict[str, Any]) -> list[BadEntry]:
        table = doc.get("offsetTable")
        if table is None:
            return []
        if not isinstance(table, dict):
            del doc["offsetTable"]
            return [BadEntry("offsetTable", f"is {show(table)}, not an object")]
        bad: list[BadEntry] = []
        for key, queues in list(table.items()):
            if not isinstance(queues, dict):
                del table[key]
                bad.append(BadEntry(str(key), f"is {show(queues)}, not an object of queue offsets"))
                continue
            if _all_good(queues):
                continue
            for qid, offset in list(queues.items()):
                key_error, offset_error = int_key_error(qid), INT64(offset)
                if key_error is not None or offset_error is not None:
                    del queues[qid]
                    bad.append(BadEntry(f"{key} queue {qid}", key_error or f"offset {offset_error}"))
        return bad

    def persist(self) -> None:
        write_json_atomic(self.path, self.to_json())
        self._dirty = False

    def persist_if_dirty(self) -> None:
        if self._dirty:
            self.persist()

    async def persist_in_background(self, writer: BackgroundWriter) -> bool:
        """Snapshot on the loop if anything changed, then write and fsync on ``writer``'s thread.

        Commits made while the write runs mark the table dirty again (the next round writes them); a failed
        write does too. Returns whether a write happened.
        """
        if not self._dirty or writer.busy(self.path):
            return False
        build = self.build()
        self._dirty = False
        try:
            await writer.write(self.path, build)
        except BaseException:
            self._dirty = True
            raise
        return True

    def to_json(self) -> dict[str, Any]:
        """The file's document (GET_ALL_CONSUMER_OFFSET answers it too), without bad entries."""
        return self.writable(self.encode_table(self.table))  # type: ignore[no-any-return]

    @staticmethod
    def encode_table(table: dict[str, dict[int, int]]) -> dict[str, Any]:
        return {"offsetTable": {k: {str(q): o for q, o in sorted(v.items())} for k, v in sorted(table.items())}}

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.table.setdefault(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})[queue_id] = offset
        self._dirty = True

    def commit_pull(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        key = f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"
        queues = self.pulled.get(key)
        if queues is None:
            queues = self.pulled[key] = {}
        queues[queue_id] = offset

    def pulled_of(self, group: str, topic: str) -> dict[int, int]:
        """The next offsets the group will pull (only queues pulled since start)."""
        return self.pulled.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})

    def forget_pulled(self, group: str, topic: str) -> None:
        self.pulled.pop(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", None)

    def merge(self, table: dict[str, dict[int, int]]) -> None:
        """A slave takes its master's offsets (SlaveSynchronize, Java's ``putAll``): each ``topic@group`` the
        master has replaces the slave's; keys only the slave has stay."""
        for key, queues in table.items():
            self.table[key] = dict(queues)
        self._dirty = True

    def clone(self, src: str, dest: str, topic: str) -> bool:
        """``dest``'s offsets on ``topic`` become a copy of ``src``'s (Java's cloneOffset: the whole queue map
        is replaced); False, and nothing changed, when ``src`` has none there."""
        queues = self.table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{src}")
        if queues is None:
            return False
        self.table[f"{topic}{TOPIC_GROUP_SEPARATOR}{dest}"] = dict(queues)
        self._dirty = True
        return True

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group has none for this queue."""
        return self.table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}).get(queue_id, -1)

    def offsets_of(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}))

    def groups_of_topic(self, topic: str) -> set[str]:
        return {g for t, g, _ in self.items() if t == topic}

    def topics_of_group(self, group: str) -> set[str]:
        return {t for t, g, _ in self.items() if g == group}

    def items(self) -> Iterator[tuple[str, str, dict[int, int]]]:
        for key, queues in self.table.items():
            # a topic name cannot hold the separator (topic_name_error), a group name may
            t, _, g = key.partition(TOPIC_GROUP_SEPARATOR)
            yield t, g, queues

    def remove_topic(self, topic: str) -> None:
        for key in [k for k in self.table if k.rpartition(TOPIC_GROUP_SEPARATOR)[0] == topic]:
            del self.table[key]
            self._dirty = True
        for key in [k for k in self.pulled if k.rpartition(TOPIC_GROUP_SEPARATOR)[0] == topic]:
            del self.pulled[key]

    def remove_group(self, group: str) -> None:
        for key in [k for k in self.table if k.rpartition(TOPIC_GROUP_SEPARATOR)[2] == group]:
            del self.table[key]
            self._dirty = True
        for key in [k for k in self.pulled if k.rpartition(TOPIC_GROUP_SEPARATOR)[2] == group]:
            del self.pulled[key]



def _all_good(queues: dict[Any, Any]) -> bool:
    """The common case, decided at C speed: short decimal queue ids and int64 offsets (the slow check then
    finds the bad entries)."""
    offsets = queues.values()
    if not offsets:
        return True
    if set(map(type, offsets)) != {int} or min(offsets) < INT64_MIN or max(offsets) > INT64_MAX:
        return False
    if set(map(type, queues)) != {str} or max(map(len, queues)) > 9:  # 9 digits: always inside Java's int
        return False
    digits = "".join(queues)
    return digits.isascii() and digits.isdigit()
