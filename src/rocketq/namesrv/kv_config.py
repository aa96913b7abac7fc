"""Namespaced key/value configuration of the name server, persisted as one JSON file.

File format (Java's ``KVConfigSerializeWrapper``)::

    {"configTable": {"<namespace>": {"<key>": "<value>", ...}, ...}}

Every change rewrites the file atomically, the way Java's ``MixAll.string2File`` does: the new content goes
to ``<file>.tmp`` (flushed and fsynced), the current file is kept as ``<file>.bak``, then the temporary
file is renamed over ``<file>``. ``load`` falls back to the ``.bak`` copy when the main file is missing or
unreadable (a crash between the two renames leaves only the backup).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import orjson

log = logging.getLogger("rocketq.namesrv.kv_config")

NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class KVConfigManager:
    """``namespace → key → value`` table backed by ``path`` (None: in memory only)."""

    def __init__(self, path: Path | str | None) -> None:
        self.path = Path(path) if path is not None else None
        self._table: dict[str, dict[str, str]] = {}

    # ------------------------------------------------------------------------------------------- access

    def put(self, namespace: str, key: str, value: str) -> None:
        table = self._table.setdefault(namespace, {})
        prev = table.get(key)
        table[key] = value
        log.info("kv.put namespace=%s key=%s value=%s updated=%s", namespace, key, value, prev is not None)
        self.persist()

    def get(self, namespace: str, key: str) -> str | None:
        table = self._table.get(namespace)
        return table.get(key) if table is not None else None

    def delete(self, namespace: str, key: str) -> None:
        table = self._table.get(namespace)
        if table is not None:
            value = table.pop(key, None)
            log.info("kv.deleted namespace=%s key=%s value=%s", namespace, key, value)
        # Java persists even when nothing changed.
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
