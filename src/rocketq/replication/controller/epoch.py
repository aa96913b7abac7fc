"""The broker's epoch file and the truncation point of a divergent tail (Java ``EpochFileCache``,
``CheckpointFile``; 5.1.x).

An entry says: from ``start_offset`` on, the commit log was written by the master of ``epoch``. Its end is the
next entry's start, and the last entry ends at the log's max offset. When an old master rejoins as a slave,
both sides' entries are compared from the newest epoch down: the first epoch both hold with the same start
offset is where they agree, up to the smaller of the two ends; the slave cuts its log there.

File (``<storePathRootDir>/epochFileCheckpoint``, and a ``.bak`` copy), text lines::

    <entry count>
    <CRC32 of the entry lines, & 0x7fffffff; 0 = not checked>
    <epoch>-<startOffset>        one per entry, oldest first
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

EPOCH_FILE_NAME = "epochFileCheckpoint"
#: the end of the last entry until the log's max offset is known (Java ``Long.MAX_VALUE``)
OPEN_END = (1 << 63) - 1


class EpochFileError(ValueError):
    """An epoch file that cannot be read: bad count, bad line, CRC mismatch."""


@dataclass(slots=True)
class EpochEntry:
    epoch: int
    start_offset: int
    end_offset: int = OPEN_END


class EpochCache:
    """The entries, oldest first; epochs and start offsets never go down."""

    def __init__(self, entries: list[EpochEntry] | None = None) -> None:
        self.entries: list[EpochEntry] = []
        for entry in entries or []:
            if not self.append(entry.epoch, entry.start_offset):
                raise EpochFileError(f"epoch entries out of order at {entry.epoch}-{entry.start_offset}")

    @property
    def last(self) -> EpochEntry | None:
        return self.entries[-1] if self.entries else None

    @property
    def last_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else 0

    def entry(self, epoch: int) -> EpochEntry | None:
        for e in self.entries:
            if e.epoch == epoch:
                return e
        return None

    def append(self, epoch: int, start_offset: int) -> bool:
        """Add an epoch that starts at ``start_offset``; False (nothing added) unless both grow (the offset may
        stay: a master elected without new writes since the last one)."""
        last = self.last
        if last is not None:
            if epoch <= last.epoch or start_offset < last.start_offset:
                return False
            last.end_offset = start_offset
        self.entries.append(EpochEntry(epoch, start_offset))
        return True

    def set_last_end(self, max_offset: int) -> None:
        """The last epoch runs up to the log's max offset (called before comparing)."""
        if self.entries:
            self.entries[-1].end_offset = max_offset

    def truncate_suffix(self, offset: int) -> None:
        """Forget what starts at or after ``offset`` (the log was cut there); the new last entry ends there."""
        self.entries = [e for e in self.entries if e.start_offset < offset]
        self.set_last_end(offset)

    def truncate_prefix(self, offset: int) -> None:
        """Forget the entries that end at or before ``offset`` (old log files deleted); keep the last one."""
        keep = [e for e in self.entries[:-1] if e.end_offset > offset]
        self.entries = keep + self.entries[-1:]

    def consistent_point(self, other: EpochCache) -> int | None:
        """Where this log and ``other`` stop agreeing: the newest epoch both hold with the same start offset, up
        to the smaller end. None when they share no such epoch (the slave cannot follow without a full copy).
        Both caches must have their last end set to their max offset first (``set_last_end``)."""
        for local in reversed(self.entries):
            remote = other.entry(local.epoch)
            if remote is not None and remote.start_offset == local.start_offset:
                return min(local.end_offset, remote.end_offset)
        return None


def truncation_offset(local: EpochCache, local_max: int, master: EpochCache, master_max: int) -> int | None:
    """The offset a slave's log is cut to before it follows ``master``: the consistent point of both caches
    (each ending at its max offset). An empty slave log has nothing to cut: 0."""
    if not local.entries and local_max == 0:
        return 0
    mine = EpochCache([EpochEntry(e.epoch, e.start_offset) for e in local.entries])
    theirs = EpochCache([EpochEntry(e.epoch, e.start_offset) for e in master.entries])
    mine.set_last_end(local_max)
    theirs.set_last_end(master_max)
    return mine.consistent_point(theirs)


def epoch_cache_body(
    cluster_name: str, broker_name: str, broker_id: int, cache: EpochCache, max_offset: int
) -> bytes:
    """The body a broker answers GET_BROKER_EPOCH_CACHE (1007) with (Java ``EpochEntryCache``): its entries, the
    last one ending at ``max_offset``."""
    entries = [EpochEntry(e.epoch, e.start_offset, e.end_offset) for e in cache.entries]
    if entries:
        entries[-1].end_offset = max_offset
    return json.dumps({
        "clusterName": cluster_name, "brokerName": broker_name, "brokerId": broker_id,
        "epochList": [{"epoch": e.epoch, "startOffset": e.start_offset, "endOffset": e.end_offset} for e in entries],
        "maxOffset": max_offset,
    }, separators=(",", ":")).encode()  # fmt: skip


# ------------------------------------------------------------------------------------------- the file


def _crc(lines: str) -> int:
    return zlib.crc32(lines.encode()) & 0x7FFFFFFF


def encode_epoch_file(entries: list[EpochEntry]) -> str:
    lines = "".join(f"{e.epoch}-{e.start_offset}\n" for e in entries)
    return f"{len(entries)}\n{_crc(lines)}\n{lines}"


def decode_epoch_file(text: str) -> list[EpochEntry]:
    rows = text.splitlines()
    if len(rows) < 2:
        raise EpochFileError("epoch file shorter than its two header lines")
    try:
        count, crc = int(rows[0]), int(rows[1])
    except ValueError:
        raise EpochFileError("epoch file header is not two integers") from None
    body = [r for r in rows[2:] if r.strip()]
    if count != len(body):
        raise EpochFileError(f"epoch file says {count} entries and holds {len(body)}")
    if crc != 0 and crc != _crc("".join(f"{r}\n" for r in body)):
        raise EpochFileError("epoch file CRC does not match its entries")
    entries = []
    for row in body:
        epoch, sep, start = row.partition("-")
        try:
            if not sep:
                raise ValueError
            entries.append(EpochEntry(int(epoch), int(start)))
        except ValueError:
            raise EpochFileError(f"bad epoch file line {row!r}") from None
    return entries


class EpochFile:
    """``EpochCache`` kept in a file: written to a temporary file, synced, renamed; a ``.bak`` copy too, read
    when the main file is damaged."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / EPOCH_FILE_NAME
        self.backup = self.path.with_name(EPOCH_FILE_NAME + ".bak")

    def load(self) -> EpochCache:
        for path in (self.path, self.backup):
            if not path.exists():
                continue
            try:
                return EpochCache(decode_epoch_file(path.read_text()))
            except EpochFileError:
                continue
        if self.path.exists() or self.backup.exists():
            raise EpochFileError(f"{self.path}: neither the file nor its .bak can be read")
        return EpochCache()

    def save(self, cache: EpochCache) -> None:
        text = encode_epoch_file(cache.entries)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for path in (self.path, self.backup):
            _atomic_write(path, text)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
