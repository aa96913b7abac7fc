"""Committed consumer offsets, ``topic@group → {queueId: offset}``, persisted to ``config/consumerOffset.json``.

The file uses quoted integer keys (``{"offsetTable":{"T@g":{"0":5}}}``); fastjson reads both forms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rocketq.broker.managers.persist import BackgroundWriter, ConfigManager, write_json_atomic

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetManager(ConfigManager):
    """Commits only mark the table dirty; the broker's periodic task writes it (``persist_in_background``)."""

    def __init__(self, config_dir: Path, writer: BackgroundWriter | None = None) -> None:
        super().__init__(config_dir / "consumerOffset.json", writer)
        self.table: dict[str, dict[int, int]] = {}
        self._dirty = False

    def decode(self, obj: dict[str, Any]) -> None:
        for key, queues in (obj.get("offsetTable") or {}).items():
            self.table[key] = {int(q): int(o) for q, o in queues.items()}

    def snapshot(self) -> Callable[[], Any]:
        table = {k: dict(v) for k, v in self.table.items()}  # shallow copies: C-speed, no encoding here
        return lambda: self.encode_table(table)

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
        build = self.snapshot()
        self._dirty = False
        try:
            await writer.write(self.path, build)
        except BaseException:
            self._dirty = True
            raise
        return True

    def to_json(self) -> dict[str, Any]:
        return self.encode_table(self.table)

    @staticmethod
    def encode_table(table: dict[str, dict[int, int]]) -> dict[str, Any]:
        return {"offsetTable": {k: {str(q): o for q, o in sorted(v.items())} for k, v in sorted(table.items())}}

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.table.setdefault(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})[queue_id] = offset
        self._dirty = True

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

    def remove_group(self, group: str) -> None:
        for key in [k for k in self.table if k.rpartition(TOPIC_GROUP_SEPARATOR)[2] == group]:
            del self.table[key]
            self._dirty = True
