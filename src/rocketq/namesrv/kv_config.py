"""Namespaced key/value configuration of the name server, persisted as one JSON file.

File format (Java's ``KVConfigSerializeWrapper``)::

    {"configTable": {"<namespace>": {"<key>": "<value>", ...}, ...}}

Every change rewrites the file atomically, the way Java's ``MixAll.string2File`` does: the new content goes
to ``<file>.tmp`` (flushed and fsynced), the current file is kept as ``<file>.bak``, then the temporary
file is renamed over ``<file>``. ``load`` falls back to the ``.bak`` copy when the main file is missing or
unreadable (a crash between the two renames leaves only the backup).

The table is bounded (``kvConfigMaxBytes``, a rocketq key): Java keeps any number of entries of any size and
rewrites the whole file on every change, so one client could grow the name server's memory without end and
make each 100-byte request write megabytes. A put past the bound is refused and nothing changes; a delete or a
put that changes nothing does not rewrite the file (Java rewrites it anyway; the content would be the same).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import orjson

log = logging.getLogger("rocketq.namesrv.kv_config")

NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"

# Real tables hold a few order-topic entries of tens of bytes; 4 MiB is ~80,000 of them.
DEFAULT_KV_MAX_BYTES = 4 * 1024 * 1024
_LOGGED_VALUE_CHARS = 200


class KVConfigFull(ValueError):
    """A put would take the table past its byte bound; nothing was changed."""


def _entry_size(key: str, value: str) -> int:
    return len(key.encode()) + len(value.encode())


class KVConfigManager:
    """``namespace → key → value`` table backed by ``path`` (None: in memory only)."""

    def __init__(self, path: Path | str | None, *, max_bytes: int = DEFAULT_KV_MAX_BYTES) -> None:
        self.path = Path(path) if path is not None else None
        self.max_bytes = max_bytes  # live: UPDATE_NAMESRV_CONFIG may change it
        self._table: dict[str, dict[str, str]] = {}
        self._bytes = 0  # UTF-8 size of every namespace, key and value held

    @property
    def size_bytes(self) -> int:
        return self._bytes

    # ------------------------------------------------------------------------------------------- access

    def put(self, namespace: str, key: str, value: str) -> None:
        """Store ``value``; KVConfigFull when the table would pass ``max_bytes`` (then nothing changes)."""
        table = self._table.get(namespace)
        prev = table.get(key) if table is not None else None
        if prev == value:
            return
        grown = _entry_size(key, value) - (_entry_size(key, prev) if prev is not None else 0)
        if table is None:
            grown += len(namespace.encode())
        if self._bytes + grown > self.max_bytes:
            raise KVConfigFull(
                f"the KV config would pass kvConfigMaxBytes={self.max_bytes} (it holds {self._bytes} bytes; this "
                f"entry needs {grown} more): delete entries or raise kvConfigMaxBytes"
            )
        self._table.setdefault(namespace, {})[key] = value
        self._bytes += grown
        log.info(
            "kv.put namespace=%s key=%s value=%s updated=%s",
            namespace, key[:_LOGGED_VALUE_CHARS], value[:_LOGGED_VALUE_CHARS], prev is not None,
        )  # fmt: skip
        self.persist()

    def get(self, namespace: str, key: str) -> str | None:
        table = self._table.get(namespace)
        return table.get(key) if table is not None else None

    def delete(self, namespace: str, key: str) -> None:
        table = self._table.get(namespace)
        value = table.pop(key, None) if table is not None else None
        if value is None:
            return  # Java rewrites the file anyway; its content would not change
        self._bytes -= _entry_size(key, value)
        log.info(
            "kv.deleted namespace=%s key=%s value=%s",
            namespace, key[:_LOGGED_VALUE_CHARS], value[:_LOGGED_VALUE_CHARS],
        )  # fmt: skip
        self.persist()

    def list_namespace(self, namespace: str) -> dict[str, str] | None:
        """A copy of one namespace's table; None when the namespace was never created."""
        table = self._table.get(namespace)
        return dict(table) if table is not None else None

    def snapshot(self) -> dict[str, dict[str, str]]:
        return {ns: dict(t) for ns, t in self._table.items()}

    # -------------------------------------------------------------------------------------- persistence

    def load(self) -> None:
        """Read the file (or its ``.bak``); a missing file means an empty table."""
        if self.path is None:
            return
        for candidate in (self.path, _with_suffix(self.path, ".bak")):
            try:
                raw = candidate.read_bytes()
            except FileNotFoundError:
                continue
            table = _parse(raw)
            if table is None:
                log.warning("kv.load_failed path=%s (not a KV config file)", candidate)
                continue
            self._table = table
            self._bytes = _table_size(table)
            log.info("kv.loaded path=%s namespaces=%d", candidate, len(table))
            return

    def persist(self) -> None:
        if self.path is None:
            return
        content = orjson.dumps({"configTable": self._table}, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
        write_atomically(self.path, content)


def write_atomically(path: Path, content: bytes) -> None:
    """``path.tmp`` → fsync → keep the old file as ``path.bak`` → rename ``path.tmp`` over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _with_suffix(path, ".tmp")
    with open(tmp, "wb") as f:
        f.write(content)
        f.flush()
        os.fsync(f.fileno())
    if path.exists():
        os.replace(path, _with_suffix(path, ".bak"))
    os.replace(tmp, path)
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def _table_size(table: dict[str, dict[str, str]]) -> int:
    return sum(len(ns.encode()) + sum(_entry_size(k, v) for k, v in kv.items()) for ns, kv in table.items())


def _with_suffix(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _parse(raw: bytes) -> dict[str, dict[str, str]] | None:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    table = obj.get("configTable") or {}
    if not isinstance(table, dict):
        return None
    out: dict[str, dict[str, str]] = {}
    for ns, kv in table.items():
        if not isinstance(kv, dict):
            return None
        out[ns] = {k: v if isinstance(v, str) else orjson.dumps(v).decode() for k, v in kv.items() if v is not None}
    return out
