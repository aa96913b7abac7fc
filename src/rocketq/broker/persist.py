"""Atomic JSON config files, as RocketMQ's ``MixAll.string2File``: write ``.tmp``, keep ``.bak``, rename."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("rocketq.broker.persist")


def write_json_atomic(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if path.exists():
        bak = path.with_name(path.name + ".bak")
        try:
            os.replace(path, bak)
        except OSError:
            log.warning("persist.backup_failed path=%s", path)
    os.replace(tmp, path)


def read_json(path: Path) -> Any | None:
    """The file's JSON, falling back to ``.bak`` when the file is missing or damaged."""
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            return orjson.loads(candidate.read_bytes())
        except FileNotFoundError:
            continue
        except orjson.JSONDecodeError:
            log.error("persist.corrupt path=%s; trying the backup", candidate)
            continue
    return None
