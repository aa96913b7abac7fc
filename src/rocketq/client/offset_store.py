"""Consumer offset stores (Java ``OffsetStore``).

* ``RemoteBrokerOffsetStore`` (clustering): offsets live on the broker. ``read_offset(FROM_STORE)`` asks it
  (QUERY_CONSUMER_OFFSET); ``persist``/``persist_all`` write them back with UPDATE_CONSUMER_OFFSET, oneway like
  Java. ``read_offset`` returns -1 when the broker has none (any broker error) and -2 when it cannot be asked.
* ``LocalFileOffsetStore`` (broadcasting): offsets live in a JSON file per client id and group, written through a
  temp file and a ``.bak`` copy.
"""

from __future__ import annotations

import enum
import json
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocketq.errors import BrokerError, ProtocolError, RemotingError
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import MessageQueue

if TYPE_CHECKING:
    from rocketq.client._instance import ClientInstance

__all__ = ["LocalFileOffsetStore", "OffsetStore", "ReadOffsetType", "RemoteBrokerOffsetStore"]

log = logging.getLogger("rocketq.client.offset_store")

#: Java ``rocketmq.client.localOffsetStoreDir``.
DEFAULT_LOCAL_OFFSET_STORE_DIR = Path(os.environ.get("ROCKETQ_LOCAL_OFFSET_STORE_DIR",
                                                     Path.home() / ".rocketmq_offsets"))  # fmt: skip


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


class OffsetStore(ABC):
    """In-memory offsets per queue plus a backing store."""

    def __init__(self) -> None:
        self.offset_table: dict[MessageQueue, int] = {}

    async def load(self) -> None:  # noqa: B027 - optional hook
        """Read persisted offsets (local stores only)."""

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        old = self.offset_table.get(mq)
        if old is None or not increase_only or offset > old:
            self.offset_table[mq] = offset

    async def read_offset(self, mq: MessageQueue, kind: ReadOffsetType) -> int:
        if kind in (ReadOffsetType.READ_FROM_MEMORY, ReadOffsetType.MEMORY_FIRST_THEN_STORE):
            off = self.offset_table.get(mq)
            if off is not None:
                return off
            if kind is ReadOffsetType.READ_FROM_MEMORY:
                return -1
        return await self._read_from_store(mq)

    @abstractmethod
    async def _read_from_store(self, mq: MessageQueue) -> int: ...

    @abstractmethod
    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None: ...

    @abstractmethod
    async def persist(self, mq: MessageQueue) -> None: ...

    def remove_offset(self, mq: MessageQueue) -> None:
        self.offset_table.pop(mq, None)

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]:
        return {mq: off for mq, off in self.offset_table.items() if not topic or mq.topic == topic}

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool) -> None:  # noqa: B027
        """Write one offset to the broker now (remote store only)."""


class RemoteBrokerOffsetStore(OffsetStore):
    def __init__(self, instance: ClientInstance, group: str) -> None:
        super().__init__()
        self.instance = instance
        self.group = group

    async def _broker_addr(self, mq: MessageQueue) -> str:
        found = self.instance.find_broker_address_in_subscribe(mq.broker_name, 0, True)
        if found is None:
            await self.instance.update_topic_route(mq.topic)
            found = self.instance.find_broker_address_in_subscribe(mq.broker_name, 0, False)
        if found is None:
            raise RemotingError(f"the broker {mq.broker_name} does not exist")
        return found[0]

    async def _read_from_store(self, mq: MessageQueue) -> int:
        try:
            addr = await self._broker_addr(mq)
            offset = await self.instance.api.query_consumer_offset(addr, self.group, mq, 5.0)
        except BrokerError:
            return -1  # e.g. QUERY_NOT_FOUND: this group has no offset for the queue yet
        except (RemotingError, ProtocolError) as exc:
            log.warning("offset.fetch_failed group=%s mq=%s error=%s", self.group, mq, exc)
            return -2
        self.update_offset(mq, offset, False)
        return offset

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool = True) -> None:
        addr = await self._broker_addr(mq)
        await self.instance.api.update_consumer_offset(addr, self.group, mq, offset, 5.0, oneway=oneway)

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        wanted = set(mqs)
        if not wanted:
            return
        unused = []
        for mq, offset in list(self.offset_table.items()):
            if mq in wanted:
                try:
                    await self.update_consume_offset_to_broker(mq, offset, True)
                except (RemotingError, BrokerError) as exc:
                    log.warning("offset.persist_failed group=%s mq=%s error=%s", self.group, mq, exc)
            else:
                unused.append(mq)
        for mq in unused:
            self.offset_table.pop(mq, None)

    async def persist(self, mq: MessageQueue) -> None:
        offset = self.offset_table.get(mq)
        if offset is None:
            return
        try:
            await self.update_consume_offset_to_broker(mq, offset, True)
        except (RemotingError, BrokerError) as exc:
            log.warning("offset.persist_failed group=%s mq=%s error=%s", self.group, mq, exc)


class LocalFileOffsetStore(OffsetStore):
    """Offsets in ``<dir>/<client id>/<group>/offsets.json``.

    The file is standard JSON: ``{"offsetTable": [{"brokerName":…, "queueId":…, "topic":…, "offset":…}, …]}``;
    Java's fastjson form (``{"offsetTable": {{"brokerName":…}: 12}}``) is read as well.
    """

    def __init__(
        self,
        client_id: str,
        group: str,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__()
        self.group = group
        if path is not None:
            self.path = Path(path)
        else:
            root = Path(base_dir) if base_dir is not None else DEFAULT_LOCAL_OFFSET_STORE_DIR
            self.path = root / client_id.replace(":", "_") / group / "offsets.json"

    async def load(self) -> None:
        table = self._read_file(self.path)
        if table is None:
            table = self._read_file(self.path.with_name(self.path.name + ".bak"))
        if table:
            self.offset_table.update(table)

    @staticmethod
    def _read_file(path: Path) -> dict[MessageQueue, int] | None:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("offset.load_failed path=%s error=%s", path, exc)
            return None
        if not raw.strip():
            return None
        try:
            obj: Any = fastjson.loads(raw)
            table = obj.get("offsetTable") if isinstance(obj, dict) else None
            out: dict[MessageQueue, int] = {}
            if isinstance(table, list):
                for e in table:
                    out[MessageQueue.from_json(e)] = int(e["offset"])
            elif isinstance(table, dict):
                for k, v in table.items():
                    out[fastjson.mq_from_key(k)] = int(v)
            return out
        except (ProtocolError, KeyError, TypeError, ValueError) as exc:
            log.warning("offset.load_failed path=%s error=%s", path, exc)
            return None

    async def _read_from_store(self, mq: MessageQueue) -> int:
        table = self._read_file(self.path)
        if table is None:
            return -1
        off = table.get(mq)
        if off is None:
            return -1
        self.update_offset(mq, off, False)
        return off

    def _write(self, table: dict[MessageQueue, int]) -> None:
        entries = [{**mq.to_json(), "offset": off} for mq, off in sorted(table.items())]
        text = json.dumps({"offsetTable": entries}, indent=1, sort_keys=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            try:
                self.path.with_name(self.path.name + ".bak").write_bytes(self.path.read_bytes())
            except OSError as exc:
                log.warning("offset.backup_failed path=%s error=%s", self.path, exc)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.path)

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        wanted = set(mqs)
        if not wanted:
            return
        # Like Java, persist_all writes the offsets of the queues being persisted (the ones this client consumes).
        try:
            self._write({mq: off for mq, off in self.offset_table.items() if mq in wanted})
        except OSError as exc:
            log.error("offset.persist_failed path=%s error=%s", self.path, exc)

    async def persist(self, mq: MessageQueue) -> None:
        """Merge one queue's offset into the file (Java reads the file, puts the entry, writes it back)."""
        offset = self.offset_table.get(mq)
        if offset is None:
            return
        table = self._read_file(self.path) or {}
        table[mq] = offset
        try:
            self._write(table)
        except OSError as exc:
            log.error("offset.persist_failed path=%s error=%s", self.path, exc)
