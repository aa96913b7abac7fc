"""Where the controller's state survives a restart.

``MetadataStore`` is the seam: the service hands it every batch of events *before* applying them, and reads
the state back at start. ``FileMetadataStore`` is the single-controller one (a snapshot rewritten atomically
after every change: the state is a few tables, small). A replicated store (for example on etcd: a compare-and-
put of the snapshot under one key, or an append to a key prefix) implements the same two methods.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Protocol

from rocketq.replication.controller.state import ControllerState, Event

SNAPSHOT_NAME = "controller-state.json"


class MetadataStoreError(RuntimeError):
    """The state could not be read or written; the controller must not answer as if it had been."""


class MetadataStore(Protocol):
    def load(self) -> ControllerState:
        """The persisted state (empty at first start). Called once, before the controller serves."""
        ...

    async def commit(self, state: ControllerState, events: list[Event]) -> None:
        """Make ``events`` durable; ``state`` is the state they lead to (already applied to a copy). The
        controller answers only after this returns, and applies nothing when it raises."""
        ...


class MemoryMetadataStore:
    """No persistence (tests, and an embedded controller without a store path)."""

    def __init__(self) -> None:
        self.commits = 0

    def load(self) -> ControllerState:
        return ControllerState()

    async def commit(self, state: ControllerState, events: list[Event]) -> None:
        self.commits += 1


class FileMetadataStore:
    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / SNAPSHOT_NAME

    def load(self) -> ControllerState:
        if not self.path.exists():
            return ControllerState()
        try:
            return ControllerState.from_json(json.loads(self.path.read_text()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MetadataStoreError(f"{self.path}: cannot read the controller state: {exc}") from exc

    async def commit(self, state: ControllerState, events: list[Event]) -> None:
        text = json.dumps(state.to_json(), indent=1, sort_keys=True)
        await asyncio.to_thread(self._write, text)  # fsync off the loop

    def _write(self, text: str) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise MetadataStoreError(f"{self.path}: cannot write the controller state: {exc}") from exc
