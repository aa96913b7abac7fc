"""Entry checks of the broker's config files: what an entry must hold to be written and read back.

A config file is read by rocketq and may be read by Java tools, so every number in it must be an integer in
Java's range for its field (``int`` or ``long``) and every name a string. The same check runs on both sides
(``ConfigManager.check``): on save, an entry that fails it is left out of the file (and logged) so the
other entries are still written; on load, it names the file and the entry. Checking on save with the rule
used on load means a file rocketq wrote always loads again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rocketq.protocol.header_codec import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN

#: a field check: None when the value is good, else why not ("is 'x', not an integer")
Check = Callable[[Any], str | None]


@dataclass(frozen=True, slots=True)
class BadEntry:
    """One entry of a config file that cannot be written or read back: its key (as the file names it) and why."""

    key: str
    reason: str


def show(value: Any) -> str:
    """A short repr for a log line or an error (a poisoned value may be huge)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _int_check(lo: int, hi: int, java: str) -> Check:
    def check(value: Any) -> str | None:
        if type(value) is not int:  # bool is an int subclass; a float is what orjson makes of a huge number
            return f"is {show(value)}, not an integer"
        if not lo <= value <= hi:
            return f"is {show(value)}, outside Java's {java} range"
        return None

    return check


INT32: Check = _int_check(INT32_MIN, INT32_MAX, "int")
INT64: Check = _int_check(INT64_MIN, INT64_MAX, "long")


def STR(value: Any) -> str | None:
    return None if isinstance(value, str) else f"is {show(value)}, not a string"


def BOOL(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"is {show(value)}, not a boolean"


def FLOAT(value: Any) -> str | None:
    if type(value) not in (int, float) or not math.isfinite(value):
        return f"is {show(value)}, not a finite number"
    return None


def fields_error(obj: Any, spec: Mapping[str, Check], required: tuple[str, ...] = ()) -> str | None:
    """Why the JSON object ``obj`` does not match ``spec`` (field → check; absent fields take defaults)."""
    if not isinstance(obj, dict):
        return f"is {show(obj)}, not an object"
    for name in required:
        if name not in obj:
            return f"has no {name}"
    for name, check in spec.items():
        if name in obj:
            error = check(obj[name])
            if error is not None:
                return f"{name} {error}"
    return None


def int_key_error(key: Any, check: Check = INT32) -> str | None:
    """A map key that holds an integer in its text (a queue id or delay level: ``"3"``)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return check(key)
    if not isinstance(key, str) or not key.lstrip("-").isascii() or not key.lstrip("-").isdigit():
        return f"key {show(key)} is not an integer"
    error = check(int(key))
    return None if error is None else f"key {error}"


def prune_map(doc: dict[str, Any], table: str, entry_error: Callable[[str, Any], str | None]) -> list[BadEntry]:
    """Remove from ``doc[table]`` (a JSON object) every entry ``entry_error`` finds fault with; say which."""
    entries = doc.get(table)
    if entries is None:
        return []
    if not isinstance(entries, dict):
        del doc[table]
        return [BadEntry(table, f"is {show(entries)}, not an object")]
    bad: list[BadEntry] = []
    for key, value in list(entries.items()):
        error = f"key {show(key)} is not a string" if not isinstance(key, str) else entry_error(key, value)
        if error is not None:
            del entries[key]
            bad.append(BadEntry(str(key), error))
    return bad


def prune_list(doc: dict[str, Any], table: str, entry_error: Callable[[Any], str | None],
               name: Callable[[Any], str]) -> list[BadEntry]:  # fmt: skip
    """``prune_map`` for a JSON array: entries are named by ``name(entry)`` (a good entry's fields)."""
    entries = doc.get(table)
    if entries is None:
        return []
    if not isinstance(entries, list):
        del doc[table]
        return [BadEntry(table, f"is {show(entries)}, not an array")]
    bad: list[BadEntry] = []
    kept = []
    for i, entry in enumerate(entries):
        error = entry_error(entry)
        if error is None:
            kept.append(entry)
        else:
            bad.append(BadEntry(f"#{i} {name(entry)}", error))
    doc[table] = kept
    return bad


DATA_VERSION = {"timestamp": INT64, "counter": INT64}


def prune_data_version(doc: dict[str, Any]) -> list[BadEntry]:
    """The file's ``dataVersion`` (Java's DataVersion: two longs); a bad one is removed (a fresh one is used)."""
    if "dataVersion" not in doc:
        return []
    error = fields_error(doc["dataVersion"], DATA_VERSION)
    if error is None:
        return []
    del doc["dataVersion"]
    return [BadEntry("dataVersion", error)]
