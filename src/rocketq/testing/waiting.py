"""Waiting in tests for a condition that other tasks (servers on the same loop, their threads) make true."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path


async def until(predicate: Callable[[], bool], timeout: float = 30.0, step: float = 0.01) -> None:
    """Return once ``predicate()`` is true; ``TimeoutError`` after ``timeout`` seconds (generous: a loaded CI
    machine must never fail a test that is only slow)."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(step)


def store_files(root: Path, sub: str) -> list[tuple[str, bytes]]:
    """Every file under ``root/sub`` (a store's ``commitlog``, ``consumequeue`` or ``index``) with its bytes, by
    relative path; index files by position, since their names are creation times that differ between replicas."""
    base = root / sub
    out = [(str(p.relative_to(base)), p.read_bytes()) for p in sorted(base.rglob("*")) if p.is_file()]
    return [(f"#{i}", data) for i, (_, data) in enumerate(out)] if sub == "index" else out
